"""The protocol dimension on numbers and text alone: what a run may combine
(bench.core.protocols), the cases and their keys (bench.core.plan), h2load's report and
per-request log (bench.load.h2load, from a report h2load 1.52.0 printed against the
nginx proxy over h2), the run's certificates (bench.infra.certs) and the tables."""
from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np
import pytest
from cryptography import x509

from bench.core import protocols
from bench.core.manifest import discover
from bench.core.plan import LoadParams, plan
from bench.core.settings import SelectionError, Settings
from bench.infra import certs
from bench.load import h2load
from bench.load.generator import LoadError, LoadRequest
from bench.paths import REPO, SERVERS_DIR
from bench.report.tables import load_params

SPECS = discover([SERVERS_DIR])
REPORT = (REPO / "tests" / "fixtures" / "h2load" / "report_h2.txt").read_text()
NGINX = {"nginx": ("h1", "h1-tls", "h2", "h2c"), "haproxy": ("h1",)}


def problems(protocols_=("h1",), tests=("plain",), rates=(), behind=("none",),
             tls_proxy="nginx", streams=(1,), generators=()):
    return protocols.problems(list(protocols_), list(tests), list(rates), list(behind), NGINX,
                              tls_proxy, list(streams), list(generators))


def test_what_a_run_may_combine_and_why_not():
    assert problems() == [] and problems(("h1", "h1-tls", "h2", "h2c"), streams=(1, 10)) == []
    assert "unknown --protocol h3" in problems(("h3",))[0]
    assert "needs --protocol h2 or h2c" in problems(streams=(10,))[0]
    assert "needs --protocol h2 or h2c" in problems(("h1-tls",), streams=(10,))[0]
    assert "--rate (the open model: oha, k6) runs over h1 and h1-tls only for now" in \
        problems(("h1-tls", "h2"), rates=("50%",))[0]
    assert problems(("h1", "h1-tls"), rates=("50%",)) == []
    assert "leave out --tests update user" in problems(("h2c",), tests=("plain", "update user"))[0]
    assert problems(("h1-tls",), tests=("update user",)) == []        # wrk PATCHes over TLS
    assert "the haproxy proxy does not terminate h2" in problems(("h2",), behind=("haproxy",))[0]
    assert "--tls-proxy caddy: no such proxy" in problems(("h2",), tls_proxy="caddy")[0]
    # oha and k6 are given the run's CA (bench.load.oha, k6): they may measure h1-tls
    assert problems(("h1", "h1-tls"), generators=("wrk", "oha", "k6")) == []
    assert problems(("h1", "h2"), generators=("wrk", "oha")) == []    # h2 is h2load's
    with pytest.raises(SelectionError, match="chosen by --protocol"):
        plan(Settings(servers=["gin"], protocols=["h2"], generators=["h2load"]), SPECS, ["nginx"])


def test_each_protocol_is_a_case_directly_where_the_server_speaks_it_else_through_the_proxy():
    settings = Settings(servers=["gin", "sanic"], tests=["plain"],
                        protocols=["h1", "h1-tls", "h2"], streams=[1, 10], ceiling=True)
    assert SPECS["gin"].protocols == ("h1-tls", "h2", "h2c") and SPECS["sanic"].protocols == ()
    cases = {c.id: c for c in plan(settings, SPECS, ["nginx"])}
    # gin speaks all three itself (Go's crypto/tls and HTTP/2); sanic none of them
    assert set(cases) == {"gin/none/raw/plain@c64", "gin/none/raw/plain@c64@h1-tls",
                          "gin/none/raw/plain@c64@h2", "gin/none/raw/plain@c64@h2-m10",
                          "sanic/none/raw/plain@c64",
                          "sanic/none/raw/plain@c64@h1-tls@behind-nginx",
                          "sanic/none/raw/plain@c64@h2@behind-nginx",
                          "sanic/none/raw/plain@c64@h2-m10@behind-nginx",
                          "nginx/none/raw/plain@c64"}          # the ceiling: h1 only
    h2 = cases["sanic/none/raw/plain@c64@h2-m10@behind-nginx"]
    assert (h2.load.generator, h2.load.proxy, h2.load.streams) == ("h2load", "nginx", 10)
    assert h2.key()["protocol"] == "h2" and h2.key()["streams"] == 10
    native = cases["gin/none/raw/plain@c64@h2-m10"]
    assert (native.load.generator, native.load.proxy) == ("h2load", "none")
    # --behind puts the proxy in front whatever the server speaks
    behind = plan(Settings(servers=["gin"], tests=["plain"], protocols=["h2"],
                           behind=["nginx"], ceiling=False), SPECS, ["nginx"])
    assert [c.id for c in behind] == ["gin/none/raw/plain@c64@h2@behind-nginx"]
    both = plan(Settings(servers=["gin", "sanic"], tests=["plain"], protocols=["h2"],
                         behind=["none", "nginx"], ceiling=False), SPECS, ["nginx"])
    assert [c.id for c in both] == ["gin/none/raw/plain@c64@h2",            # its own, and
                                    "gin/none/raw/plain@c64@h2@behind-nginx",  # nginx's
                                    "sanic/none/raw/plain@c64@h2@behind-nginx"]  # once
    # h1's key is as it always was: older runs stay comparable
    assert "protocol" not in cases["gin/none/raw/plain@c64"].key()
    assert LoadParams(64).suffix == ""


def test_a_rate_over_tls_is_a_case_whose_base_is_the_closed_loop_over_tls():
    cases = {c.id: c for c in plan(Settings(servers=["gin", "sanic"], tests=["plain"],
                                            protocols=["h1", "h1-tls"], rates=["50%"],
                                            ceiling=False), SPECS, ["nginx"])}
    assert set(cases) == {f"{s}/none/raw/plain@c64{p}" for s, p in [
        ("gin", ""), ("gin", "@h1-tls"), ("gin", "@oha@r50%"), ("gin", "@h1-tls@oha@r50%"),
        ("sanic", ""), ("sanic", "@h1-tls@behind-nginx"), ("sanic", "@oha@r50%"),
        ("sanic", "@h1-tls@behind-nginx@oha@r50%")]}
    rated = cases["sanic/none/raw/plain@c64@h1-tls@behind-nginx@oha@r50%"].load
    # the share is of wrk's maximum over the same protocol through the same proxy
    assert rated.closed_loop == cases["sanic/none/raw/plain@c64@h1-tls@behind-nginx"].load


def test_a_manifests_protocols_are_checked_and_need_their_notes(tmp_path):
    from bench.core.manifest import ManifestError, load_manifest
    folder = tmp_path / "own"
    folder.mkdir()
    base = 'id = "own"\nconcurrency = "processes"\ndatabases = []\nstart = ["x"]\n'
    for protocols_line, notes, message in [
            ('protocols = ["h3"]', "", "protocols lists what the server speaks natively"),
            ('protocols = ["h1"]', "", "besides h1"),
            ('protocols = ["h2"]', "", "needs notes.protocols")]:
        (folder / "manifest.toml").write_text(base + protocols_line + "\n" + notes)
        with pytest.raises(ManifestError, match=message):
            load_manifest(folder)
    (folder / "manifest.toml").write_text(
        base + 'protocols = ["h2c"]\n[notes]\nprotocols = "its own h2c"\n')
    spec = load_manifest(folder)
    assert spec.speaks("h1") and spec.speaks("h2c") and not spec.speaks("h2")


def test_a_servers_own_listeners_are_asked_for_by_environment(tmp_path):
    from bench.infra import native
    tls = certs.make(tmp_path, ["localhost"])
    assert native.listener_env("h2", 18080, tls) == {
        "BENCH_TLS_PORT": "18080", "BENCH_TLS_CERT": str(tls.cert),
        "BENCH_TLS_KEY": str(tls.key)}
    assert native.listener_env("h2c", 18080) == {"BENCH_H2C_PORT": "18080"}
    with pytest.raises(ValueError):
        native.listener_env("h1-tls", 18080)         # no certificate
    # verification: one start with every listener of its own, beside HTTP/1.1 on the port
    env, ports = native.verification_listeners(SPECS["gin"], ("h1", "h1-tls", "h2", "h2c"),
                                               18080, tls)
    assert ports == {"h1-tls": 18083, "h2": 18083, "h2c": 18084}
    assert env["BENCH_TLS_PORT"] == "18083" and env["BENCH_H2C_PORT"] == "18084"
    assert native.verification_listeners(SPECS["sanic"], ("h2",), 18080, tls) == ({}, {})
    assert native.url("::1", 8443, "h2") == "https://[::1]:8443"


def test_a_protocols_table_names_it_and_never_pairs_it_with_h1():
    def case(**key):
        return {"key": {"connections": 64, "connection_mode": "keep-alive", "proxy": "nginx",
                        **key}}
    assert load_params(case()) == (64, "keep-alive", "nginx")
    assert load_params(case(protocol="h2", streams=10)) == (64, "keep-alive, h2, 10 streams",
                                                            "nginx")
    assert load_params(case(protocol="h1-tls", streams=1))[1] == "keep-alive, h1-tls"


def test_h2loads_report_is_read_into_the_common_summary():
    summary = h2load.parse_report(REPORT, connections=2, streams=4)
    assert summary["requests"] == 1911 and summary["sent"] == 1919
    assert summary["duration_s"] == pytest.approx(1.08)
    assert summary["requests_per_sec"] == pytest.approx(1911 / 1.08)
    # 954 answers of 404: status errors; 8 started and not done are in flight (<= 2 x 4)
    assert summary["errors"] == {"connect": 0, "read": 0, "write": 0, "status": 954,
                                 "timeout": 0, "lost": 0, "total": 954}
    assert summary["negotiated"] == {"protocols": ["h2"], "tls_protocol": ["TLSv1.3"],
                                     "cipher": ["TLS_AES_128_GCM_SHA256"]}
    assert h2load.negotiation_problems(summary["negotiated"], "h2") == ""
    # a connection that fell back to HTTP/1.1 is an error of the sample, never a figure
    fell_back = {**summary["negotiated"], "protocols": ["h2", "http/1.1"]}
    assert "negotiated h2, http/1.1, not h2" in h2load.negotiation_problems(fell_back, "h2")
    assert "not h2c" in h2load.negotiation_problems(summary["negotiated"], "h2c")
    with pytest.raises(LoadError, match="printed no report"):
        h2load.parse_report("connect failed", connections=1, streams=1)


def test_the_log_gives_the_histogram_and_the_percentiles(tmp_path):
    log = tmp_path / "requests.log"
    log.write_text("".join(f"1795713782041824\t200\t{us}\n" for us in (1000, 2000, 3000, 4000)))
    summary = h2load.parse_report(REPORT, connections=2, streams=4)
    summary["requests"] = 4
    h2load.add_log(summary, h2load.read_log(log))
    assert summary["latency_histogram"]["count"] == 4
    assert summary["latency_ms"]["max"] == pytest.approx(4.0, rel=0.01)
    assert summary["latency_ms"]["p50"] == pytest.approx(2.0, rel=0.01)
    assert "latency_histogram_error" not in summary
    h2load.add_log(summary, np.array([500], dtype=np.int64))
    assert "holds 1 responses, its report 4" in summary["latency_histogram_error"]


def test_the_request_paths_are_the_wrk_scripts_and_the_command_is_what_was_asked():
    paths = h2load.paths("get user", seed=3)
    assert len(paths) == h2load.URIS_PER_FILE and paths == h2load.paths("get user", seed=3)
    ids = [int(p.split("/")[2]) for p in paths]
    assert min(ids) >= 1 and max(ids) <= 10_000 and len(set(ids)) > 900
    assert all(p.startswith("/plain/?param1=") for p in h2load.paths("plain", seed=1))
    assert h2load.paths("queries", seed=1, n=20) == ["/queries/?n=20"]
    with pytest.raises(LoadError, match="PATCH"):
        h2load.paths("update user", seed=1)
    request = LoadRequest(test="plain", base_url="https://127.0.0.1:1", connections=8,
                          threads=16, duration_s=1.5, timeout_s=5, seed=1, token="t",
                          protocol="h2", streams=10)
    argv = h2load.command(request, "uris", "log")
    assert argv[argv.index("-t") + 1] == "8" and argv[argv.index("-m") + 1] == "10"
    assert argv[argv.index("-D") + 1] == "1500ms" and "token: t" in argv
    assert argv[argv.index("-N") + 1] == "5000ms"       # the request timeout


def test_the_runs_certificate_is_ecdsa_for_its_names_and_can_be_made_expired(tmp_path):
    made = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    cert = x509.load_pem_x509_certificate(made.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert cert.public_key().curve.name == "secp256r1"
    assert oct(made.key.stat().st_mode & 0o777) == "0o600"
    old = certs.make(tmp_path / "old", ["localhost"], valid_days=1,
                     now=datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
    expired = x509.load_pem_x509_certificate(Path(old.cert).read_bytes())
    assert expired.not_valid_after_utc.year == 2020


def test_on_another_host_the_certificate_is_copied_there_and_the_ca_stays_here(tmp_path):
    from bench.infra.fake import FakeHost
    tls = certs.make(tmp_path / "run-1" / "tls", ["localhost", "10.0.0.2"])
    here = FakeHost("here")
    assert certs.on_host(tls, here) is tls and certs.ca_on_host(tls, here) == str(tls.ca)
    there = FakeHost("server", remote=True)
    placed = certs.on_host(tls, there)
    # the server host reads its own copies (in its workdir's remote-tmp, one per run)...
    assert placed.cert.parent == Path(there.path("remote-tmp/tls-run-1"))
    assert placed.cert.read_bytes() == tls.cert.read_bytes()
    assert placed.key.read_bytes() == tls.key.read_bytes()
    # ...while the probes here check what it presents against the run's CA here
    assert placed.ca == tls.ca and placed.names == tls.names
    client = FakeHost("client", remote=True)
    ca = certs.ca_on_host(tls, client)
    assert Path(ca).read_bytes() == tls.ca.read_bytes() and ca.startswith(client.path(""))


def test_each_sample_start_asks_for_the_certificate_but_a_host_gets_it_once(tmp_path):
    from bench.infra.fake import FakeHost
    tls = certs.make(tmp_path / "run-2" / "tls", ["localhost", "10.0.0.2"])
    there, copies = FakeHost("server", remote=True), []
    put = there.put
    there.put = lambda local, remote: (copies.append(Path(local).name), put(local, remote))
    first, again = certs.on_host(tls, there), certs.on_host(tls, there)
    certs.ca_on_host(tls, there), certs.ca_on_host(tls, there)
    assert first == again and sorted(copies) == sorted([tls.cert.name, tls.key.name, tls.ca.name])
    # another run's certificate (another file) is copied again
    other = certs.make(tmp_path / "run-3" / "tls", ["localhost", "10.0.0.2"])
    certs.on_host(other, there)
    assert len(copies) == 5
