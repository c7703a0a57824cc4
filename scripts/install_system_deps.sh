#!/usr/bin/env bash
# Installs the system packages the harness needs, only those that are missing:
# wrk (load), PostgreSQL and MariaDB servers (the harness starts its own throwaway
# instances from these binaries), nginx (the ceiling reference server and the reverse
# proxy of --behind nginx), util-linux's taskset (CPU placement), the headers mysqlclient
# (Django's MySQL driver) is built against, and the toolchains of the compiled servers
# (Rust, Go, Node.js).
# With --for-tests (make test): also Debian's Chromium and its driver, for the test that
# opens report.html in a real headless browser, and iproute2 and openssh-server, for the
# test that builds its "machines" as network namespaces with an sshd each.
set -euo pipefail

packages=(wrk postgresql mariadb-server mariadb-client default-libmysqlclient-dev
          pkg-config build-essential python3-venv ca-certificates curl)
# make test: the several-hosts test builds its "machines" as network namespaces (iproute2)
# with an sshd each (openssh-server; the package's own service is not needed)
if [[ "${1:-}" == "--with-browser" ]]; then
  packages+=(iproute2 openssh-server)
fi
if [[ "${1:-}" == "--with-browser" ]]; then
  packages+=(chromium chromium-driver)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nginx: Debian 12's smallest build (nginx-light) where it exists, else the distribution's
if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
  if apt-cache show nginx-light >/dev/null 2>&1; then missing+=(nginx-light); else missing+=(nginx); fi
fi
command -v taskset >/dev/null || missing+=(util-linux)
# a Python that has venv+ensurepip already (pyenv, a custom build) needs no python3-venv
if python3 -c 'import ensurepip, venv' 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
fi
# Go and Node.js servers: the distribution's toolchains when none is installed (a newer
# Go toolchain named by a server's go.mod is then fetched by `go` from the Go proxy).
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || missing+=(golang-go)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))

if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "missing system packages: ${missing[*]}" >&2
    echo "install them as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "missing system packages: ${missing[*]} (no apt-get here: install them with your package manager)" >&2
    exit 1
  fi
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null && [[ ! -x "$HOME/.cargo/bin/cargo" ]]; then
  echo "installing a Rust toolchain with rustup (the distribution's rustc is too old for actix-web 4)"
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
fi
