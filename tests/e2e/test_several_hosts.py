"""Client, server and database on three "machines": network namespaces of this host, each
with its own address and sshd (tests/netns). The harness reaches them only over SSH; the
namespaces share this machine's filesystem, so each "machine" finds the project set up
at the same path (its workdir), as a user who cloned it and ran `make setup` there."""
from __future__ import annotations

import os
import time

import psutil
import pytest

from bench.paths import REPO
from bench.storage import results
from tests.e2e.test_faults import Harness, nothing_left, stored
from tests.netns.testbed import netns_testbed  # noqa: F401 - the module's fixture

from tests.conftest import E2E_PG_PORT, E2E_PORT, NETNS
pytestmark = [pytest.mark.e2e, NETNS]


def hosts_files(bed, tmp_path):
    lines = []
    for role, node in (("client", "client"), ("server", "server"), ("database", "db")):
        lines += [f"[{role}]", f'address = "{bed.nodes[node].address}"', 'user = "root"',
                  f'workdir = "{REPO}"', ""]
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("\n".join(lines))
    config = tmp_path / "ssh_config"      # the test bed's key and known hosts only
    config.write_text(f"Host {bed.subnet}.*\n  IdentityFile {bed.client_key}\n"
                      f"  UserKnownHostsFile {bed.known_hosts}\n  IdentitiesOnly yes\n")
    return hosts, config


def namespace_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def where(pattern) -> dict[int, int]:
    """pid -> network namespace inode of the processes whose command line matches."""
    found = {}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if pattern(cmd, proc):
            found[proc.info["pid"]] = namespace_of(proc.info["pid"])
    return found


def server_env(proc) -> bool:
    try:
        return proc.environ().get("BENCH_PORT") == str(E2E_PORT)
    except psutil.Error:
        return False


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_client_server_and_database_on_three_hosts(netns_testbed, tmp_path):
    bed = netns_testbed
    hosts, config = hosts_files(bed, tmp_path)
    run = Harness("--hosts", str(hosts), "--ssh-config", str(config), "--servers", "gin",
                  "--tests", "get_user,plain", "--databases", "postgres", "--orm", "raw",
                  "--repeat", "1", "--duration", "2", "--warmup", "0", "--no-ceiling",
                  "--order-seed", "2", "--results-dir", str(tmp_path / "results"))
    run.wait_for("gin/postgres/raw/get_user@c64 round 1: measure")
    inode = {role: node.net_inode() for role, node in bed.nodes.items()}
    # wrk is started on the client host through its agent: found once it runs
    deadline = time.monotonic() + 60
    while True:
        wrk = where(lambda cmd, p: cmd.startswith(("wrk ", "/usr/bin/wrk ")) and str(E2E_PORT) in cmd)
        if wrk or time.monotonic() > deadline or run.proc.poll() is not None:
            break
        time.sleep(0.05)
    servers = where(lambda cmd, p: server_env(p))
    postgres = where(lambda cmd, p: "postgres" in cmd and f"-p {E2E_PG_PORT}" in cmd)
    assert wrk and set(wrk.values()) == {inode["client"]}, (wrk, inode)
    assert servers and set(servers.values()) == {inode["server"]}, (servers, inode)
    assert postgres and set(postgres.values()) == {inode["db"]}, (postgres, inode)
    assert run.finish(timeout=300) == 0, run.output[-4000:]

    doc = stored(tmp_path / "results")
    assert doc["status"] == "complete"
    assert all(c["status"] == "ok" for c in doc["cases"]), [c["reason"] for c in doc["cases"]]
    topology = doc["topology"]
    assert topology["roles"] == {"client": f"root@{bed.nodes['client'].address}",
                                 "server": f"root@{bed.nodes['server'].address}",
                                 "database": f"root@{bed.nodes['db'].address}"}
    assert set(topology["hosts"]) == {"client", "server", "database"}
    # each remote checkout (the workdir: this repository) was pinned to the harness's code
    pinned = {k: doc["environment"]["git"][k] for k in ("commit", "dirty", "diff_sha256")}
    assert all(topology["hosts"][role]["git"] == pinned for role in topology["hosts"])
    assert topology["network"]["client->server"]["tcp_connect_ms_median"] > 0
    sample = doc["cases"][0]["samples"][0]
    assert sample["resources"]["server"]["cpu_s"] > 0 and sample["resources"]["client"]["cpu_s"] > 0
    assert doc["databases"]["postgres"]["host"] == bed.nodes["db"].address
    tables = (results.latest_run(tmp_path / "results") / "tables.md").read_text()
    assert "## get user" in tables and "## plain" in tables
    for node in bed.nodes.values():                     # nothing left on any "machine"
        assert not node.others(), (node.role, node.others())
    nothing_left()


NO_SFTP_PORT = 2203           # a second sshd on the server's node, without SFTP


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_server_host_without_sftp_loses_its_logs_never_its_cases(netns_testbed, tmp_path):
    """The fault found by a user: with an sshd that offers no SFTP subsystem, fetching the
    first server log marked the host unreachable and every following case failed. Now
    each log that cannot be fetched is a note in the run's copy of it, and every case is
    measured."""
    bed = netns_testbed
    node = bed.nodes["server"]
    sshd = bed.extra_sshd(node, NO_SFTP_PORT, sftp=False)
    _, config = hosts_files(bed, tmp_path)
    hosts = tmp_path / "no-sftp.toml"
    hosts.write_text(f'[server]\naddress = "{node.address}"\nuser = "root"\n'
                     f'port = {NO_SFTP_PORT}\nworkdir = "{REPO}"\n')
    try:
        run = Harness("--hosts", str(hosts), "--ssh-config", str(config),
                      "--servers", "gin", "--tests", "plain,to_json", "--repeat", "1",
                      "--duration", "1", "--warmup", "0", "--no-ceiling", "--order-seed", "2",
                      "--results-dir", str(tmp_path / "results"))
        assert run.finish(timeout=300) == 0, run.output[-4000:]
    finally:
        sshd.kill()
        sshd.wait(timeout=5)
    doc = stored(tmp_path / "results")
    assert doc["status"] == "complete"
    assert [c["status"] for c in doc["cases"]] == ["ok", "ok"], [c["reason"] for c in doc["cases"]]
    run_dir = results.latest_run(tmp_path / "results")
    for case in doc["cases"]:
        log = (run_dir / case["samples"][0]["log"]).read_text()
        assert "could not be fetched" in log and "SFTP" in log, log
        assert any("could not be fetched" in w for w in case["samples"][0]["warnings"])
    assert not node.others(), node.others()
    nothing_left()
