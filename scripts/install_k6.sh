#!/usr/bin/env bash
# Install k6 v1.8.1 (Grafana k6, the third load generator: bench/load/k6.py) with
# `go install`, into the harness's tool folder ${XDG_CACHE_HOME:-~/.cache}/webbench/bin
# (GOBIN), where bench/load/k6.py and `run_bench.py doctor` look first. Idempotent: does
# nothing when that k6 already says v1.8.1.
#
# go.k6.io/k6's go.mod has no replace directive, so `go install module@version` builds
# it as published, with the versions its go.sum pins (checked against the checksum
# database like any module download). -trimpath: the binary does not depend on where the
# module cache is. Measured cold on 2 cores (empty module and build caches, nice 5, other
# builds sharing the cores): 143 s, downloads included; the binary is 71 MB.
set -euo pipefail

K6_VERSION=1.8.1
export PATH="$PATH:/usr/local/go/bin"     # where the Go tarball puts go (see the Makefile)
tools="${XDG_CACHE_HOME:-$HOME/.cache}/webbench/bin"
k6="$tools/k6"

installed="$("$k6" version 2>/dev/null | head -n 1 || true)"   # "k6 v1.8.1 (go1.26.8, ...)"
case "$installed" in
  "k6 v$K6_VERSION "*)
    echo "k6 $K6_VERSION is already installed: $k6"
    exit 0 ;;
esac

if ! command -v go >/dev/null 2>&1; then
    # not fatal: everything but --generator k6 works without it, and such a run is refused
    # before it starts (preflight); `run_bench.py doctor` lists it as missing
    echo "warning: go is not installed, so k6 $K6_VERSION (--generator k6) is not built;" \
         "install Go (README, Prerequisites) and run this script again" >&2
    exit 0
fi

mkdir -p "$tools"
echo "installing k6 $K6_VERSION into $tools (go install go.k6.io/k6@v$K6_VERSION: about 2.5 minutes cold)"
GOBIN="$tools" GOFLAGS=-buildvcs=false nice -n 5 go install -trimpath "go.k6.io/k6@v$K6_VERSION"

installed="$("$k6" version 2>/dev/null | head -n 1 || true)"
case "$installed" in
  "k6 v$K6_VERSION "*) echo "installed $installed: $k6" ;;
  *) echo "error: after the install \`$k6 version\` says '${installed:-nothing}'," \
          "not 'k6 v$K6_VERSION'" >&2
     exit 1 ;;
esac
