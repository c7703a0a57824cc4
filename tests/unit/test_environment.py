"""The environment fingerprint, and the versions read from each server's lock files or
its own virtualenv (bench.infra.versions)."""
import dataclasses

from bench.core.manifest import discover
from bench.infra import environment
from bench.infra import versions
from bench.infra.versions import server_versions
from bench.paths import SERVERS_DIR
from bench.setup.probe import runtime_version

SPECS = discover([SERVERS_DIR])


def test_versions_come_from_lock_files_and_the_virtualenv():
    axum = server_versions(SPECS["axum"])
    assert axum["axum"].startswith("0.") and "sqlx" in axum      # sqlx via the shared crate
    gin = server_versions(SPECS["gin"])
    assert gin["github.com/gin-gonic/gin"].startswith("v1.")
    assert "golang.org/x/net" not in gin                          # indirect: not the server's
    # the drivers and cache come from the shared module (servers/_gocommon, a local
    # `replace`), at the versions the server's own go.mod selects; the module itself not
    fasthttp = server_versions(SPECS["fasthttp"])
    for versions in (gin, fasthttp):
        assert {"github.com/jackc/pgx/v5", "github.com/go-sql-driver/mysql",
                "github.com/hashicorp/golang-lru/v2"} <= set(versions)
        assert "webbench/gocommon" not in versions
    assert fasthttp["github.com/valyala/fasthttp"].startswith("v1.")
    assert server_versions(SPECS["fastify"])["fastify"].startswith("5.")
    # a Python server: its own pins (installed ones once its virtualenv is made) and the
    # interpreter; django_asgi's include django's file (-r ../django/requirements.txt)
    sanic = server_versions(SPECS["sanic"])
    assert sanic["sanic"][0].isdigit() and sanic["python"][0] == "3"
    assert {"Django", "uvicorn"} <= set(server_versions(SPECS["django_asgi"]))
    # Java: the pom.xml's direct dependencies, ${vertx.version} resolved from its
    # <properties>; and each server's runtime, the one its [toolchain] names
    vertx = server_versions(SPECS["vertx"], runtime_version)
    assert vertx["io.vertx:vertx-core"][0].isdigit() and "${" not in str(vertx)
    assert vertx["java"][0].isdigit() and "java" not in server_versions(SPECS["vertx"])
    assert server_versions(SPECS["axum"], runtime_version)["cargo"][0] == "1"
    assert server_versions(SPECS["gin"], runtime_version)["go"][0] == "1"
    assert server_versions(SPECS["fastify"], runtime_version)["node"][0].isdigit()


def test_a_pom_without_a_namespace_and_a_bom_managed_version(tmp_path):
    (tmp_path / "pom.xml").write_text(
        "<project><properties><x.version>1.2</x.version></properties>"
        "<dependencyManagement><dependencies><dependency><groupId>g</groupId>"
        "<artifactId>managed</artifactId><version>${x.version}</version></dependency>"
        "</dependencies></dependencyManagement><dependencies>"
        "<dependency><groupId>g</groupId><artifactId>managed</artifactId></dependency>"
        "<dependency><groupId>g</groupId><artifactId>own</artifactId><version>3</version>"
        "</dependency><dependency><groupId>g</groupId><artifactId>bom</artifactId>"
        "</dependency></dependencies></project>")
    assert versions._maven(tmp_path) == {"g:managed": "1.2", "g:own": "3",
                                         "g:bom": "(managed by a BOM)"}


def test_a_release_sweeps_version_is_the_one_asked_for():
    older = dataclasses.replace(SPECS["sanic"], arm="sanic=23.6.0", deps={"sanic": "23.6.0"})
    assert server_versions(older)["sanic"] == "23.6.0"
    go = dataclasses.replace(SPECS["gin"], arm="x", deps={"github.com/gin-gonic/gin": "v1.0.0"})
    found = server_versions(go)["github.com/gin-gonic/gin"]
    assert found == "v1.0.0" or found == "v1.0.0 (asked)"     # made already, or not yet


def test_machine_id_is_stable_and_can_be_named(monkeypatch):
    env = {"hostname": "box", "cpu_model": "x", "cpu_count": 2, "memory_gb": 4, "kernel": "6"}
    first = environment.fingerprint(env)
    assert first.startswith("box-") and first == environment.fingerprint(dict(env))
    assert environment.fingerprint({**env, "cpu_count": 4}) != first
    monkeypatch.setenv("BENCH_MACHINE_ID", "ci-runner-class")
    assert environment.fingerprint(env) == "ci-runner-class"


def test_build_settings_from_the_environment_are_recorded_only_when_set(monkeypatch):
    import os
    for name in [k for k in os.environ if k.startswith("CARGO_PROFILE_")]:
        monkeypatch.delenv(name)
    assert environment.build_env() == {}
    monkeypatch.setenv("CARGO_PROFILE_RELEASE_LTO", "off")
    monkeypatch.setenv("CARGO_TARGET_DIR", "/elsewhere")        # not a profile setting
    assert environment.build_env() == {"build_env": {"CARGO_PROFILE_RELEASE_LTO": "off"}}


def test_a_build_on_another_machine_gets_the_build_settings_ssh_does_not_carry(monkeypatch,
                                                                               tmp_path):
    from bench.infra.fake import FakeHost
    from bench.infra.server import run_build
    monkeypatch.setenv("CARGO_PROFILE_RELEASE_LTO", "off")
    remote, local_like = FakeHost("server", remote=True), FakeHost("here")
    for host in (remote, local_like):
        run_build("x", ["cargo", "build"], tmp_path, str(tmp_path / "cache"),
                  tmp_path / "build.log", host=host)
    [built] = remote._procs.values()
    assert built.env["CARGO_PROFILE_RELEASE_LTO"] == "off"
    assert built.env["HOME"] == "/home/fake"          # the host's own environment kept
    [inherits] = local_like._procs.values()
    assert not inherits.env                              # this machine: inherited as it is
