#!/usr/bin/env bash
# Install h2spec 2.2.1 (the HTTP/2 conformance suite: bench/verify/h2spec.py) into the
# harness's tool folder ${XDG_CACHE_HOME:-~/.cache}/webbench/bin. Idempotent: does
# nothing when that h2spec already says 2.2.1.
#
# Built from setup/h2spec/, a module whose go.mod and go.sum pin h2spec and every
# dependency: h2spec's last release (v2.2.1, 2018) has no go.mod of its own, so
# `go install ...@v2.2.1+incompatible` would take whatever versions of golang.org/x/net
# and the rest are newest on the day. -mod=readonly fails instead of changing the pins;
# -ldflags sets the version h2spec prints (its release builds set it the same way).
# Measured cold on 2 cores (empty module and build caches): about 60 s; the binary is 9 MB.
set -euo pipefail

H2SPEC_VERSION=2.2.1
export PATH="$PATH:/usr/local/go/bin"     # where the Go tarball puts go (see the Makefile)
here="$(cd "$(dirname "$0")/.." && pwd)"
tools="${XDG_CACHE_HOME:-$HOME/.cache}/webbench/bin"
h2spec="$tools/h2spec"

said() { "$h2spec" --version 2>/dev/null | head -n 1 || true; }   # "Version: 2.2.1 ((Unknown))"
case "$(said)" in
  "Version: $H2SPEC_VERSION "*) echo "h2spec $H2SPEC_VERSION is already installed: $h2spec"; exit 0 ;;
esac

if ! command -v go >/dev/null 2>&1; then
    # not fatal: only --protocol h2/h2c's verification needs it, and such a run is refused
    # before it starts (preflight); `run_bench.py doctor` lists it as missing
    echo "warning: go is not installed, so h2spec $H2SPEC_VERSION (HTTP/2 conformance) is" \
         "not built; install Go (README, Prerequisites) and run this script again" >&2
    exit 0
fi

mkdir -p "$tools"
echo "building h2spec $H2SPEC_VERSION into $tools (setup/h2spec's pinned module: about a minute cold)"
cd "$here/setup/h2spec"
GOFLAGS=-buildvcs=false nice -n 5 go build -mod=readonly -trimpath \
    -ldflags "-X main.VERSION=$H2SPEC_VERSION" -o "$h2spec" github.com/summerwind/h2spec/cmd/h2spec

case "$(said)" in
  "Version: $H2SPEC_VERSION "*) echo "installed h2spec $H2SPEC_VERSION: $h2spec" ;;
  *) echo "error: after the build \`$h2spec --version\` says '$(said)', not 'Version: $H2SPEC_VERSION'" >&2
     exit 1 ;;
esac
