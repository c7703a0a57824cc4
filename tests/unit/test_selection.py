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
