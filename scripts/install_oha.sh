#!/usr/bin/env bash
# Install oha 1.16.0, the open-model load generator (bench/load/oha.py), with cargo.
# Idempotent: does nothing when `oha --version` already says 1.16.0, whichever TLS
# back-end it was built with (see below). --locked builds from the Cargo.lock oha
# publishes, so every machine gets the same dependency versions.
set -euo pipefail

OHA_VERSION=1.16.0
export PATH="$HOME/.cargo/bin:$PATH"   # where cargo install puts binaries
# oha is built with its own release profile: a CARGO_PROFILE_RELEASE_* a user set for the
# servers' builds must not reach the oha every later benchmark measures with
unset $(compgen -e | grep '^CARGO_PROFILE_' || true)

installed="$(oha --version 2>/dev/null || true)"   # e.g. "oha 1.16.0"
if [ "$installed" = "oha $OHA_VERSION" ]; then
    # Kept as it is even if it was built with oha's default features (rustls): the TLS
    # back-end is never used for the harness's plain http:// URLs, so both builds
    # behave the same and rebuilding would only cost minutes.
    echo "oha $OHA_VERSION is already installed: $(command -v oha)"
    exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
    # not fatal: everything but --rate works without oha, and a --rate run is refused
    # before it starts (preflight); `run_bench.py doctor` lists it as missing
    echo "warning: cargo is not installed, so oha $OHA_VERSION (--rate) is not built;" \
         "install Rust from https://rustup.rs and run this script again" >&2
    exit 0
fi

# Features. oha's default is "rustls", whose rustls brings aws-lc-rs: a large C build
# (aws-lc-sys) on top of oha's own ~210 crates. The harness only sends plain http://
# HTTP/1.1 requests, so TLS is never used, but oha 1.16.0 does not compile without a
# TLS back-end (--no-default-features alone fails in src/client.rs). "native-tls"
# links the system's OpenSSL instead (libssl-dev, which default-libmysqlclient-dev in
# setup/packages.txt already brings on Debian/Ubuntu): nothing big to compile. Every
# flag bench/load/oha.py passes works the same. Measured cold on 2 cores (crates
# downloaded, another build sharing the cores): 4 min 09 s with native-tls, against
# 8 min 59 s for the default features. Without OpenSSL's headers, the default build.
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists openssl 2>/dev/null; then
    features=(--no-default-features --features native-tls)
    how="with the system OpenSSL (native-tls), a release build: about 4 minutes"
else
    features=()
    how="with rustls (oha's default; no OpenSSL headers found by pkg-config), a release build: about 9 minutes"
fi

if [ -n "$installed" ]; then
    echo "found $installed at $(command -v oha); installing oha $OHA_VERSION instead ($how)"
else
    echo "oha is not installed; installing oha $OHA_VERSION ($how)"
fi
# --force replaces another version cargo installed earlier
if ! cargo install oha --version "$OHA_VERSION" --locked --force ${features[@]+"${features[@]}"}; then
    if [ ${#features[@]} -eq 0 ]; then
        exit 1
    fi
    echo "the native-tls build failed; building oha $OHA_VERSION with its default features" >&2
    cargo install oha --version "$OHA_VERSION" --locked --force
fi

installed="$(oha --version 2>/dev/null || true)"
if [ "$installed" != "oha $OHA_VERSION" ]; then
    echo "error: after the install \`oha --version\` says '${installed:-nothing}'," \
         "not 'oha $OHA_VERSION' (another oha earlier on PATH: $(command -v oha || echo none))" >&2
    exit 1
fi
echo "installed $installed: $(command -v oha)"
