"""A build of a server waits for its running servers (and other builds of it) on this
machine: the test suite's parallel workers share one build of each server."""
from types import SimpleNamespace

import pytest

from bench.infra import server as srv
from bench.infra.host import LOCAL


def spec(tmp_path):
    return SimpleNamespace(id="x", build=("true",), cache_dir=tmp_path, arm="")


def test_a_build_waits_for_the_running_server_and_goes_ahead_once_it_stopped(
        tmp_path, monkeypatch):
    monkeypatch.setattr(srv, "BUILD_LOCK_WAIT_S", 0.3)
    monkeypatch.setattr(srv, "template_values", lambda s, *a, **k: {"cache_dir": str(tmp_path)})
    with srv.in_use(spec(tmp_path), None, LOCAL):
        with pytest.raises(srv.ServerError, match="waited 0.3 s for another build of it"):
            with srv._build_lock("x", str(tmp_path), LOCAL):
                pass
        with srv.in_use(spec(tmp_path), None, LOCAL):    # servers share it with each other
            pass
    with srv._build_lock("x", str(tmp_path), LOCAL):      # stopped: the build goes ahead
        pass
