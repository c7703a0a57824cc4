# The commands of the README:
#   make bench          set up whatever is missing, then run the default suite
#   make test           the everyday tests: the harness's own (unit, integration on real
#                       databases, the e2e runs that cover bench/ as the whole suite does
#                       within 2 points: docs/testing.md), every server's own unit tests,
#                       and the contract and fuzzing of the servers whose files changed
#                       (against BASE)
#   make test-all       everything: every server x engine x ORM, every generator, every
#                       proxy (what .ci/run runs)
#   make test-changed   the checks of the servers a change since BASE selects; a change to
#                       the harness selects everything (the pull-request check)
# Each installs what setup/packages.txt lists and this machine lacks (apt, as root or via
# sudo) and creates .venv from the pinned requirements (scripts/setup.sh). Nothing is
# built at set-up: each server, Traefik, oha and k6 are built when a run or a test first
# needs them, and a later `make bench` reuses what `make test` built (one build profile:
# the production one, servers/Cargo.toml). `make doctor` says what is there and what is
# missing, installing nothing.

# rustup puts cargo in ~/.cargo/bin and the Go tarball go in /usr/local/go/bin, which a
# fresh shell may not have on PATH. Empty them to see a machine without those toolchains:
#   make doctor GO_BIN=       (with no other go on PATH: gin is reported unavailable)
CARGO_BIN ?= $(HOME)/.cargo/bin
GO_BIN ?= /usr/local/go/bin
export PATH := $(if $(CARGO_BIN),$(CARGO_BIN):)$(PATH)$(if $(GO_BIN),:$(GO_BIN))
VENV := .venv
PYTHON := $(VENV)/bin/python
ARGS ?=
# what `make test` and `make test-changed` measure a change against (a commit, branch or
# tag); empty: the merge base with the default branch, else HEAD~1 (bench/cli/changed.py)
BASE ?=
# pytest-xdist workers of the parallel phase: two per CPU, at most 8. The tests mostly
# wait on servers, databases and signals: on 2 cores the parallel phase of `make test`
# took 277 s with 2 workers and 199 s with 4, both cores then busy (docs/testing.md)
TEST_WORKERS ?= $(shell n=$$(( $$(nproc) * 2 )); [ $$n -gt 8 ] && n=8; echo $$n)
export TEST_WORKERS

.PHONY: bench test test-all test-changed setup test-setup doctor system-deps test-deps \
        venv tools build server-tests tables list clean

bench: setup
	$(PYTHON) run_bench.py $(ARGS)

test: test-setup
	@bash scripts/test.sh quick $(BASE)

test-all: test-setup
	@bash scripts/test.sh all

test-changed: test-setup
	@bash scripts/test.sh changed $(BASE)

# Every server's own unit tests, as each manifest's [unit_tests] says (the Go, Node.js,
# PHP and Rust servers'; the Python servers' shared code is in pytest's testpaths).
server-tests: test-setup
	$(PYTHON) -m bench.cli.unit_tests --servers all

tables: venv
	$(PYTHON) create_markdown_tables.py

list: venv
	$(PYTHON) run_bench.py list

# Installs nothing; runs before the virtualenv exists (standard library only).
doctor:
	@$$(bash scripts/find_python.sh || echo python3) run_bench.py doctor

# every set-up step, timed (scripts/setup.sh)
setup:
	@bash scripts/setup.sh

test-setup:
	@bash scripts/setup.sh --for-tests

# The single steps, for when one is all you need.
system-deps:
	@bash scripts/install_system_deps.sh

test-deps:
	@bash scripts/install_system_deps.sh --for-tests

venv: $(VENV)/.installed

# oha (crates.io), k6 and h2spec (Go module proxy), installed now rather than on first use
tools:
	@bash scripts/install_oha.sh && bash scripts/install_k6.sh && bash scripts/install_h2spec.sh

# The harness's own virtualenv, made from the first Python >= 3.11 found
# (scripts/find_python.sh), once per requirements.txt on this machine: .venv links to it
# in the harness cache (scripts/make_venv.sh), so a fresh clone does not install it again.
# No server runs from it: each Python server gets a virtualenv of its own from its
# requirements.txt when a run or a test first needs it, cached by that file's content
# (bench/infra/envs.py), so two versions of a server's pins are measured each with its
# own packages.
$(VENV)/.installed: requirements.txt
	bash scripts/make_venv.sh
	touch $@

# Runs each available server's build step (e.g. cargo build --release) now rather than at
# the start of the first run that needs it; an up-to-date build costs a second.
build: venv
	$(PYTHON) run_bench.py build

clean:
	rm -rf $(VENV) .pytest_cache
