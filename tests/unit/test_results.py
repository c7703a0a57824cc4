import json

import pytest

from bench.report import formats, tables
from bench.storage import migrate, results


def test_document_validates_and_round_trips(sample_doc, tmp_path):
    results.validate(sample_doc)
    run_dir = tmp_path / sample_doc["run_id"]
    results.save(sample_doc, run_dir)
    assert results.load(run_dir) == sample_doc
    assert not list(run_dir.glob("*.tmp"))


def test_unknown_schema_version_is_refused(sample_doc, tmp_path):
    sample_doc["schema_version"] = 99
    (tmp_path / "results.json").write_text(json.dumps(sample_doc))
    with pytest.raises(results.ResultsError, match="schema version 99.*reads versions 1, 2, 3"):
        results.load(tmp_path)


def test_a_document_breaking_the_schema_is_refused_when_saved(sample_doc, tmp_path):
    del sample_doc["cases"][0]["samples"][0]["status"]
    with pytest.raises(results.ResultsError, match="cases/0/samples/0"):
        results.save(sample_doc, tmp_path / "run")
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_case_that_changed_after_a_save_is_checked_again_and_named(sample_doc, tmp_path):
    results.save(sample_doc, tmp_path / "run")          # every case passed once
    last = len(sample_doc["cases"]) - 1
    sample_doc["cases"][last]["samples"][0]["status"] = 7
    with pytest.raises(results.ResultsError, match=f"cases/{last}/samples/0/status"):
        results.save(sample_doc, tmp_path / "run")


@pytest.mark.parametrize("version", migrate.READABLE)
def test_the_schema_constrains_cases_only_one_by_one(version):
    """What lets a save check only the cases that changed (results.validate): no
    constraint over the list as a whole (minItems, uniqueItems, contains, ...)."""
    assert set(results.schema(version)["properties"]["cases"]) == {"type", "items"}


def test_latest_run_is_the_newest_run_id(sample_doc, tmp_path):
    for run_id in ("20260101T000000Z-a", "20260301T000000Z-a", "20260201T000000Z-a"):
        results.save({**sample_doc, "run_id": run_id}, tmp_path / run_id)
    assert results.latest_run(tmp_path).name == "20260301T000000Z-a"
    with pytest.raises(results.ResultsError, match="no runs"):
        results.latest_run(tmp_path / "empty")


def test_a_version_1_document_loads_as_the_current_version(v1_doc, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(v1_doc))
    doc = results.load(tmp_path)
    results.validate(doc)                       # the migrated document is a valid v3 one
    assert doc["schema_version"] == 3 and doc["migrated_from"] == 1
    assert len(doc["cases"]) == len(v1_doc["cases"])
    fast = next(c for c in doc["cases"] if c["id"] == "fast/postgres/raw/get_user@c64")
    assert fast["key"]["connections"] == 64 and len(fast["samples"]) == 1
    sample = fast["samples"][0]
    assert sample["summary"] == next(c for c in v1_doc["cases"]
                                     if c["id"] == "fast/postgres/raw/get_user")["summary"]
    assert sample["generator"]["name"] == "wrk"
    assert sample["generator"]["connections_as_asked"] is True
    assert sample["resources"]["server"]["memory_kind"] == "rss"
    assert migrate.to_current(doc) == doc


def test_a_version_1_document_renders(v1_doc, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(v1_doc))
    doc = results.load(tmp_path)
    md = formats.to_markdown(tables.build_tables(doc), doc)
    assert "| get user    | fast             | postgres   | False | 9,000 " in md
    assert "verification failed: user fields: GET /user/42/: username differs" in md
    assert "invalid: 3.00% of requests failed" in md
    assert "One sample per case" in md
