"""Tests of bench/load/wrk.py and the wrk scripts.

The parser is tested on real wrk outputs recorded in tests/unit/data/wrk_*.txt.
To re-record them (needs wrk; uses ports 20450-20454):

    .venv/bin/python tests/unit/test_load.py --record

The tests that run wrk itself are skipped when wrk is not installed.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.load import wrk as load  # noqa: E402
from bench.load.wrk import LoadError, LoadSettings  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
HAVE_WRK = shutil.which("wrk") is not None
needs_wrk = pytest.mark.skipif(not HAVE_WRK, reason="wrk is not installed")

# ports (the project's range is 20400-20499)
PORT_HTTP_404 = 20450      # http.server without the endpoints -> 404s (status errors)
PORT_CLOSED = 20451        # nothing listens -> wrk: "unable to connect"
PORT_HTTP_200 = 20452      # http.server with plain/ and to_json/ directories -> 200s
PORT_VANISHING = 20453     # accepts wrk's probe, then stops listening -> write errors
PORT_SLOW = 20454          # answers after 1.5 s -> timeout errors
LIVE_PORTS = range(20460, 20500)  # live tests take the first free one of these


# --------------------------------------------------------------------------- helpers

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"     # keep-alive, like the real servers
    disable_nagle_algorithm = True    # else Nagle + delayed ACK add ~40 ms per request
    delay_s = 0.0

    def do_GET(self):
        if self.delay_s:
            time.sleep(self.delay_s)
        super().do_GET()

    def log_message(self, *args):     # silence the access log
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):   # wrk resets connections at the end
        pass


@contextlib.contextmanager
def http_server(port: int | None, with_endpoints: bool, delay_s: float = 0.0):
    """A static http.server on 127.0.0.1:port in a thread (port None: a free LIVE_PORTS one).

    with_endpoints=True serves plain/ and to_json/ as directories (index.html), so
    GET /plain/?... and GET /to_json/?... answer 200; otherwise everything is 404.
    delay_s: sleep before each answer (to provoke wrk's timeout errors).
    """
    with tempfile.TemporaryDirectory() as root:
        if with_endpoints:
            for name in ("plain", "to_json"):
                os.mkdir(os.path.join(root, name))
                Path(root, name, "index.html").write_text("param1=a, param2=b, param3=c")
        handler_cls = type("Handler", (_QuietHandler,), {"delay_s": delay_s})
        handler = functools.partial(handler_cls, directory=root)
        server = None
        for candidate in ([port] if port else LIVE_PORTS):
            try:
                server = _QuietServer(("127.0.0.1", candidate), handler)
                break
            except OSError:
                if port:
                    raise
        if server is None:
            raise RuntimeError(f"no free port in {LIVE_PORTS}")
        port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.shutdown()
            server.server_close()


@contextlib.contextmanager
def vanishing_listener(port: int):
    """Accepts exactly one connection (wrk's start-up connect probe), then stops
    listening, so every connection of wrk's threads is refused (connect errors)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1)

    def run():
        conn, _ = sock.accept()
        sock.close()
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(OSError):
            sock.close()


def _wrk(args: list[str], timeout: float = 30, max_fds: int | None = None
         ) -> subprocess.CompletedProcess:
    env = dict(os.environ)

    def limit_fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))

    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=limit_fds if max_fds else None)


def record() -> None:
    """Re-record tests/unit/data/wrk_*.txt from real wrk runs."""
    DATA.mkdir(parents=True, exist_ok=True)
    fast = LoadSettings(threads=2, connections=4, duration_s=1, timeout_s=2, seed=1)

    def save(name: str, proc: subprocess.CompletedProcess) -> None:
        (DATA / f"wrk_{name}_stdout.txt").write_text(proc.stdout)
        if proc.stderr:
            (DATA / f"wrk_{name}_stderr.txt").write_text(proc.stderr)
        print(f"{name}: exit {proc.returncode}, stdout tail: {proc.stdout.strip()[-200:]!r}")

    with http_server(PORT_HTTP_404, with_endpoints=False) as url:
        save("plain_404", _wrk(load.wrk_command("plain", url, fast)))
    with http_server(PORT_HTTP_200, with_endpoints=True) as url:
        save("to_json_200", _wrk(load.wrk_command("to json", url, fast)))
    # wrk counts a connect error only when connect() fails at once, e.g. when it runs
    # out of file descriptors: 40 connections with 24 fds -> some connect errors
    with http_server(PORT_HTTP_200, with_endpoints=True) as url:
        many = LoadSettings(threads=1, connections=40, duration_s=1, timeout_s=2, seed=1)
        save("plain_connect_errors", _wrk(load.wrk_command("plain", url, many), max_fds=24))
    # the server goes away after wrk's start-up probe: refused connections show up
    # as write errors (the non-blocking connect "succeeds", the write then fails)
    with vanishing_listener(PORT_VANISHING) as url:
        save("get_user_refused", _wrk(load.wrk_command("get user", url, fast)))
    # answers come after 1.5 s, the timeout is 1 s: wrk counts them as timeouts
    with http_server(PORT_SLOW, with_endpoints=True, delay_s=1.5) as url:
        slow = LoadSettings(threads=1, connections=2, duration_s=2, timeout_s=1, seed=1)
        save("to_json_timeouts", _wrk(load.wrk_command("to json", url, slow)))
    save("unable_to_connect", _wrk(load.wrk_command("get user", f"http://127.0.0.1:{PORT_CLOSED}", fast)))


def read(name: str) -> str:
    return (DATA / name).read_text()


# --------------------------------------------------------------------------- settings / argv

def test_script_for_every_contract_test():
    from bench.core.settings import KNOWN_TESTS
    from bench.core.workloads import OWN_GENERATOR
    # a test with a generator of its own (websocket: wsload) has no wrk script
    assert set(load.TEST_SCRIPTS) == set(KNOWN_TESTS) - set(OWN_GENERATOR)
    for test in load.TEST_SCRIPTS:
        path = load.script_for(test)
        assert path.is_absolute() and path.is_file(), path
    assert (load.SCRIPTS_DIR / "common.lua").is_file()
    with pytest.raises(ValueError, match="unknown test"):
        load.script_for("get_user")


def test_the_mixed_script_gets_its_mix_and_reports_each_endpoint():
    s = LoadSettings(threads=1, connections=1, duration_s=1, mix="get_user:3,queries.5:1")
    argv = load.wrk_command("mixed", "http://h:1", s)
    assert argv[-1] == "mix=get_user:3,queries.5:1" and argv[-6].endswith("mixed.lua")
    with pytest.raises(ValueError, match="needs a mix"):
        load.wrk_command("mixed", "http://h:1", LoadSettings(threads=1, connections=1,
                                                             duration_s=1))
    line = ('WRK_JSON {"requests": 4, "duration_us": 1000000, "bytes": 10, "errors": {}, '
            '"latency_us": {}, "endpoints": {"queries.5": 1, "get_user": 4}}')
    assert load.parse_wrk_output(line)["endpoints"] == {"get_user": {"sent": 4},
                                                       "queries.5": {"sent": 1}}
    assert "endpoints" not in load.parse_wrk_output(line.replace(', "endpoints"', ', "x"'))


def test_wrk_command_argv():
    s = LoadSettings(threads=2, connections=64, duration_s=15, timeout_s=5, seed=42, token="tok")
    cmd = load.wrk_command("update user", "http://127.0.0.1:8080/", s, 10)
    assert cmd == [
        "wrk", "-t", "2", "-c", "64", "-d", "10s", "--timeout", "5s", "--latency",
        "-s", str(load.SCRIPTS_DIR / "update_user.lua"), "http://127.0.0.1:8080",
        "--", "tok", "42",
    ]
    # duration defaults to the settings'; wrk only takes whole seconds, so round up
    cmd = load.wrk_command("plain", "http://127.0.0.1:8080", LoadSettings(1, 1, 2.5, timeout_s=0.2))
    assert cmd[cmd.index("-d") + 1] == "3s"
    assert cmd[cmd.index("--timeout") + 1] == "1s"
    assert cmd[-3:] == ["--", "hardcoded_token", "1"]
    assert cmd[cmd.index("-s") + 1].endswith("/plain.lua")


def test_wrk_command_rejects_bad_input():
    s = LoadSettings(threads=1, connections=1, duration_s=1)
    with pytest.raises(ValueError):
        load.wrk_command("plain", "127.0.0.1:8080", s)
    with pytest.raises(ValueError):
        load.wrk_command("nope", "http://127.0.0.1:8080", s)
    with pytest.raises(ValueError):
        LoadSettings(threads=4, connections=2, duration_s=1)   # wrk refuses c < t
    with pytest.raises(ValueError):
        LoadSettings(threads=1, connections=1, duration_s=0)
    with pytest.raises(ValueError):
        LoadSettings(threads=1, connections=1, duration_s=1, token="a b")


# --------------------------------------------------------------------------- parser

LATENCY_KEYS = {"min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99_9"}
ERROR_KEYS = {"connect", "read", "write", "status", "timeout", "lost", "total"}


def _check_shape(summary: dict) -> None:
    # a summary without a histogram says why (these recorded outputs predate it)
    assert (summary["latency_histogram"] is None) == ("latency_histogram_error" in summary)
    assert set(summary) - {"latency_histogram_error"} == {
        "requests", "sent", "unanswered", "duration_s", "requests_per_sec", "bytes",
        "latency_ms", "errors", "latency_histogram"}
    assert set(summary["latency_ms"]) == LATENCY_KEYS
    assert set(summary["errors"]) == ERROR_KEYS
    errs = summary["errors"]
    # read/write errors are unanswered requests, as are lost ones: counted once
    assert errs["total"] == errs["connect"] + errs["status"] + errs["timeout"] + \
        max(errs["read"] + errs["write"], errs["lost"])


def _human_requests(stdout: str) -> int:
    # only to cross-check the JSON against what wrk itself printed
    return int(re.search(r"^\s*(\d+) requests in", stdout, re.M).group(1))


def test_parse_ok_run():
    out = read("wrk_to_json_200_stdout.txt")
    s = load.parse_wrk_output(out)
    _check_shape(s)
    assert s["requests"] == _human_requests(out) > 0
    assert s["errors"]["total"] == 0
    assert 0.9 < s["duration_s"] < 3
    assert s["requests_per_sec"] == pytest.approx(s["requests"] / s["duration_s"])
    assert s["bytes"] > 0
    lat = s["latency_ms"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p75"] <= lat["p90"] <= lat["p99"] \
        <= lat["p99_9"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"]
    # microseconds -> milliseconds: the human report's max agrees with ours
    assert lat["max"] < 1000


def test_parse_status_errors():
    out = read("wrk_plain_404_stdout.txt")
    s = load.parse_wrk_output(out)
    _check_shape(s)
    assert s["requests"] == _human_requests(out) > 0
    # every answer was a 404: all are status errors
    assert s["errors"]["status"] == s["requests"]
    assert re.search(rf"Non-2xx or 3xx responses: {s['errors']['status']}\b", out)
    assert s["errors"]["connect"] == 0
    assert s["errors"]["total"] == s["errors"]["status"]
    assert s["latency_ms"]["p50"] > 0


def test_parse_connect_errors():
    # 40 connections but only 24 file descriptors: wrk could not open 20 of them
    out = read("wrk_plain_connect_errors_stdout.txt")
    s = load.parse_wrk_output(out)
    _check_shape(s)
    assert s["errors"]["connect"] == 20
    assert re.search(r"Socket errors: connect 20, read 0, write 0, timeout 0", out)
    assert s["errors"]["total"] == 20
    assert s["requests"] == _human_requests(out) > 0   # the other 20 connections worked
    assert s["latency_ms"]["p99"] is not None


def test_parse_server_gone():
    # the server stopped listening after wrk's start-up probe: no requests at all,
    # refused connections appear as write errors
    out = read("wrk_get_user_refused_stdout.txt")
    s = load.parse_wrk_output(out)
    _check_shape(s)
    assert s["requests"] == 0
    assert s["requests_per_sec"] == 0
    assert s["bytes"] == 0
    assert s["errors"]["write"] > 0
    assert re.search(rf"Socket errors: connect 0, read 0, write {s['errors']['write']}\b", out)
    assert s["errors"]["total"] == s["errors"]["write"]
    # no requests, no latency: None rather than wrk's placeholder numbers
    assert all(v is None for v in s["latency_ms"].values())


def test_parse_timeouts():
    # answers took 1.5 s with --timeout 1s: counted as requests AND as timeout errors,
    # and (being beyond the timeout) not in the latency statistics
    out = read("wrk_to_json_timeouts_stdout.txt")
    s = load.parse_wrk_output(out)
    _check_shape(s)
    assert s["requests"] == _human_requests(out) > 0
    assert s["errors"]["timeout"] == s["requests"]
    assert re.search(rf"timeout {s['errors']['timeout']}\b", out)
    assert all(v is None for v in s["latency_ms"].values())


def test_parse_missing_line_unable_to_connect():
    out = read("wrk_unable_to_connect_stdout.txt")
    err = read("wrk_unable_to_connect_stderr.txt")
    assert "unable to connect" in err
    with pytest.raises(LoadError) as exc:
        load.parse_wrk_output(out, err)
    assert "WRK_JSON" in str(exc.value)
    assert "unable to connect" in str(exc.value)   # stderr tail is included


def test_parse_missing_line_human_report_only():
    # wrk's human report (script without our done()) is never parsed
    human = "\n".join(l for l in read("wrk_plain_404_stdout.txt").splitlines()
                      if not l.startswith("WRK_JSON"))
    with pytest.raises(LoadError, match="no WRK_JSON"):
        load.parse_wrk_output(human)
    with pytest.raises(LoadError, match="no WRK_JSON"):
        load.parse_wrk_output("")


def test_parse_malformed_line():
    with pytest.raises(LoadError, match="malformed"):
        load.parse_wrk_output("WRK_JSON {not json\n")
    with pytest.raises(LoadError, match="lacks a field"):
        load.parse_wrk_output('WRK_JSON {"requests": 1}\n')


def test_parse_uses_json_not_text():
    line = ('WRK_JSON {"bytes":100,"duration_us":2000000,"errors":{"connect":1,"read":2,'
            '"status":3,"timeout":4,"write":5},"latency_us":{"max":9000,"mean":1500.5,"min":100,'
            '"p50":1000,"p75":2000,"p90":3000,"p99":8000,"p99_9":8500,"stdev":10},"requests":50}')
    s = load.parse_wrk_output("  10 requests in 1.00s\n" + line + "\n")
    assert s["requests"] == 50
    assert s["duration_s"] == 2.0
    assert s["requests_per_sec"] == 25.0
    assert s["latency_ms"] == {"max": 9.0, "mean": 1.5005, "min": 0.1, "p50": 1.0, "p75": 2.0,
                               "p90": 3.0, "p99": 8.0, "p99_9": 8.5, "stdev": 0.01}
    assert s["errors"] == {"connect": 1, "read": 2, "status": 3, "timeout": 4, "write": 5,
                           "lost": 0, "total": 15}
    assert s["sent"] is None      # no per-thread counts in this line: nothing invented


def test_recorded_json_has_per_thread_stats():
    data = load._find_json(read("wrk_to_json_200_stdout.txt"))
    assert [t["index"] for t in data["threads"]] == [1, 2]
    assert sum(t["sent"] for t in data["threads"]) >= data["requests"]
    assert data["thread_rps"]["mean"] > 0


# --------------------------------------------------------------------------- wrk itself

def test_require_wrk_missing(monkeypatch):
    from bench.infra.host import LOCAL
    monkeypatch.setattr(LOCAL, "which", lambda name: None)
    with pytest.raises(LoadError, match="apt-get install wrk"):
        load.require_wrk()
    with pytest.raises(LoadError, match="apt-get install wrk"):
        load.run_wrk("plain", "http://127.0.0.1:1", LoadSettings(1, 1, 1))


@needs_wrk
def test_wrk_version():
    assert re.match(r"wrk \S*4\.", load.wrk_version())


@needs_wrk
def test_scripts_requests_are_deterministic_and_per_thread(tmp_path):
    """The Lua scripts: token on every request, per-thread seeds, determinism."""
    def dump(test: str, seed: int, sub: str) -> list[str]:
        d = tmp_path / sub
        d.mkdir()
        s = LoadSettings(threads=2, connections=2, duration_s=1, seed=seed, token="s3cret")
        env = dict(os.environ, BENCH_WRK_DUMP_DIR=str(d))
        with http_server(None, with_endpoints=False) as url:
            proc = subprocess.run(load.wrk_command(test, url, s), capture_output=True,
                                  text=True, env=env, timeout=30)
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        return [(d / f"thread{i}.txt").read_bytes().decode() for i in (1, 2)]

    def same(a: str, b: str) -> bool:
        """The requests both dumps hold are the same: a thread dumps its first 1000, and on
        a loaded machine it may send fewer in the second (the dump is then a prefix). The
        Host line names the server's port, which may differ between two dumps (the first
        free port of LIVE_PORTS: another test, or TIME_WAIT, may hold the usual one)."""
        def requests(dump: str) -> list[str]:
            return re.sub(r"\r\nHost: [^\r]*", "", dump).split("\n=====\n")
        ra, rb = requests(a), requests(b)
        n = min(len(ra), len(rb)) - 1          # the last one may be cut short
        return n >= 50 and ra[:n] == rb[:n]

    t1, t2 = dump("update user", 7, "a")
    again = dump("update user", 7, "b")
    other = dump("update user", 8, "c")
    assert same(t1, again[0]) and same(t2, again[1])   # same seed, same requests
    assert not same(t1, t2)                             # threads differ
    assert not same(other[0], t1)                       # the run seed matters
    reqs = [r for r in t1.split("\n=====\n") if r]
    assert 50 <= len(reqs) <= 1000
    ids = set()
    for r in reqs:
        head, body = r.split("\r\n\r\n", 1)
        lines = head.split("\r\n")
        m = re.fullmatch(r"PATCH /user/(\d+)/ HTTP/1\.1", lines[0])
        assert m and 1 <= int(m.group(1)) <= 10000
        ids.add(int(m.group(1)))
        assert "token: s3cret" in lines
        assert "Content-Type: application/json" in lines
        assert f"Content-Length: {len(body)}" in lines
        assert re.fullmatch(r'\{"username": "[A-Za-z0-9]{8,16}", '
                            r'"email": "[A-Za-z0-9]{8,16}@example\.com"\}', body)
    assert len(ids) > 0.9 * len(reqs)

    for test, pattern in (
        ("get user", r"GET /user/(\d+)/ HTTP/1\.1"),
        ("plain", r"GET /plain/\?param1=[A-Za-z0-9]{4,12}&param2=[A-Za-z0-9]{4,12}"
                  r"&param3=[A-Za-z0-9]{4,12} HTTP/1\.1"),
        ("to json", r"GET /to_json/\?param1=[A-Za-z0-9]{4,12}&param2=[A-Za-z0-9]{4,12}"
                    r"&param3=[A-Za-z0-9]{4,12} HTTP/1\.1"),
    ):
        first, _ = dump(test, 1, test.replace(" ", "_"))
        for r in (r for r in first.split("\n=====\n") if r):
            lines = r.split("\r\n")
            assert re.fullmatch(pattern, lines[0]), lines[0]
            assert "token: s3cret" in lines
            assert not any(l.startswith("Content-Length") for l in lines)


@needs_wrk
def test_scripts_do_not_define_response():
    for path in load.SCRIPTS_DIR.glob("*.lua"):
        assert not re.search(r"^\s*function\s+response\b|\bresponse\s*=", path.read_text(), re.M), path


@needs_wrk
def test_run_wrk_live():
    settings = LoadSettings(threads=1, connections=2, duration_s=1, timeout_s=2, seed=3)
    with http_server(None, with_endpoints=True) as url:
        res = load.run_wrk("plain", url, settings)
    assert res.exit_code == 0
    assert res.summary["requests"] > 0
    assert res.summary["errors"]["total"] == 0
    assert res.client_cpu_s > 0
    assert 0.9 < res.wall_s < 10
    assert res.command[0].endswith("wrk") and res.command[-3:] == ["--", "hardcoded_token", "3"]
    assert res.raw["requests"] == res.summary["requests"]


@needs_wrk
def test_run_wrk_kills_a_hung_wrk(monkeypatch):
    monkeypatch.setattr(load, "KILL_GRACE_S", -0.5)     # deadline 0.5 s into a 1 s run
    settings = LoadSettings(threads=1, connections=1, duration_s=1)
    with http_server(None, with_endpoints=True) as url:
        with pytest.raises(LoadError, match="did not finish"):
            load.run_wrk("plain", url, settings)


@needs_wrk
def test_run_wrk_keyboard_interrupt_kills_wrk():
    started = []

    def interrupt(pid):            # Ctrl-C while wrk runs
        started.append(pid)
        time.sleep(0.3)
        raise KeyboardInterrupt

    settings = LoadSettings(threads=1, connections=1, duration_s=30)
    with http_server(None, with_endpoints=True) as url:
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            load.run_wrk("plain", url, settings, on_start=interrupt)
    assert time.monotonic() - t0 < 10
    with pytest.raises(ProcessLookupError):    # killed and reaped, not a zombie
        os.kill(started[0], 0)


@needs_wrk
def test_run_wrk_unable_to_connect():
    settings = LoadSettings(threads=1, connections=1, duration_s=1)
    t0 = time.monotonic()
    with pytest.raises(LoadError, match="unable to connect"):
        load.run_wrk("get user", f"http://127.0.0.1:{PORT_CLOSED}", settings)
    assert time.monotonic() - t0 < 10


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    else:
        sys.exit(pytest.main([__file__, "-q"]))


@needs_wrk
def test_the_suite_scripts_send_their_path_with_n(tmp_path):
    """queries, updates and cached carry n=N as the case's level; fortunes has none; a
    suite script without n refuses to start instead of sending a wrong path."""
    for test, n, line in (("queries", 20, "GET /queries/?n=20 HTTP/1.1"),
                          ("updates", 1, "GET /updates/?n=1 HTTP/1.1"),
                          ("cached", 500, "GET /cached/?n=500 HTTP/1.1"),
                          ("fortunes", None, "GET /fortunes/ HTTP/1.1")):
        d = tmp_path / test
        d.mkdir()
        s = LoadSettings(threads=1, connections=1, duration_s=1, token="t", n=n)
        with http_server(None, with_endpoints=False) as url:
            proc = subprocess.run(load.wrk_command(test, url, s), capture_output=True,
                                  text=True, timeout=30,
                                  env=dict(os.environ, BENCH_WRK_DUMP_DIR=str(d)))
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        requests = [r for r in (d / "thread1.txt").read_bytes().decode().split("\n=====\n") if r]
        assert {r.split("\r\n")[0] for r in requests} == {line}
        assert "token: t" in requests[0].split("\r\n")
    s = LoadSettings(threads=1, connections=1, duration_s=1, token="t")
    with http_server(None, with_endpoints=False) as url:
        proc = subprocess.run(load.wrk_command("queries", url, s), capture_output=True,
                              text=True, timeout=30)
    assert "n=N" in proc.stdout + proc.stderr
