"""The set-up's one list (setup/packages.txt), what a set-up would install, toolchain
checks and server availability: on the real list and manifests, with fake probes."""
import re
import subprocess
from pathlib import Path

import pytest

from bench.core import manifest, plan as planning
from bench.core.settings import SelectionError, Settings
from bench.setup import doctor, packages, plan, probe, toolchains

REPO = Path(__file__).resolve().parents[2]
ROWS = packages.load()
LISTED = packages.by_tool(ROWS)

# what the harness and the suite run, by name: each must be on the list for a purpose
# that `make test` installs (or checks, for a toolchain a user brings)
USED = {"wrk": "run", "oha": "run", "nginx": "run", "taskset": "run", "ss": "run", "postgres": "run",
        "mariadbd": "run", "chromium": "tests", "chromedriver": "tests", "sshd": "tests",
        "ip": "tests", "cargo": "toolchain", "go": "toolchain", "node": "toolchain",
        "npm": "toolchain", "python3": "toolchain"}
# which(...) names in the code that are not the project's to install: Docker's engine
# (the docker-mode tests say why they skip), the set-up's own apt-cache, a shell, a name
# made up to be missing, and an alternative name of a listed package's program
NOT_INSTALLED = {"docker", "apt-cache", "sh", "webbench-no-such-tool", "chromium-browser"}


def found(**versions):
    """A probe that finds exactly these tools, at these versions."""
    def find(tool):
        if tool in versions:
            return probe.Found(tool, f"/fake/{tool}", versions[tool])
        return probe.Found(tool, None, None)
    return find


def test_every_tool_the_harness_and_the_suite_use_is_on_the_list():
    for tool, purpose in USED.items():
        assert tool in LISTED, f"{tool} is used but setup/packages.txt does not list it"
        assert LISTED[tool].purpose == purpose, tool


def test_every_program_the_code_looks_up_is_on_the_list():
    looked_up = set()
    for folder in ("bench", "tests", "servers", "proxies"):
        for path in (REPO / folder).rglob("*.py"):
            looked_up |= set(re.findall(r"which\(\s*[\"']([\w.-]+)[\"']", path.read_text()))
    assert looked_up - NOT_INSTALLED - set(LISTED) == set()


def test_every_manifest_toolchain_and_required_program_is_on_the_list():
    specs = manifest.discover()
    for spec in specs.values():
        for tool in spec.requires:
            assert tool in LISTED, f"{spec.id} requires {tool}, which is not listed"
        if spec.toolchain and spec.toolchain.command != "python":   # the harness's own
            assert LISTED[spec.toolchain.command].purpose == "toolchain", spec.id
    for proxy in (REPO / "proxies").glob("*/proxy.toml"):
        for tool in re.findall(r'"([\w.-]+)"', (re.search(r"requires\s*=\s*\[(.*?)\]",
                                                          proxy.read_text(), re.S)
                                                or re.search("()", "")).group(1)):
            assert tool in LISTED, f"{proxy} requires {tool}, which is not listed"


def test_a_machine_with_nothing_gets_every_apt_package_of_its_purposes():
    specs = manifest.discover()
    nothing = found()
    candidate = lambda package: "99.0"                                     # noqa: E731
    for_run = plan.make_plan(("run",), ROWS, specs, find=nothing, candidate=candidate)
    for_tests = plan.make_plan(("run", "tests"), ROWS, specs, find=nothing,
                               candidate=candidate)
    # iproute2 is both: ss reads socket memory in every run, ip builds the test hosts
    test_only = {"chromium", "chromium-driver", "openssh-server"}
    assert test_only <= set(for_tests.install)
    assert not test_only & set(for_run.install)
    assert {"wrk", "postgresql", "mariadb-server", "nginx-light", "util-linux", "iproute2"} <= \
        set(for_run.install)
    # oha is cargo's, a Rust toolchain the user's: neither goes to apt
    assert "oha@1.16.0" not in for_tests.install and "cargo" not in for_tests.install
    assert any(note.startswith("cargo is not installed") for note in for_tests.notes)


def test_a_distribution_toolchain_too_old_for_the_manifests_is_not_installed():
    specs = manifest.discover()
    debian12 = {"golang-go": "1.19", "nodejs": "18.20.4", "npm": "9.2.0"}
    setup = plan.make_plan(("run",), ROWS, specs, find=found(),
                           candidate=lambda p: debian12.get(p, "1.0"))
    assert "golang-go" not in setup.install and "nodejs" not in setup.install
    notes = " ".join(setup.notes)
    assert "golang-go is 1.19 (needs >= 1.21): fasthttp, gin will be unavailable" in notes
    assert "nodejs is 18.20.4 (needs >= 20): express, fastify will be unavailable" in notes
    # Ubuntu 24.04's Go 1.22 fetches the toolchain go.mod names: good enough
    ubuntu = plan.make_plan(("run",), ROWS, specs, find=found(),
                            candidate=lambda p: {"golang-go": "1.22"}.get(p, "1.0"))
    assert "golang-go" in ubuntu.install


def test_the_first_package_the_distribution_has_is_chosen():
    assert plan.choose(("nginx-light", "nginx"), lambda p: p == "nginx") == "nginx"
    assert plan.choose(("nginx-light", "nginx"), lambda p: True) == "nginx-light"
    assert plan.choose(("nginx-light", "nginx"), lambda p: False) == "nginx-light"


def test_the_list_refuses_what_it_cannot_mean():
    with pytest.raises(packages.PackagesError, match="'for' must be one of"):
        packages.parse("wrk  bench  apt  wrk  -  load")
    with pytest.raises(packages.PackagesError, match="listed twice: wrk"):
        packages.parse("wrk run apt wrk - a\nwrk tests apt wrk - b")
    with pytest.raises(packages.PackagesError, match="expected tool, for"):
        packages.parse("wrk run apt")


def test_the_install_script_refuses_a_flag_it_does_not_know():
    # the Makefile once passed --for-tests to a script that only knew --with-browser, and
    # the tests' packages were silently never installed
    for script in ("install_system_deps.sh", "setup.sh"):
        done = subprocess.run(["bash", str(REPO / "scripts" / script), "--with-browser"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "usage" in done.stderr, script
    flags = set(re.findall(r"(?:install_system_deps|setup)\.sh(?: \"?\$\{?\w*\}?\"?)? "
                           r"(--[\w-]+)", (REPO / "Makefile").read_text()))
    assert flags == {"--for-tests"}


def test_versions_compare_as_numbers():
    assert probe.at_least("1.26.8", "1.26") and probe.at_least("20.20.2", "20")
    assert not probe.at_least("1.9", "1.26") and not probe.at_least(None, "1")
    assert probe.at_least(None, None)
    assert probe.VERSION.search("go version go1.26.8 linux/amd64").group(1) == "1.26.8"
    assert probe.VERSION.search("OpenSSH_9.2p1 Debian-2").group(1) == "9.2"


def test_a_server_whose_toolchain_is_missing_or_too_old_is_unavailable_with_the_reason():
    specs = manifest.discover()
    gin = {"gin": specs["gin"]}
    missing = toolchains.unavailable(gin, found())["gin"]
    assert missing.startswith("go is not installed (not on PATH): gin needs go >= 1.26")
    old = toolchains.unavailable(gin, found(go="1.19.8"))["gin"]
    assert "go 1.19.8 at /fake/go is too old (from 1.21 on it would fetch 1.26 itself)" in old
    assert toolchains.unavailable(gin, found(go="1.22.2")) == {}
    assert toolchains.unavailable(gin, found(go="1.26.8")) == {}
    nginx = toolchains.unavailable({"nginx": specs["nginx"]}, found())["nginx"]
    assert nginx.startswith("nginx not installed")


def test_all_servers_leaves_an_unavailable_one_out_and_naming_it_is_refused():
    specs = manifest.discover()
    why = {"gin": "go is not installed"}
    cases = planning.plan(Settings(tests=["plain"]), specs, unavailable=why)
    servers = {c.variant.server.id for c in cases}
    assert "gin" not in servers and {"actix-web", "sanic", "nginx"} <= servers
    with pytest.raises(SelectionError, match="gin is unavailable on this machine: go is not"):
        planning.plan(Settings(servers=["gin", "sanic"], tests=["plain"]), specs,
                      unavailable=why)
    # the ceiling is left out too when its program is missing
    no_nginx = planning.plan(Settings(tests=["plain"]), specs, unavailable={"nginx": "x"})
    assert "nginx" not in {c.variant.server.id for c in no_nginx}


def test_doctor_says_what_is_missing_and_what_setup_would_do(capsys, monkeypatch):
    monkeypatch.setattr(plan, "apt_candidate", lambda p: "99.0")
    everything = {**{r.tool: "99.0" for r in ROWS}, "python": "3.11.7"}
    assert doctor.main([], find=found(**everything)) == 0
    assert capsys.readouterr().out.rstrip().endswith("all OK")
    no_go = found(**{t: v for t, v in everything.items() if t != "go"})
    assert doctor.main([], find=no_go) == 1
    out = capsys.readouterr().out
    assert re.search(r"^go\s+-\s+>= 1.21\s+toolchain\s+missing", out, re.M)
    assert re.search(r"^gin\s+go >= 1.26\s+unavailable\s+go is not installed", out, re.M)
    assert "apt-get install golang-go" in out
    # a proxy built from source (proxies/traefik) is checked the same way
    assert re.search(r"^traefik\s+go >= 1.25\s+unavailable\s+go is not installed", out, re.M)
    assert out.rstrip().endswith("not OK: go; servers unavailable: fasthttp, gin; "
                                 "proxies unavailable: traefik")


def test_every_rust_server_folder_is_a_member_of_the_one_cargo_workspace():
    import tomllib
    workspace = tomllib.loads((REPO / "servers" / "Cargo.toml").read_text())["workspace"]
    crates = {p.parent.name for p in (REPO / "servers").glob("*/Cargo.toml")}
    assert crates == set(workspace["members"]), \
        "a Rust server folder must be listed in servers/Cargo.toml's members"
    assert not list((REPO / "servers").glob("*/Cargo.lock")), "one lock: servers/Cargo.lock"
