"""The HTTP workloads on numbers and text alone (bench.core.workloads): their sizes and
encodings as cases, what a run may combine with them, the generators that send them,
the static files the harness writes (bench.infra.static_files) and what many connections
need of the machine (bench.infra.limits)."""
from __future__ import annotations

import dataclasses
import hashlib
import resource

import pytest

from bench.core import workloads
from bench.core.manifest import discover
from bench.core.plan import not_supported, plan
from bench.core.settings import SelectionError, Settings, validate
from bench.infra import limits, static_files
from bench.load import wrk
from bench.load.h2load import paths
from bench.load.oha_requests import url_regex
from bench.paths import SERVERS_DIR

SPECS = discover([SERVERS_DIR])


def test_sized_tests_are_a_case_per_size_with_the_size_in_key_id_and_title():
    cases = plan(Settings(servers=("gin",), tests=("static", "upload", "delay"),
                          ceiling=False), SPECS)
    got = [(c.test, c.size) for c in cases]
    assert got == [("static", "1k"), ("static", "64k"), ("static", "1m"), ("upload", "64k"),
                   ("upload", "1m"), ("delay", None)]
    static = cases[1]
    assert static.key()["size"] == "64k" and static.id.endswith("/static_64k@c64")
    assert static.title == "static 64k" and "size" not in cases[-1].key()
    assert [c.size for c in plan(Settings(servers=("gin",), tests=("static",), sizes=("1m",),
                                          ceiling=False), SPECS)] == ["1m"]


def test_what_the_workloads_may_be_combined_with():
    ids = list(SPECS)
    for settings, words in (
            (Settings(tests=("static",), sizes=("2k",)), "--size 2k: the sizes are 32b, 1k, 4k, 64k, 1m"),
            (Settings(tests=("plain",), sizes=("1k",)), "--size applies to static, upload"),
            (Settings(tests=("static",), sizes=("1k", "1k")), "lists a value twice"),
            (Settings(tests=("upload",), generators=("oha",)), "oha sends one body file"),
            (Settings(tests=("delay",), generators=("k6",)), "k6 has no script for it yet"),
            (Settings(tests=("to json",), compression=("zstd",)), "unknown --compression zstd"),
            (Settings(tests=("plain",), compression=("gzip",)), "applies to to json and static"),
            (Settings(tests=("to json",), compression=("gzip",), generators=("k6",)),
             "its scripts send no Accept-Encoding"),
            (Settings(tests=("upload",), protocols=("h2",)), "leave out --tests upload")):
        with pytest.raises(SelectionError, match=words):
            validate(settings, ids)
    validate(Settings(tests=("static", "delay"), generators=("wrk", "oha"),
                      compression=("gzip", "br")), ids)
    validate(Settings(tests=("static", "delay"), protocols=("h1", "h2")), ids)


def test_compression_is_a_case_per_encoding_beside_the_uncompressed_one():
    specs = dict(SPECS)
    specs["fasthttp"] = dataclasses.replace(SPECS["fasthttp"],
                                            unsupported={"compression": "not here"})
    specs["gin"] = dataclasses.replace(SPECS["gin"], unsupported={})   # as if it had br
    settings = Settings(servers=("gin", "fasthttp"), tests=("plain", "to json"),
                        compression=("gzip", "br"), ceiling=False)
    cases = plan(settings, specs)
    encodings = {(c.variant.server.id, c.test): [] for c in cases}
    for c in cases:
        encodings[(c.variant.server.id, c.test)].append(c.load.encoding)
    assert encodings[("gin", "to json")] == ["identity", "gzip", "br"]
    assert encodings[("gin", "plain")] == ["identity"]
    assert encodings[("fasthttp", "to json")] == ["identity"]
    gzip = next(c for c in cases if c.load.encoding == "gzip")
    assert gzip.key()["encoding"] == "gzip" and gzip.id.endswith("/to_json@c64@gzip")
    assert "encoding" not in cases[0].key()
    assert not_supported(settings, specs) == [
        {"server": "fasthttp", "test": "compression", "reason": "not here"}]
    # one encoding only: gzip measured, br left out and shown
    specs["gin"] = dataclasses.replace(SPECS["gin"], unsupported={"compression.br": "gzip only"})
    assert [c.load.encoding for c in plan(settings, specs) if c.variant.server.id == "gin"
            and c.test == "to json"] == ["identity", "gzip"]
    assert {"server": "gin", "test": "compression.br", "reason": "gzip only"} in \
        not_supported(settings, specs)


def test_the_generators_ask_for_the_workloads_as_the_contract_says():
    s = wrk.LoadSettings(threads=1, connections=1, duration_s=1, size="64k",
                         headers=("Accept-Encoding: br",))
    argv = wrk.wrk_command("static", "http://h:1", s)
    assert argv[-1] == "size=64k" and argv[argv.index("-H") + 1] == "Accept-Encoding: br"
    assert paths("static", 1, size="1m") == ["/static/1m.txt"]
    assert paths("delay", 1) == ["/delay/"]
    assert url_regex("static", "http://h:1", size="1k") == "http://h:1/static/1k.txt"
    with pytest.raises(ValueError, match="oha cannot send the test 'upload'"):
        url_regex("upload", "http://h:1")


def test_the_static_files_are_the_same_bytes_everywhere_and_written_once(tmp_path):
    folder = static_files.ensure(tmp_path)
    for name, (size, digest) in static_files.catalog().items():
        data = (folder / name).read_bytes()
        assert len(data) == size and hashlib.sha256(data).hexdigest() == digest
    assert static_files.content(1024) == static_files.content(1024)
    assert (tmp_path / static_files.OUTSIDE).read_bytes() == static_files.OUTSIDE_CONTENT
    (folder / "1k.txt").write_bytes(b"tampered")
    static_files.ensure(tmp_path)
    assert (folder / "1k.txt").read_bytes() == static_files.content(1024)
    # text that compresses as text does: neither random bytes nor one word repeated
    import gzip
    ratio = len(gzip.compress(static_files.content(65536))) / 65536
    assert 0.1 < ratio < 0.5


def test_many_connections_are_refused_where_the_machine_cannot_hold_them(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4096, 4096))
    monkeypatch.setattr(limits, "sysctl", lambda name: "32768\t60999".replace("\t", " ")
                        if name == "net.ipv4.ip_local_port_range" else None)
    assert limits.problems(3000) == []
    files, = limits.problems(10_000)
    assert "needs 11,024 open files" in files and "may open 4,096" in files
    assert "gives 28,232" in limits.problems(40_000)[1]
