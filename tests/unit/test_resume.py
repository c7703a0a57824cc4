"""What makes a stored run impossible to continue, and how --rerun-failed keeps history:
pure functions of stored documents."""
from bench.storage import resume
from tests.unit.conftest import v2_case, v2_document


def env(commit="abc", dirty=False, diff=None, machine="m1"):
    return {"machine_id": machine, "git": {"commit": commit, "dirty": dirty, "diff_sha": diff}}


def stored(**kw):
    doc = v2_document([v2_case("fast", "postgres", False, "get user", rps=(9000,))], repeat=1)
    doc["environment"] = env(**kw)
    doc["servers"] = {"fast": {"versions": {"flask": "3.0"}}}
    return doc


def test_the_same_code_on_the_same_machine_can_be_continued():
    assert resume.differences(stored(), env(), {"fast": {"flask": "3.0"}}) == []


def test_every_change_that_makes_samples_incomparable_is_named():
    found = resume.differences(stored(), env(commit="def", dirty=True, diff="x", machine="m2"),
                               {"fast": {"flask": "3.1"}})
    assert found == ["machine m1 -> m2", "commit abc -> def",
                     "uncommitted changes differ from the stored run's",
                     "fast's versions {'flask': '3.0'} -> {'flask': '3.1'}"]


def test_rerun_failed_keeps_the_old_samples_as_history_and_verifies_again():
    doc = v2_document([
        v2_case("fast", "postgres", False, "get user", rps=(9000,)),
        v2_case("broken", "mysql", True, "get user", rps=(), status="verification failed",
                reason="username differs"),
        v2_case("erratic", "mysql", False, "get user", rps=(100,), status="invalid",
                reason="3% errors")], repeat=1)
    for case in doc["cases"]:
        case["status"], case["reason"] = case["samples"][0]["status"], case["samples"][0]["reason"]
    doc["verification"] = {"broken/mysql/orm": {"passed": False}, "fast/postgres/raw": {"passed": True}}
    again = resume.prepare_rerun(doc, "2026-11-22T10:00:00+00:00")
    assert again == ["broken/mysql/orm/get_user@c64", "erratic/mysql/raw/get_user@c64"]
    broken = doc["cases"][1]
    assert broken["history"][0]["status"] == "verification failed"
    assert broken["history"][0]["samples"][0]["reason"] == "username differs"
    assert [s["status"] for s in broken["samples"]] == ["pending"]
    assert "broken/mysql/orm" not in doc["verification"]
    assert "fast/postgres/raw" in doc["verification"]
    assert doc["cases"][0]["samples"][0]["status"] == "ok" and "history" not in doc["cases"][0]
    assert resume.samples_to_measure(doc) == 2
