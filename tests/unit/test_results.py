import json

import pytest

from bench import results


def test_document_validates_and_round_trips(sample_doc, tmp_path):
    results.validate(sample_doc)
    run_dir = tmp_path / sample_doc["run_id"]
    results.save(sample_doc, run_dir)
    assert results.load(run_dir) == sample_doc
    assert not list(run_dir.glob("*.tmp"))


def test_wrong_schema_version_is_refused(sample_doc, tmp_path):
    sample_doc["schema_version"] = 99
    (tmp_path / "results.json").write_text(json.dumps(sample_doc))
    with pytest.raises(results.ResultsError, match="schema version 99"):
        results.load(tmp_path)


def test_a_case_missing_its_status_is_refused(sample_doc):
    del sample_doc["cases"][0]["status"]
    with pytest.raises(results.ResultsError, match="cases/0"):
        results.validate(sample_doc)


def test_latest_run_is_the_newest_run_id(sample_doc, tmp_path):
    for run_id in ("20260101T000000Z-a", "20260301T000000Z-a", "20260201T000000Z-a"):
        results.save({**sample_doc, "run_id": run_id}, tmp_path / run_id)
    assert results.latest_run(tmp_path).name == "20260301T000000Z-a"
    with pytest.raises(results.ResultsError, match="no runs"):
        results.latest_run(tmp_path / "empty")
