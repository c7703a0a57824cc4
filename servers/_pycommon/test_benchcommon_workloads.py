"""The HTTP workloads' shared parts of benchcommon (no framework, no server):
    .venv/bin/python -m pytest -q servers/_pycommon
Each framework's handlers are checked over HTTP by `run_bench.py verify --tests
static,upload,delay` (and `--compression`).
"""
import zlib

import pytest

from benchcommon.workloads import (DELAY_BODY, DELAY_SECONDS, ERR_TOO_LARGE, UPLOAD_LIMIT,
                                   Upload, compression_on, declared_too_large, static_dir)


def upload_answer(body: bytes) -> dict:
    upload = Upload()
    upload.add(body)
    return upload.answer()


def test_crc32_of_known_input():
    # the CRC-32 check value (IEEE 802.3 / zlib) of "123456789"
    assert upload_answer(b"123456789") == {"bytes": 9, "crc32": "cbf43926"}
    assert upload_answer(b"") == {"bytes": 0, "crc32": "00000000"}


def test_chunks_give_the_crc_of_the_whole_body():
    body = bytes(range(256)) * 1000
    upload = Upload()
    for i in range(0, len(body), 4096):
        assert upload.add(body[i:i + 4096])
    assert upload.answer() == {"bytes": len(body), "crc32": f"{zlib.crc32(body):08x}"}
    assert upload.answer()["crc32"] == upload.answer()["crc32"].lower()


def test_crc_keeps_leading_zeros():
    body = next(bytes([i, j]) for i in range(256) for j in range(256)
                if zlib.crc32(bytes([i, j])) < 0x10000000)
    crc = upload_answer(body)["crc32"]
    assert len(crc) == 8 and crc.startswith("0")


def test_the_limit_is_8_mib_inclusive():
    assert UPLOAD_LIMIT == 8 * 1024 * 1024
    at_limit = Upload()
    assert at_limit.add(b"\0" * UPLOAD_LIMIT) and not at_limit.too_large
    over = Upload()
    assert over.add(b"\0" * (UPLOAD_LIMIT - 1))
    assert not over.add(b"\0\0") and over.too_large      # 413, whatever the chunking
    assert "error" in ERR_TOO_LARGE


@pytest.mark.parametrize("header, too_large", [
    (None, False), ("", False), ("0", False), (str(UPLOAD_LIMIT), False),
    (str(UPLOAD_LIMIT + 1), True), ("9" * 40, True), ("-1", False), ("12a", False),
    (" 5", False), ("٣", False),
])
def test_declared_length(header, too_large):
    assert declared_too_large(header) is too_large


def test_the_delay():
    assert DELAY_BODY == "delayed 10 ms" and DELAY_SECONDS == 0.010


def test_environment():
    assert static_dir({}) is None and static_dir({"BENCH_STATIC_DIR": ""}) is None
    assert static_dir({"BENCH_STATIC_DIR": "/srv/files"}) == "/srv/files"
    assert compression_on({"BENCH_COMPRESSION": "1"})
    assert not compression_on({}) and not compression_on({"BENCH_COMPRESSION": "0"})
