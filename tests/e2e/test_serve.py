"""`run_bench.py serve --protocol h2` with a real server, as a user pokes at it: gin on its
own HTTP/2 listener (Go's crypto/tls and net/http; its build is cached after the first),
the curl commands run exactly as printed, then Ctrl-C."""
from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from bench.infra.host import LOCAL
from tests.conftest import WORKER_OFFSET
from tests.e2e.test_run_bench import REPO

# the everyday tier, as the HTTP/1.1 serve test (tests/e2e/test_run_bench.py): no other
# test runs serve's lines over TLS and HTTP/2
pytestmark = pytest.mark.e2e
# this test's own ports: the h2 listener, and gin's HTTP/1.1 on the one after it
PORT = 19281 + WORKER_OFFSET
READY_WITHIN_S = 600          # a first build of gin included; the wait ends at the line


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                out.append(process)
        except psutil.NoSuchProcess:
            pass
    return out


def run_printed(line: str) -> subprocess.CompletedProcess:
    return subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=30)


def test_serve_over_h2_prints_curl_commands_that_speak_http2_to_the_servers_own_listener():
    proc = subprocess.Popen([sys.executable, "run_bench.py", "serve", "gin", "--db", "none",
                             "--protocol", "h2", "--port", str(PORT)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # never a hang: a serve that does not get ready is stopped, which ends its output
    watchdog = threading.Timer(READY_WITHIN_S, proc.send_signal, [signal.SIGINT])
    watchdog.start()
    lines, tree, ca = [], [], None
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C stops"):
                break
        watchdog.cancel()
        text = "".join(lines)
        assert f"is ready at https://127.0.0.1:{PORT} (h2 on gin's own listener" in text, text
        assert f"the server itself, over HTTP/1.1: http://127.0.0.1:{PORT + 1}" in text
        tree = psutil.Process(proc.pid).children(recursive=True)
        ca = next(line.split(": ", 1)[1].strip() for line in lines
                  if line.startswith("the run's CA"))
        tried = [line.strip() for line in lines if line.startswith("  curl ")]
        ping = next(line for line in tried if line.endswith("/ping/"))
        plain = next(line for line in tried if "/plain/" in line)
        assert plain.startswith(f"curl -s --http2 --cacert {shlex.quote(ca)} ")
        assert any(line.startswith("  h2load ") for line in lines)
        # the status line names the protocol curl got: HTTP/2, over TLS
        head = run_printed(ping)
        assert head.returncode == 0 and head.stdout.startswith("HTTP/2 200"), head
        assert json.loads(head.stdout.split("\n\n", 1)[1]) == \
            {"server": "gin", "database": "none", "orm": False}
        # the contract's body (bench/verify/contract.py, check_plain)
        body = run_printed(plain)
        assert (body.returncode, body.stdout) == (0, "param1=a, param2=b, param3=c"), body
    finally:
        watchdog.cancel()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(lines) + out
    assert "stopping ..." in out
    assert tree and not still_running(tree)
    assert LOCAL.port_is_free(PORT) and LOCAL.port_is_free(PORT + 1)
    assert not Path(ca).exists()            # the run's certificates went with it
