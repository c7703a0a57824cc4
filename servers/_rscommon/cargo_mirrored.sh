#!/bin/sh
# usage (in a Rust server's folder, or a --dep's copy of it):
#     sh cargo_mirrored.sh MIRROR CARGO-ARGS...
# Runs `cargo CARGO-ARGS...` on a mirror of this Cargo workspace (the parent folder's
# Cargo.toml and Cargo.lock, and each sibling folder with a Cargo.toml: its members) kept
# at MIRROR, a path that does not change between checkouts.
#
# Why: cargo knows a workspace crate by its path and judges it fresh by its files' mtimes.
# A new clone (every CI run) has a new path and new mtimes, so the workspace's six servers
# were compiled again with fat LTO, 255 s on 2 cores, though nothing in them had changed.
# The mirror copies only the files whose bytes differ (and removes the ones gone), so an
# unchanged file keeps the mtime cargo saw last time, and a changed one is rebuilt as
# always. flock serialises two builds (or a build and `cargo test`) over one mirror.
set -eu
[ $# -ge 2 ] || { echo "usage: sh $0 MIRROR CARGO-ARGS..." >&2; exit 2; }
mirror=$1
shift
# it deletes in MIRROR what the workspace does not have: only ever in a folder of its own
case "$mirror" in
  /?*/?*) ;;
  *) echo "MIRROR must be an absolute path two folders deep at least, not '$mirror'" >&2; exit 2 ;;
esac
marker="$mirror/.webbench-cargo-mirror"
if [ -d "$mirror" ] && [ -n "$(ls -A "$mirror")" ] && [ ! -f "$marker" ]; then
  echo "$mirror is not empty and is not a mirror this script made: refusing to use it" >&2
  exit 2
fi
if [ -z "${WEBBENCH_MIRROR_LOCKED:-}" ]; then
  mkdir -p "$mirror"
  touch "$marker"
  WEBBENCH_MIRROR_LOCKED=1 exec flock "$mirror/.lock" sh "$0" "$mirror" "$@"
fi
member=$(basename "$PWD")
source_root=$(cd .. && pwd -P)
[ -f "$source_root/Cargo.toml" ] || { echo "no Cargo workspace at $source_root" >&2; exit 2; }

same_or_copy() {              # same_or_copy SOURCE DEST: copy only when the bytes differ
  if ! cmp -s "$1" "$2"; then
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2"
  fi
}

same_or_copy "$source_root/Cargo.toml" "$mirror/Cargo.toml"
same_or_copy "$source_root/Cargo.lock" "$mirror/Cargo.lock"
members=""
for folder in "$source_root"/*/; do
  name=$(basename "$folder")
  [ -f "$folder/Cargo.toml" ] || continue
  members="$members $name"
  # every file of the member but a target folder of its own (never part of the build)
  (cd "$folder" && find . -path ./target -prune -o -type f -print) | while IFS= read -r f; do
    same_or_copy "$folder/$f" "$mirror/$name/$f"
  done
  # what the checkout no longer has, the mirror must not compile
  (cd "$mirror/$name" && find . -type f) | while IFS= read -r f; do
    [ -e "$folder/$f" ] || rm -f "$mirror/$name/$f"
  done
done
for folder in "$mirror"/*/; do                 # a member the workspace dropped
  name=$(basename "$folder")
  case " $members " in *" $name "*) ;; *) rm -rf "$mirror/$name" ;; esac
done
cd "$mirror/$member"
exec cargo "$@"
