"""Continuing a stored run: `--resume` (an interrupted run's remaining samples) and
`--rerun-failed` (a finished run's failed and invalid cases again, the old samples kept
as history). Pure functions of the stored document and today's environment, so what
makes two sittings incomparable is decided in one tested place."""
from __future__ import annotations

from bench.storage import results

# samples a continuation measures (again)
TO_MEASURE = (results.PENDING, results.INTERRUPTED)
# cases --rerun-failed measures again
RERUN = (results.FAILED, results.INVALID, results.VERIFICATION_FAILED, results.INTERRUPTED)


def differences(doc: dict, env: dict, server_versions: dict[str, dict]) -> list[str]:
    """What changed since the stored run in a way that makes new samples incomparable
    with its old ones: the machine, the code, a server's dependencies."""
    stored = doc["environment"]
    out = []
    if stored.get("machine_id") != env.get("machine_id"):
        out.append(f"machine {stored.get('machine_id')} -> {env.get('machine_id')}")
    old, new = stored.get("git") or {}, env.get("git") or {}
    if old.get("commit") != new.get("commit"):
        out.append(f"commit {str(old.get('commit'))[:10]} -> {str(new.get('commit'))[:10]}")
    if old.get("dirty") != new.get("dirty") or old.get("diff_sha") != new.get("diff_sha"):
        out.append("uncommitted changes differ from the stored run's")
    for server, info in (doc.get("servers") or {}).items():
        if server in server_versions and info.get("versions") != server_versions[server]:
            out.append(f"{server}'s versions {info.get('versions')} -> {server_versions[server]}")
    return out


def samples_to_measure(doc: dict) -> int:
    return sum(1 for c in doc["cases"] for s in c["samples"] if s["status"] in TO_MEASURE)


def prepare_rerun(doc: dict, at: str) -> list[str]:
    """Move the samples of every failed, invalid or unverified case into its history and
    give it fresh pending samples; forget the verification of their variants so that it
    runs again. Returns the ids of the cases to measure again."""
    from bench.runner import blank_sample
    again = []
    for case in doc["cases"]:
        if case["status"] not in RERUN:
            continue
        case.setdefault("history", []).append(
            {"replaced_at": at, "status": case["status"], "reason": case["reason"],
             "samples": case["samples"]})
        case["samples"] = [blank_sample(s["index"], s["round"]) for s in case["samples"]]
        case.update(status=results.PENDING, reason=None, stats=None, warnings=[])
        variant = f"{case['server']}/{case['database']}/{'orm' if case['orm'] else 'raw'}"
        doc["verification"].pop(variant, None)
        again.append(case["id"])
    return again
