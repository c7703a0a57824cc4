"""The database suite's pure parts of benchcommon (no database, no server):
    .venv/bin/python -m pytest -q servers/_pycommon
"""
import asyncio
import html

import jinja2
import pytest

from benchcommon import FORTUNES_TEMPLATE, TEMPLATE_DIR
from benchcommon.cache import UserCache
from benchcommon.contract import (EXTRA_FORTUNE, distinct_random_ids, parse_n, random_ids,
                                  random_username, with_extra_fortune)


@pytest.mark.parametrize("raw, n", [
    (None, 1), ("", 1), ("0", 1), ("abc", 1), ("-3", 1), ("1.5", 1), (" 5", 1), ("٣", 1),
    ("1", 1), ("20", 20), ("500", 500), ("501", 500), ("0007", 7), ("0000", 1),
    ("99999999999999999999", 500), ("9" * 5000, 500),
])
def test_parse_n(raw, n):
    assert parse_n(raw) == n


def test_ids():
    assert all(1 <= i <= 10_000 for i in random_ids(500))
    ids = distinct_random_ids(500)
    assert len(set(ids)) == 500 and ids == sorted(ids) and 1 <= ids[0] and ids[-1] <= 10_000
    name = random_username()
    assert name[0] == "u" and 1 <= int(name[1:]) <= 1_000_000


def test_fortunes_sorted_and_escaped():
    rows = [(2, '<script>alert("escape me")</script>'), (9, "フレームワーク"), (10, "Ünï"), (1, "Bench")]
    fortunes = with_extra_fortune(rows)
    assert [f.id for f in fortunes] == [2, 0, 1, 10, 9]          # code-point order
    assert EXTRA_FORTUNE in fortunes
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True)
    page = env.get_template(FORTUNES_TEMPLATE).render(fortunes=fortunes)
    assert "<script>" not in page and "\n" not in page
    assert page.startswith("<!DOCTYPE html><html><head><title>Fortunes</title></head><body>"
                           "<table><tr><th>id</th><th>message</th></tr><tr><td>2</td><td>&lt;script&gt;")
    assert html.unescape(page).count("<tr>") == 6 and page.endswith("</table></body></html>")


def test_cache_loads_each_id_once():
    loads = []

    async def load(user_id):
        loads.append(user_id)
        return {"user_id": user_id}

    cache = UserCache(load)
    first = asyncio.run(cache.get_many([3, 3, 7]))
    second = asyncio.run(cache.get_many([7, 3]))
    assert loads == [3, 7] and [u["user_id"] for u in first + second] == [3, 3, 7, 7, 3]
