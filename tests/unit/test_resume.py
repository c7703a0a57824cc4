"""What makes a stored run impossible to continue, and how --rerun-failed keeps history:
pure functions of stored runs (bench.storage.resume over the records)."""
from bench.storage import resume
from bench.storage.document import RunRecord, ServerInfo
from tests.unit.conftest import case_doc, run_doc


def env(commit="abc", dirty=False, diff=None, machine="m1"):
    return {"machine_id": machine, "git": {"commit": commit, "dirty": dirty, "diff_sha": diff}}


def stored(**kw):
    run = RunRecord.from_json(run_doc([case_doc("fast", "postgres", False, "get user",
                                                rps=(9000,))], repeat=1))
    run.environment = env(**kw)
    run.servers = {"fast": ServerInfo(description="fast", language="python",
                                      concurrency="processes", versions={"flask": "3.0"})}
    return run


def test_the_same_code_on_the_same_machine_can_be_continued():
    assert resume.differences(stored(), env(), {"fast": {"flask": "3.0"}}) == []


def test_every_change_that_makes_samples_incomparable_is_named():
    found = resume.differences(stored(), env(commit="def", dirty=True, diff="x", machine="m2"),
                               {"fast": {"flask": "3.1"}})
    assert found == ["machine m1 -> m2", "commit abc -> def",
                     "uncommitted changes differ from the stored run's",
                     "fast's versions {'flask': '3.0'} -> {'flask': '3.1'}"]


def test_rerun_failed_keeps_the_old_samples_as_history_and_verifies_again():
    doc = run_doc([
        case_doc("fast", "postgres", False, "get user", rps=(9000,)),
        case_doc("broken", "mysql", True, "get user", rps=(), status="verification failed",
                 reason="username differs"),
        case_doc("erratic", "mysql", False, "get user", rps=(100,), status="invalid",
                 reason="3% errors")], repeat=1)
    for case in doc["cases"]:
        case["status"], case["reason"] = case["samples"][0]["status"], case["samples"][0]["reason"]
    doc["verification"] = {"broken/mysql/orm": {"passed": False}, "fast/postgres/raw": {"passed": True}}
    run = RunRecord.from_json(doc)
    again = resume.prepare_rerun(run, "2026-11-22T10:00:00+00:00")
    assert again == ["broken/mysql/orm/get_user@c64", "erratic/mysql/raw/get_user@c64"]
    broken = run.cases[1]
    assert broken.history[0].status == "verification failed"
    assert broken.history[0].replaced_at == "2026-11-22T10:00:00+00:00"
    assert broken.history[0].samples[0].reason == "username differs"
    assert [(s.status, s.index, s.round) for s in broken.samples] == [("pending", 0, 0)]
    assert (broken.status, broken.reason, broken.stats, broken.warnings) == ("pending", None,
                                                                            None, [])
    assert "broken/mysql/orm" not in run.verification
    assert "fast/postgres/raw" in run.verification
    stored_json = run.to_json()
    assert stored_json["cases"][0]["samples"][0]["status"] == "ok"
    assert "history" not in stored_json["cases"][0]
    assert stored_json["cases"][1]["history"][0]["samples"][0]["status"] == "verification failed"
    assert run.samples_to_measure() == 2
