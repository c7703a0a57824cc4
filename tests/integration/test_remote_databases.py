"""The throwaway databases on another host: PostgreSQL and MariaDB started by a
ThrowawayProvider through a RemoteHost in the test bed's "db" namespace (tests/netns), listening
on that namespace's address, used from this (the root) namespace like a client on
another machine.

The namespaces share this machine's filesystem and pids, so the test checks from outside
what happened over there: in which network namespace the servers ran, that nothing of
them is left and that their data folder is gone.
"""
from __future__ import annotations

import dataclasses
import os
import time

import pytest

from bench.core import dataset
from bench.infra import databases as provision, db
from bench.infra.resources import ResourceSampler
from tests.netns.testbed import netns_testbed  # noqa: F401 - the module's fixture

from tests.conftest import NETNS

# network namespaces of fixed names and ports: one xdist worker at a time
pytestmark = [pytest.mark.integration, NETNS]

# inside the db namespace: no other listener there, and no clash with this machine's ports
PORTS = {"postgres": 18781, "mysql": 18782}


def net_inode(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def net_inodes(pids: list[int]) -> set[int]:
    """The network namespaces of those of `pids` still running: a database's process
    list holds short-lived backends too (the restore's, autovacuum's), which may exit
    between the listing and the look."""
    found = set()
    for pid in pids:
        try:
            found.add(net_inode(pid))
        except FileNotFoundError:
            continue
    return found


@pytest.fixture
def db_host(netns_testbed):
    host = netns_testbed.remote_host("db")
    yield host
    assert host.close() is None


def started_there(node, host) -> list[int]:
    """What runs in the node's namespace besides sshd and the host's agent."""
    return [pid for pid in node.others() if pid != host.agent_pid]


def test_databases_on_another_host_serve_this_one_and_leave_nothing(netns_testbed, db_host):
    node = netns_testbed.nodes["db"]
    prov = provision.ThrowawayProvider(["postgres", "mysql"], PORTS, host=db_host,
                                   listen_address=node.address)
    root = None
    try:
        t0 = time.monotonic()
        endpoints = prov.start()
        print(f"start of both on {db_host.name}: {time.monotonic() - t0:.2f} s")
        root = prov.root
        assert root.is_dir() and str(root).startswith("/tmp/webbench-db-")
        for engine, ep in endpoints.items():
            assert (ep.host, ep.port) == (node.address, PORTS[engine])
            # a client in another network namespace: restore, then the contract's rows
            seconds = db.restore(ep)
            print(f"{engine}: restore from the root namespace took {seconds * 1000:.0f} ms")
            assert db.fetch_users(ep) == dataset.all_users()
            # clients from other hosts log in with the password, not by trust
            with pytest.raises(db.ConnectError):
                db.connect(dataclasses.replace(ep, password="not-the-password")).close()
            pids = prov.pids(engine)
            assert pids, engine
            assert net_inodes(pids) == {node.net_inode()}, engine
            assert net_inode(os.getpid()) != node.net_inode()
            assert prov.alive(engine)
        assert not db_host.port_is_free(PORTS["postgres"], node.address)

        # the resource sampler reads the database's processes through the host: the CPU
        # a backend (connected before, so seen from the start) burns there, and memory
        with db.connect(endpoints["postgres"]) as conn:
            with ResourceSampler({"database": (lambda: prov.pids("postgres"), db_host)}) \
                    as sampler:
                conn.execute("SELECT count(*) FROM generate_series(1, 3000000)").fetchone()
                time.sleep(0.3)
        figures = sampler.figures()["database"]
        print(f"postgres, sampled through {db_host.name}: {figures}")
        assert figures["processes"] >= 2 and figures["cpu_s"] > 0.1
        assert figures["memory_peak_mb"] > 0 and figures["memory_kind"] == "pss"

        # a dead database there is noticed and restarted there, on the same port
        old = prov.server("postgres")
        main = db_host.process(prov.pids("postgres")[0])
        assert db_host.kill(main)
        assert not prov.alive("postgres")
        t0 = time.monotonic()
        assert prov.restart("postgres") == endpoints["postgres"]
        print(f"postgres: restart on {db_host.name} took {time.monotonic() - t0:.2f} s")
        assert prov.server("postgres") is not old and prov.alive("postgres")
        assert main.pid not in prov.pids("postgres")
        assert net_inodes(prov.pids("postgres")) == {node.net_inode()}
        assert db.scalar(endpoints["postgres"], "SELECT COUNT(*) FROM users") == dataset.ROW_COUNT
    finally:
        t0 = time.monotonic()
        problems = prov.stop()
        print(f"stop of both: {time.monotonic() - t0:.2f} s")
    assert problems == []
    assert root is not None and not root.exists()
    assert started_there(node, db_host) == []
    for port in PORTS.values():
        assert db_host.port_is_free(port, node.address)


def test_a_server_there_is_stopped_from_its_folder_alone(netns_testbed, db_host):
    """A ThrowawayServer that never held the remote server's process (as after a harness
    restart) finds it on that host from its data folder and stops it."""
    node = netns_testbed.nodes["db"]
    prov = provision.ThrowawayProvider(["postgres"], PORTS, host=db_host,
                                   listen_address=node.address)
    try:
        ep = prov.start()["postgres"]
        main = prov.server("postgres").main_process()
        assert main is not None and net_inode(main.pid) == node.net_inode()
        stranger = provision.ThrowawayServer("postgres", ep.port, prov.root, host=db_host,
                                         listen_address=node.address)
        stranger.spawned = True          # it knows the folder, not the process
        assert stranger.main_process() == main
        assert stranger.stop() == []
        assert not db_host.running([main]) and not prov.alive("postgres")
    finally:
        problems = prov.stop()
    assert problems == []
    assert not prov.root.exists()
    assert started_there(node, db_host) == []


def test_a_wildcard_listen_address_is_refused(db_host):
    with pytest.raises(provision.ProvisionError, match="names no host"):
        provision.ThrowawayProvider(["postgres"], PORTS, host=db_host, listen_address="0.0.0.0")
