"""`run_bench.py serve --protocol`: the curl and load lines printed for each protocol, and
what is refused or checked before anything starts (the session stopped at its
preflight: no process is started). The real server over h2 is tests/e2e/test_serve.py."""
from __future__ import annotations

import shlex

import pytest

from bench import cli
from bench.cli import serve as serve_module
from bench.cli.serve import curl_command, curl_examples
from bench.core.protocols import PROTOCOLS
from bench.session import preflight
from tests.unit.test_session import FIXTURES, RecordingHost, all_on, reached  # noqa: F401

BASE_TLS, BASE = "https://127.0.0.1:18080", "http://127.0.0.1:18080"
CA = "/tmp/run one/tls/ca.pem"
NATIVE, PROXIED = "claims_h2", "correct_processes"     # lists h1-tls and h2; speaks h1 only


@pytest.mark.parametrize("protocol, base, flags", [
    ("h1-tls", BASE_TLS, ["--http1.1", "--cacert", CA]),
    ("h2", BASE_TLS, ["--http2", "--cacert", CA]),
    ("h2c", BASE, ["--http2-prior-knowledge"]),
])
def test_every_curl_line_speaks_the_protocol_and_trusts_the_runs_ca(protocol, base, flags):
    lines = curl_examples(base, "tok", with_db=True, suite=True, protocol=protocol, ca=CA)
    curls = [shlex.split(line.split("  #")[0]) for line in lines if line.startswith("curl")]
    assert len(curls) == 10
    for argv in curls:
        assert argv[:2 + len(flags)] == ["curl", "-s", *flags], argv
        assert argv[-1].startswith(f"{base}/")
    # the first one shows the status line, which names the protocol (HTTP/2 200)
    assert curls[0][-2:] == ["-i", f"{base}/ping/"]


@pytest.mark.parametrize("protocol, generator", [("h1", "wrk"), ("h1-tls", "wrk"),
                                                 ("h2", "h2load"), ("h2c", "h2load")])
def test_the_load_line_is_the_generator_a_run_uses_over_the_protocol(protocol, generator):
    base = BASE_TLS if protocol in ("h1-tls", "h2") else BASE
    load = curl_examples(base, "tok", with_db=False, protocol=protocol, ca=CA)[-1]
    argv = shlex.split(load)
    assert argv[0] == generator and argv[-1] == f"{base}/plain/?param1=a"
    assert ["-H", "token: tok"] == argv[argv.index("-H"):argv.index("-H") + 2]
    if generator == "h2load":
        assert argv[1:7] == ["-c16", "-m4", "-D", "5s", "-H", "token: tok"]


def test_over_http1_the_lines_are_what_they_always_were():
    lines = curl_examples(BASE, "tok", with_db=True)
    assert lines[:2] == [f"curl -s {BASE}/ping/", f"curl -s -H 'token: tok' {BASE}/user/42/"]
    assert lines[-1] == f"wrk -t1 -c16 -d5s -H 'token: tok' {BASE}/user/1/"


def test_curl_over_tls_needs_the_ca_and_an_unknown_protocol_is_refused():
    assert curl_command("h1") == "curl -s"
    assert curl_command("h2", "/a b/ca.pem") == "curl -s --http2 --cacert '/a b/ca.pem'"
    with pytest.raises(ValueError, match="needs the run's CA"):
        curl_command("h1-tls")
    with pytest.raises(ValueError, match="unknown protocol 'h3'"):
        curl_command("h3")
    assert set(serve_module.CURL) == set(PROTOCOLS)


def serve_argv(server: str, *more: str) -> list[str]:
    return ["serve", server, "--db", "none", "--servers-dir", str(FIXTURES), *more]


@pytest.mark.parametrize("more, said", [
    (["--protocol", "h3"], "error: unknown --protocol h3; valid: h1, h1-tls, h2, h2c"),
    (["--protocol", "h2,h2c"], "error: unknown --protocol h2,h2c; valid: h1, h1-tls, h2, h2c"),
    (["--protocol", "h2", "--tls-proxy", "squid"], "error: --tls-proxy squid: no such proxy; "
                                                   "known: caddy, haproxy, nginx, traefik"),
])
def test_bad_input_is_refused_before_the_session_opens(more, said, reached, capsys):
    assert cli.main(serve_argv(PROXIED, *more)) == 2
    assert said in capsys.readouterr().err
    assert not reached


def test_a_terminating_proxy_this_machine_cannot_run_is_refused_with_why(reached, capsys,
                                                                          monkeypatch):
    monkeypatch.setattr(serve_module, "proxies_unavailable",
                        lambda found, hosts: {"nginx": "nginx is not installed"})
    assert cli.main(serve_argv(PROXIED, "--protocol", "h2")) == 2
    assert "nginx is unavailable on this machine: nginx is not installed" in \
        capsys.readouterr().err
    assert not reached
    # a server that speaks the protocol itself needs no proxy
    assert cli.main(serve_argv(NATIVE, "--protocol", "h2")) == 1 and len(reached) == 1


@pytest.mark.parametrize("server, protocol, proxy", [(NATIVE, "h2", "none"),
                                                     (NATIVE, "h1-tls", "none"),
                                                     (PROXIED, "h2", "nginx"),
                                                     (PROXIED, "h2c", "nginx"),
                                                     (NATIVE, "h2c", "haproxy")])
def test_the_session_gets_the_point_a_run_measures_the_server_at(server, protocol, proxy,
                                                                 reached, monkeypatch):
    """On the server's own listener where its manifest lists the protocol, else through
    --tls-proxy: what the preflight checks (the proxy's program, the port after --port)."""
    monkeypatch.setattr(serve_module, "proxies_unavailable", lambda found, hosts: {})
    more = ["--tls-proxy", "haproxy"] if proxy == "haproxy" else []
    assert cli.main(serve_argv(server, "--protocol", protocol, "--port", "19000", *more)) == 1
    opened = reached[0]
    loads = {c.load for c in opened.cases}
    assert len(loads) == 1 and opened.cases
    load = loads.pop()
    assert (load.protocol, load.proxy) == (protocol, proxy)
    assert load.generator == ("h2load" if protocol in ("h2", "h2c") else "wrk")
    assert 19001 in preflight.ports_needed(opened.context, opened.cases, needs=opened.needs)
    host = RecordingHost("here", tools=())
    said = " | ".join(preflight.problems(opened.context, opened.cases, all_on(host),
                                         opened.needs))
    assert ("nginx is not installed" in said) == (proxy == "nginx"), said
    assert ("(needed for --tls-proxy" in said) == (proxy != "none"), said
    if proxy != "none":
        assert f"{proxy} is not installed" in said
        assert f"(needed for --tls-proxy {proxy})" in said


def test_over_http1_the_server_is_served_directly_as_before(reached):
    assert cli.main(serve_argv(PROXIED)) == 1
    (load,) = {c.load for c in reached[0].cases}
    assert (load.protocol, load.proxy, load.generator) == ("h1", "none", "wrk")
    assert 18081 not in preflight.ports_needed(reached[0].context, reached[0].cases,
                                               needs=reached[0].needs)


def test_compression_is_a_switch_of_serve_not_the_runs_list_of_encodings(reached):
    # serve's --compression (a switch) once reached Settings' `compression` (a list of
    # encodings) and every serve failed with a TypeError
    assert cli.main(serve_argv(NATIVE, "--compression")) == 1 and len(reached) == 1
