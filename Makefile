# The two commands of the README:
#   make bench   set up whatever is missing, then run the default suite
#   make test    set up whatever is missing, then run the test suite
# Both install what setup/packages.txt lists and this machine lacks (apt, as root or via
# sudo), create .venv from the pinned requirements, build oha and the servers, and print
# how long each set-up step took (scripts/setup.sh). `make doctor` says what is there
# and what is missing, installing nothing.

# rustup puts cargo in ~/.cargo/bin and the Go tarball go in /usr/local/go/bin, which a
# fresh shell may not have on PATH. Empty them to see a machine without those toolchains:
#   make doctor GO_BIN=       (with no other go on PATH: gin is reported unavailable)
CARGO_BIN ?= $(HOME)/.cargo/bin
GO_BIN ?= /usr/local/go/bin
export PATH := $(if $(CARGO_BIN),$(CARGO_BIN):)$(PATH)$(if $(GO_BIN),:$(GO_BIN))
VENV := .venv
PYTHON := $(VENV)/bin/python
SERVER_REQUIREMENTS := $(wildcard servers/*/requirements.txt)
ARGS ?=
PYTEST_ARGS ?=

.PHONY: bench test setup test-setup doctor system-deps test-deps venv tools build \
        rust-tests server-tests tables list clean

bench: setup
	$(PYTHON) run_bench.py $(ARGS)

test: test-setup rust-tests server-tests
	$(PYTHON) -m pytest $(PYTEST_ARGS)

# The tests check what the servers answer, not how fast: `make test` builds the Rust
# servers without fat LTO and with 16 codegen units (cargo reads these variables over
# servers/Cargo.toml's release profile), which compiles them in parallel instead of one
# single-threaded LTO step per binary. Exported for the whole of `make test`, so the
# e2e tests' own `run_bench.py` builds see the same profile and find the build up to
# date. A later `make bench` or `run_bench.py run` has no such variables: cargo sees
# another profile and rebuilds in the production one (servers/Cargo.toml). A run made
# with them set records them (environment.build_env in the results).
test test-setup: export CARGO_PROFILE_RELEASE_LTO = off
test test-setup: export CARGO_PROFILE_RELEASE_CODEGEN_UNITS = 16

# The Go, Node.js and PHP servers' own unit tests (handlers with a fake store: n parsing,
# the fortunes template's escaping, the cache; servers/_gocommon holds the Go servers'
# shared code and the route cases both run), with the toolchains set-up checked.
# The Python servers' shared code is tested by pytest itself (servers/_pycommon is
# in pytest.ini's testpaths); the Node.js servers' (servers/_jscommon) by each Node.js
# server's npm test, with its HTTP-level tests run through each server's app.
server-tests: test-setup
	@start=$$(date +%s); (cd servers/_gocommon && go test -mod=readonly -trimpath -count=1 ./...) \
	  && (cd servers/gin && go test -mod=readonly -trimpath -count=1 ./...) \
	  && (cd servers/fasthttp && go test -mod=readonly -trimpath -count=1 ./...) \
	  && (cd servers/fastify && npm test --silent) \
	  && (cd servers/express && npm test --silent) \
	  && php servers/php-fpm/tests/run.php \
	  && echo "Go, Node.js and PHP server tests: $$(( $$(date +%s) - start )) s"

# The Rust servers' own unit tests (the shared crate _rscommon holds most of them), the
# whole workspace (servers/Cargo.toml) in one cargo run. In the servers' target dir, but
# in the dev profile (target/debug): nothing of the release build can be reused anyway,
# because cargo builds every dependency of a test with panic = "unwind" and the release
# profile says "abort". Measured on 2 cores after the release builds: --release
# recompiled 181 of 215 crates (with fat LTO) in 103 s; the dev profile compiles all 215
# in about 60 s (debug = "line-tables-only", servers/Cargo.toml).
rust-tests: test-setup
	@start=$$(date +%s); cd servers && cargo test --locked --quiet --workspace \
	  --target-dir $(HOME)/.cache/webbench/cargo-target \
	  && echo "Rust unit tests: $$(( $$(date +%s) - start )) s"

tables: venv
	$(PYTHON) create_markdown_tables.py

list: venv
	$(PYTHON) run_bench.py list

# Installs nothing; runs before the virtualenv exists (standard library only).
doctor:
	@$$(bash scripts/find_python.sh || echo python3) run_bench.py doctor

# every set-up step, timed, with downloads overlapping builds (scripts/setup.sh)
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

# oha (crates.io) measures latency at a fixed request rate (--rate)
tools:
	@bash scripts/install_oha.sh

# One virtualenv for the harness and every Python server: pip resolves all pins
# together, so a conflict shows at install time, not in the middle of a run. It is made
# from the first Python >= 3.11 found (scripts/find_python.sh).
$(VENV)/.installed: requirements.txt $(SERVER_REQUIREMENTS)
	python=$$(bash scripts/find_python.sh) || { echo "no Python >= 3.11: run make setup" >&2; exit 1; }; \
	  "$$python" -m venv $(VENV)
	$(PYTHON) -m pip install -q --disable-pip-version-check -r requirements.txt \
		$(addprefix -r ,$(SERVER_REQUIREMENTS))
	touch $@

# Runs each available server's build step (e.g. cargo build --release); the harness
# repeats it at the start of every run, where an up-to-date build costs a second.
build: venv
	$(PYTHON) run_bench.py build

clean:
	rm -rf $(VENV) .pytest_cache
