"""A proxy's proxy.toml (bench.core.proxyspec): the fields a proxy built from source has
as a server's manifest does (`build`, [toolchain]), checked by the servers' toolchain
code, built through the session's builds, refused by name when unavailable; and
proxies/traefik's pins agreeing with each other."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.core.manifest import ManifestError
from bench.core.proxyspec import PROXIES_DIR, available_proxies, load_proxy
from bench.core.settings import SelectionError, Settings
from bench.infra.hosts import Hosts
from bench.infra.proxy import build_proxy, template_values
from bench.session import FOR_BUILD, Session, check_proxies
from bench.setup import probe, toolchains

BUILT = '''
build = ["go", "build", "-o", "{cache_dir}/proxies/p/p", "."]
[toolchain]
command = "go"
minimum = "1.25"
fetches_newer_from = "1.21"
reason = "go.mod says go 1.25"
'''


def proxy_folder(tmp_path: Path, extra: str = BUILT, name: str = "p") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "proxy.toml").write_text(f'name = "{name}"\nstart = ["{{cache_dir}}/proxies/p/p"]\n'
                                       + extra)
    return folder


def found(**versions):
    def find(tool):
        return probe.Found(tool, f"/fake/{tool}", versions[tool]) if tool in versions \
            else probe.Found(tool, None, None)
    return find


def test_build_and_toolchain_are_read_as_a_server_manifest_reads_them(tmp_path):
    spec = load_proxy(proxy_folder(tmp_path))
    assert spec.build == ("go", "build", "-o", "{cache_dir}/proxies/p/p", ".")
    assert (spec.toolchain.command, spec.toolchain.minimum, spec.toolchain.fetches_newer_from) \
        == ("go", "1.25", "1.21")
    assert spec.id == "p" and spec.label == "behind-p"
    # an installed proxy has neither
    plain = load_proxy(proxy_folder(tmp_path, 'requires = ["p"]\n', name="q"))
    assert plain.build == () and plain.toolchain is None and plain.requires == ("p",)


@pytest.mark.parametrize("extra, message", [
    ('build = "go build"\n', "'build' must be a list of strings"),
    ('build = ["go", 1]\n', "'build' must be a list of strings"),
    ('[toolchain]\ncommand = "go"\nminimum = "1.25"\n', r"\[toolchain\] needs reason"),
    ('[toolchain]\ncommand = "go"\nminimum = "new"\nreason = "r"\n', "must be a version"),
])
def test_a_wrong_build_or_toolchain_names_the_file(tmp_path, extra, message):
    with pytest.raises(ManifestError, match=message) as caught:
        load_proxy(proxy_folder(tmp_path, extra))
    assert "proxy.toml" in str(caught.value)


def test_its_toolchain_is_checked_by_the_servers_code(tmp_path):
    proxies = {"p": load_proxy(proxy_folder(tmp_path))}
    assert toolchains.unavailable(proxies, found(go="1.26.8")) == {}
    assert toolchains.unavailable(proxies, found(go="1.22")) == {}      # fetches 1.25 itself
    missing = toolchains.unavailable(proxies, found())["p"]
    assert missing.startswith("go is not installed (not on PATH): p needs go >= 1.25 "
                              "(go.mod says go 1.25)")
    assert "too old" in toolchains.unavailable(proxies, found(go="1.19"))["p"]


def test_naming_an_unavailable_proxy_is_refused_with_why(tmp_path, monkeypatch):
    proxies = {"p": load_proxy(proxy_folder(tmp_path))}
    real = toolchains.unavailable
    monkeypatch.setattr(toolchains, "unavailable", lambda specs: real(specs, found()))
    with pytest.raises(SelectionError, match="p is unavailable on this machine: go is not"):
        check_proxies(Settings(behind=("none", "p")), proxies)
    check_proxies(Settings(behind=("none",)), proxies)          # not named: no question


class BuildHost:
    """What a build uses of a host: where the project and the cache are, and run()."""
    remote = False

    def __init__(self, cache: Path, code: int = 0):
        self.cache, self.code, self.commands = cache, code, []

    def project_path(self, path):
        return str(path)

    def cache_dir(self):
        return str(self.cache)

    def run(self, argv, cwd=None, timeout=None, stop_signal=None, env=None):
        self.commands.append((list(argv), cwd))
        return SimpleNamespace(returncode=self.code, stdout="", stderr="compile error\n",
                               timed_out=False, wall_s=2.5)


def test_the_build_runs_in_its_folder_with_the_cache_dir(tmp_path):
    spec = load_proxy(proxy_folder(tmp_path))
    host = BuildHost(tmp_path / "cache")
    assert build_proxy(spec, tmp_path / "build.log", host) == 2.5
    assert host.commands == [(["go", "build", "-o", f"{tmp_path}/cache/proxies/p/p", "."],
                              str(spec.dir))]
    assert (tmp_path / "cache").is_dir()
    assert template_values(spec, host)["cache_dir"] == str(tmp_path / "cache")
    failing = BuildHost(tmp_path / "cache", code=1)
    with pytest.raises(Exception, match=r"build of the p proxy failed \(exit 1\)"):
        build_proxy(spec, tmp_path / "build.log", failing)


class SessionHost(BuildHost):
    name = "here"

    def which(self, tool):
        return f"/usr/bin/{tool}"

    def machine(self):
        return {"cpus_usable": 2}

    def port_is_free(self, port, address="127.0.0.1"):
        return True

    def connect(self):
        pass

    def close(self):
        return None


class OneHost(Hosts):
    def __init__(self, host):
        super().__init__({})
        self.host = host

    def for_role(self, role):
        return self.host

    def open(self):
        pass

    def close(self):
        return []


def test_a_session_builds_a_proxy_as_a_server_labelled_behind_its_name(tmp_path):
    spec = load_proxy(proxy_folder(tmp_path))
    host = SessionHost(tmp_path / "cache")
    with Session(Settings(results_dir=tmp_path), hosts=OneHost(host), needs=FOR_BUILD) as s:
        built = dict(s.builds([spec], tmp_path / "logs"))
    assert list(built) == ["behind-p"] and built["behind-p"].record.to_json() == \
        {"ok": True, "seconds": 2.5, "error": None}
    assert (tmp_path / "logs" / "build-behind-p.log").read_text().startswith("$ go build")


# ---------------------------------------------------------------- proxies/traefik's pins
TRAEFIK = PROXIES_DIR / "traefik"


def test_traefik_is_built_from_the_version_its_go_mod_pins():
    spec = available_proxies()["traefik"]
    go_mod = (TRAEFIK / "go.mod").read_text()
    pinned = re.search(r"^\s*github.com/traefik/traefik/v3 (v\S+)", go_mod, re.M)[1]
    ldflags = next(a for a in spec.build if a.startswith("-ldflags="))
    assert f"pkg/version.Version={pinned}" in ldflags
    assert pinned in spec.notes["version"] and pinned in spec.toolchain.reason
    # the toolchain's minimum is go.mod's go line; the build cannot change go.mod/go.sum
    go_line = re.search(r"^go (\d+\.\d+)", go_mod, re.M)[1]
    assert spec.toolchain.minimum == go_line
    assert "-mod=readonly" in spec.build and "-trimpath" in spec.build
    assert (TRAEFIK / "go.sum").stat().st_size > 0
    # what it builds is what it starts, in the harness cache
    out = spec.build[spec.build.index("-o") + 1]
    assert out.startswith("{cache_dir}/") and out in spec.start
    # Traefik's own replace directives, repeated (they only apply in the main module)
    for line in ("github.com/abbot/go-http-auth => github.com/containous/go-http-auth",
                 "github.com/gorilla/mux => github.com/containous/mux"):
        assert line in go_mod


def test_traefik_reads_its_dynamic_config_from_the_harness_environment():
    spec = available_proxies()["traefik"]
    dynamic = (TRAEFIK / "dynamic.yml").read_text()
    assert '{{ env "BENCH_UPSTREAM_HOST" }}:{{ env "BENCH_UPSTREAM_PORT" }}' in dynamic
    assert "--go-runtime" in spec.start
    assert "--entryPoints.web.address={listen_host}:{listen_port}" in spec.start
    assert "--providers.file.filename={dir}/dynamic.yml" in spec.start
    # nothing listens on a fixed port and nothing is logged per request
    assert not any(a.startswith(("--api", "--ping", "--metrics", "--accessLog", "--tracing"))
                   for a in spec.start)
    assert tomllib.loads((TRAEFIK / "proxy.toml").read_text())["stop_signal"] == "SIGTERM"


class PingHost:
    """A host whose GET /ping/ answers as scripted: a reason string is no answer."""

    def __init__(self, answers):
        self.answers, self.asked = list(answers), 0

    def http_get(self, url, timeout):
        from bench.infra.seam import HttpAnswer, HttpUnanswered
        self.asked += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, str):
            raise HttpUnanswered(url, answer)
        return HttpAnswer(answer, {}, b'{"ping": "pong"}')


def test_an_upstream_that_accepted_but_answers_late_is_waited_for(monkeypatch):
    """A worker still starting (read timeouts) is a live server, unlike a refusal: with
    no budget at all for refusals, the late answers are still waited for."""
    import bench.infra.proxy as proxy
    monkeypatch.setattr(proxy, "UPSTREAM_WAIT_S", 0.0)
    host = PingHost(["ReadTimeout"] * 3 + [200])
    assert proxy._upstream_answer(host, "http://127.0.0.1:1")[0] == 200
    assert host.asked == 4


def test_an_upstream_that_refuses_is_a_proxy_error_after_the_short_wait(monkeypatch):
    import bench.infra.proxy as proxy
    monkeypatch.setattr(proxy, "UPSTREAM_WAIT_S", 0.0)
    host = PingHost(["ConnectionError"])
    with pytest.raises(proxy.ProxyError, match="last: ConnectionError"):
        proxy._upstream_answer(host, "http://127.0.0.1:1")
