#!/bin/sh
# `npm ci ARGS...` in the current folder (a Node.js server's, or a --dep's copy of it),
# skipped when node_modules is exactly what that command made last time: the same
# package-lock.json, Node.js, npm and arguments (a stamp npm ci's wipe removes), and
# `npm ls` finds every locked package installed at its locked version.
#
# Why not plain `npm ci`: it deletes node_modules and installs it again every time, 8-17 s
# on 2 cores, which every run, every test phase and every contract check of fastify and
# express paid for an identical folder. Anything that differs installs again with npm ci
# itself, so what runs is always what the committed lock file says.
set -eu
stamp=node_modules/.webbench-npm-ci
want="lock $(sha256sum package-lock.json | cut -d' ' -f1); node $(node --version); npm $(npm --version); args $*"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && npm ls --all "$@" >/dev/null 2>&1; then
  echo "node_modules is up to date (npm ci $*: $want)"
  exit 0
fi
npm ci "$@"
mkdir -p node_modules       # npm ci of a lock with no packages makes none
printf '%s\n' "$want" > "$stamp"
