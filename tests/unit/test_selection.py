"""Which servers' checks a change selects (bench/core/selection.py), on paths alone, and
on this repository's own servers and shared code (bench.infra.checkout.shared_code)."""
import pytest

from bench.core import manifest
from bench.core.selection import select
from bench.infra.checkout import shared_code

SHARED = {"gin": {"_gocommon"}, "fasthttp": {"_gocommon"}, "fastify": {"_jscommon"},
          "express": {"_jscommon"}, "axum": {"_rscommon", "Cargo.toml", "Cargo.lock"},
          "actix-web": {"_rscommon", "_rsactix", "Cargo.toml", "Cargo.lock"},
          "sanic": {"_pycommon"}, "vertx": set()}


def test_a_servers_own_folder_selects_it_alone():
    chosen = select(["servers/gin/main.go"], SHARED)
    assert chosen.servers == {"gin": "servers/gin changed"} and not chosen.everything
    assert chosen.line() == "selected servers: gin (servers/gin changed)"


@pytest.mark.parametrize("path, expected", [
    ("servers/_gocommon/reply.go", {"gin", "fasthttp"}),
    ("servers/_jscommon/db.js", {"fastify", "express"}),
    ("servers/_rsactix/src/lib.rs", {"actix-web"}),
    ("servers/_rscommon/src/suite.rs", {"actix-web", "axum"}),
    ("servers/Cargo.lock", {"actix-web", "axum"}),
    ("servers/_pycommon/benchcommon/db.py", {"sanic"}),
])
def test_shared_code_selects_the_servers_that_use_it(path, expected):
    chosen = select([path], SHARED)
    assert set(chosen.servers) == expected
    assert all("changed" in why and path.split("/")[1] in why for why in chosen.servers.values())


@pytest.mark.parametrize("path", ["bench/core/plan.py", "tests/conftest.py", "setup/packages.txt",
                                  "scripts/setup.sh", "Makefile", "wrk_scripts/get_user.lua",
                                  "k6_scripts/common.js", "docs/openapi.yaml", "run_bench.py"])
def test_a_harness_change_selects_everything_under_the_full_rule_only(path):
    full = select([path, "servers/gin/main.go"], SHARED, "full")
    assert full.everything and full.ids(list(SHARED)) == sorted(SHARED)
    assert full.line().startswith("selected servers: every server (the harness changed: ")
    servers_only = select([path, "servers/gin/main.go"], SHARED, "servers")
    assert not servers_only.everything and list(servers_only.servers) == ["gin"]


def test_documentation_selects_nothing():
    chosen = select(["README.md", "docs/testing.md", "docs/images/a.png", "servers/README.md",
                     "servers/gin/README.md"], SHARED)
    assert not chosen.everything and chosen.servers == {}
    assert chosen.line() == "selected servers: none (no server's files changed)"


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown rule"):
        select([], SHARED, "some")


def test_this_repositorys_go_common_code_selects_gin_and_fasthttp_only():
    shared = {sid: {p.name for p in shared_code(spec)}
              for sid, spec in manifest.discover().items()}
    assert set(select(["servers/_gocommon/serve.go"], shared).servers) == {"gin", "fasthttp"}
    assert set(select(["servers/gin/handlers.go"], shared).servers) == {"gin"}
    rust = {sid for sid, spec in manifest.discover().items() if spec.language == "rust"}
    assert set(select(["servers/_rscommon/src/lib.rs"], shared).servers) == rust
    assert set(select(["servers/_rsactix/src/lib.rs"], shared).servers) == \
        {"actix-web", "actix-diesel"}


def test_a_command_several_servers_share_runs_once():
    from bench.cli.unit_tests import plan
    specs = manifest.discover()
    rust = [s for s in specs.values() if s.language == "rust"]
    commands = [argv for _, argv in plan(rust)]
    assert len(rust) == 6 and len(commands) == 1
    assert commands[0][1].endswith("_rscommon/cargo_mirrored.sh") and commands[0][3] == "test"
    go = plan([specs["gin"], specs["fasthttp"]])
    # each server's own `go test ./...` in its folder, the shared module's once
    assert [(spec.id, argv[1]) for spec, argv in go] == \
        [("gin", "test"), ("gin", "-C"), ("fasthttp", "test")]
    assert plan([specs["fastapi"], specs["nginx"]]) == []      # nothing declared


def test_a_manifest_whose_unit_tests_are_malformed_is_refused(tmp_path):
    from bench.core.manifest import ManifestError, load_manifest
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        'id = "x"\nconcurrency = "processes"\ndatabases = []\nstart = ["true"]\n'
        '[unit_tests]\ncommands = ["go test"]\n')
    with pytest.raises(ManifestError, match=r"\[unit_tests\] needs commands"):
        load_manifest(folder)


def test_the_base_must_be_a_commit_git_knows(capsys):
    from bench.cli.changed import main
    assert main(["--base", "no-such-ref-anywhere"]) == 2
    assert "unknown base 'no-such-ref-anywhere'" in capsys.readouterr().err


def test_the_selection_line_names_the_base_and_the_ids_are_written(tmp_path, capsys):
    from bench.cli.changed import main
    out = tmp_path / "ids"
    assert main(["--base", "HEAD", "--rule", "servers", "--write", str(out)]) == 0
    line = capsys.readouterr().out
    assert line.startswith("selected servers: ") and "[changes since HEAD (" in line
    written = out.read_text().strip()
    assert written == "" or all(s in manifest.discover() for s in written.split(","))
