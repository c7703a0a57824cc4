"""Stored runs of every schema version render byte-identical text after a change of the
code: the tables in each format, the rate tables and a comparison (tests/golden/)."""
import pytest

from tests.golden.render import FIXTURES, render


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_stored_run_renders_as_before(fixture):
    rendered = render(fixture / "results.json")
    expected = {p.name: p.read_text() for p in (fixture / "expected").iterdir()}
    assert sorted(rendered) == sorted(expected)
    for name, text in rendered.items():
        assert text == expected[name], f"{fixture.name}/{name} renders differently"


def test_there_is_a_fixture_of_each_schema_version():
    import json
    versions = {json.loads((f / "results.json").read_text())["schema_version"] for f in FIXTURES}
    assert {1, 2} <= versions
