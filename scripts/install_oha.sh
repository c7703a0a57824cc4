#!/usr/bin/env bash
# Install oha 1.16.0, the open-model load generator (bench/load/oha.py), with cargo.
# Idempotent: does nothing when `oha --version` already says 1.16.0. --locked builds
# from the Cargo.lock oha publishes, so every machine gets the same dependency versions.
set -euo pipefail

OHA_VERSION=1.16.0
export PATH="$HOME/.cargo/bin:$PATH"   # where cargo install puts binaries

installed="$(oha --version 2>/dev/null || true)"   # e.g. "oha 1.16.0"
if [ "$installed" = "oha $OHA_VERSION" ]; then
    echo "oha $OHA_VERSION is already installed: $(command -v oha)"
    exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo is not installed; oha $OHA_VERSION is built with it" >&2
    echo "       (install Rust from https://rustup.rs, then run this script again)" >&2
    exit 1
fi

if [ -n "$installed" ]; then
    echo "found $installed at $(command -v oha); installing oha $OHA_VERSION instead"
else
    echo "oha is not installed; installing oha $OHA_VERSION (a release build: a few minutes)"
fi
# --force replaces another version cargo installed earlier
cargo install oha --version "$OHA_VERSION" --locked --force

installed="$(oha --version 2>/dev/null || true)"
if [ "$installed" != "oha $OHA_VERSION" ]; then
    echo "error: after the install \`oha --version\` says '${installed:-nothing}'," \
         "not 'oha $OHA_VERSION' (another oha earlier on PATH: $(command -v oha || echo none))" >&2
    exit 1
fi
echo "installed $installed: $(command -v oha)"
