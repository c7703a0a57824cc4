# The two commands of the README:
#   make bench   set up whatever is missing, then run the default suite
#   make test    set up whatever is missing, then run the test suite
# Both install system packages with apt (as root or via sudo), create .venv from the
# pinned requirements and build the servers that need building.

PYTHON_BOOTSTRAP ?= python3
# rustup installs cargo here, the Go tarball there; a fresh shell may not have them on PATH
export PATH := $(HOME)/.cargo/bin:$(PATH):/usr/local/go/bin
VENV := .venv
PYTHON := $(VENV)/bin/python
SERVER_REQUIREMENTS := $(wildcard servers/*/requirements.txt)
ARGS ?=
PYTEST_ARGS ?=

.PHONY: bench test setup system-deps test-deps venv tools build rust-tests tables list clean

bench: setup
	$(PYTHON) run_bench.py $(ARGS)

test: setup test-deps rust-tests
	$(PYTHON) -m pytest $(PYTEST_ARGS)

# The Rust servers' own unit tests: every folder under servers/ with a Cargo.toml (the
# shared crate _rscommon holds most of them). A target dir of its own in the harness
# cache: test builds use another profile than the release build of a run.
rust-tests: system-deps
	@for crate in servers/*/Cargo.toml; do \
	  dir=$$(dirname $$crate); echo "cargo test in $$dir"; \
	  (cd $$dir && cargo test --locked --quiet --target-dir $(HOME)/.cache/webbench/cargo-test) \
	    || exit 1; \
	done

tables: venv
	$(PYTHON) create_markdown_tables.py

list: venv
	$(PYTHON) run_bench.py list

setup: system-deps venv tools build

system-deps:
	@bash scripts/install_system_deps.sh

# the HTML report's test drives a real headless Chromium; the several-hosts test needs
# network namespaces (iproute2) and sshd
test-deps:
	@bash scripts/install_system_deps.sh --for-tests

venv: $(VENV)/.installed

# load generators from their registries: oha (crates.io) measures latency at a fixed
# request rate (--rate); wrk comes from the system packages
tools: system-deps
	@bash scripts/install_oha.sh

# One virtualenv for the harness and every Python server: pip resolves all pins
# together, so a conflict shows at install time, not in the middle of a run.
$(VENV)/.installed: requirements.txt $(SERVER_REQUIREMENTS)
	$(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PYTHON) -m pip install -q --disable-pip-version-check -r requirements.txt \
		$(addprefix -r ,$(SERVER_REQUIREMENTS))
	touch $@

# Runs each manifest's build step (e.g. cargo build --release); the harness repeats it at
# the start of every run, where an up-to-date build costs a second.
build: venv
	$(PYTHON) run_bench.py build

clean:
	rm -rf $(VENV) .pytest_cache
