#!/usr/bin/env bash
# Install Docker Compose v2.40.3 (--db-mode docker's `docker compose`) into the harness's
# tool folder ${XDG_CACHE_HOME:-~/.cache}/webbench/bin, where bench.infra.containers.engine
# looks after docker's own plugin. Idempotent: does nothing when a compose v2 new enough
# answers already (docker's plugin, or the one built here).
#
# Built from its Go module, as k6 and h2spec are: Docker's download site is not a package
# registry, and Debian's docker-compose is v1 (1.29, Python, end of life), without the
# `up --wait` the harness needs. `go install module@version` refuses this module (its
# go.mod has exclude directives), so the module is downloaded through the Go module proxy
# (checked against the checksum database) and built in a copy with the versions its go.sum
# pins. Measured cold on 2 cores (empty module and build caches, other work sharing the
# cores): 400 s, downloads included; the binary is 60 MB.
set -euo pipefail

COMPOSE_VERSION=2.40.3
export PATH="$PATH:/usr/local/go/bin"     # where the Go tarball puts go (see the Makefile)
tools="${XDG_CACHE_HOME:-$HOME/.cache}/webbench/bin"
compose="$tools/docker-compose"

for have in "docker compose" "$compose"; do
    version="$($have version --short 2>/dev/null || true)"
    case "$version" in
      2.2[0-9].*|2.[3-9][0-9].*|v2.2[0-9].*|v2.[3-9][0-9].*|[3-9].*)
        echo "Docker Compose $version is already installed: $have"
        exit 0 ;;
    esac
done

if ! command -v go >/dev/null 2>&1; then
    echo "warning: go is not installed, so Docker Compose $COMPOSE_VERSION (--db-mode docker)" \
         "is not built; install Go (README, Prerequisites) and run this script again" >&2
    exit 0
fi

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "installing Docker Compose $COMPOSE_VERSION into $tools (built from its Go module:" \
     "about 7 minutes cold)"
module="github.com/docker/compose/v2@v$COMPOSE_VERSION"
dir="$(cd "$work" && go mod download -json "$module" \
       | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
mkdir -p "$tools"
(cd "$work/src" && GOFLAGS=-buildvcs=false nice -n 5 go build -trimpath \
    -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=v$COMPOSE_VERSION" \
    -o "$compose.new" ./cmd)
mv "$compose.new" "$compose"

installed="$("$compose" version --short 2>/dev/null || true)"
case "$installed" in
  "$COMPOSE_VERSION"|"v$COMPOSE_VERSION") echo "installed Docker Compose $installed: $compose" ;;
  *) echo "error: after the build \`$compose version --short\` says '${installed:-nothing}'," \
          "not $COMPOSE_VERSION" >&2
     exit 1 ;;
esac
