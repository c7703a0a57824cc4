"""Containers: the Docker engine and compose the databases of `--db-mode docker` run on,
and the database images.

    engine.py   whether an engine answers, its and compose's versions, the compose
                command (v2, as a docker plugin or standalone), and starting and stopping
                an engine for the test suite (`dockerd --iptables=false`)
    images.py   which images the databases run in (the official postgres:15 / mysql:8.4
                where a registry answers, else images built here from the operating
                system's packages: a debootstrap base image, images/<engine>/Dockerfile),
                built once and cached, and what a result records of them
    cgroup.py   a container's processes as this machine sees them (its cgroup and its
                shim), so the database's CPU, memory and sockets are measured as in
                local mode

bench/infra/databases/docker.py is the provider that uses them.
"""
