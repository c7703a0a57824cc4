"""Docker-mode databases on a [database] host go through Docker's own SSH transport and
publish their ports on that host's address (no Docker engine is needed to check this:
nothing is started here)."""
import os

from bench.infra import databases


class FarHost:          # what provider() reads of a RemoteHost
    name, address, user, port = "database (bench@10.0.0.4)", "10.0.0.4", "bench", 2222
    remote = True


def test_docker_on_another_host_uses_its_ssh_transport_and_address():
    prov = databases.provider("docker", ["postgres", "mysql"], host=FarHost(),
                              listen_address="10.0.0.4", ports={"postgres": 15432})
    env = prov.compose_env()
    assert env["DOCKER_HOST"] == "ssh://bench@10.0.0.4:2222"
    assert env["BENCH_DB_BIND"] == "10.0.0.4" and env["BENCH_PG_PORT"] == "15432"
    assert prov.endpoint("postgres").host == "10.0.0.4"


def test_docker_here_publishes_on_loopback_without_a_transport():
    prov = databases.DockerProvider(["postgres"])
    env = prov.compose_env()
    assert "DOCKER_HOST" not in env or env["DOCKER_HOST"] == os.environ.get("DOCKER_HOST")
    assert env["BENCH_DB_BIND"] == "127.0.0.1" and prov.endpoint("postgres").host == "127.0.0.1"
