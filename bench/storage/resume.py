"""Continuing a stored run: `--resume` (an interrupted run's remaining samples) and
`--rerun-failed` (a finished run's failed and invalid cases again, the old samples kept
as history). Pure functions of the stored run and today's environment, so what makes
two sittings incomparable is decided in one tested place."""
from __future__ import annotations

from bench.storage import results
from bench.storage.document import RunRecord


def differences(run: RunRecord, env: dict, server_versions: dict[str, dict]) -> list[str]:
    """What changed since the stored run in a way that makes new samples incomparable
    with its old ones: the machine, the code, a server's dependencies."""
    stored = run.environment
    out = []
    if stored.get("machine_id") != env.get("machine_id"):
        out.append(f"machine {stored.get('machine_id')} -> {env.get('machine_id')}")
    old, new = stored.get("git") or {}, env.get("git") or {}
    if old.get("commit") != new.get("commit"):
        out.append(f"commit {str(old.get('commit'))[:10]} -> {str(new.get('commit'))[:10]}")
    if old.get("dirty") != new.get("dirty") or old.get("diff_sha") != new.get("diff_sha"):
        out.append("uncommitted changes differ from the stored run's")
    for server, info in run.servers.items():
        if server in server_versions and info.versions != server_versions[server]:
            out.append(f"{server}'s versions {info.versions} -> {server_versions[server]}")
    return out


def prepare_rerun(run: RunRecord, at: str) -> list[str]:
    """Move the samples of every failed, invalid or unverified case into its history and
    give it fresh pending samples; forget the verification of their variants so that it
    runs again. Returns the ids of the cases to measure again."""
    again = []
    for case in run.cases:
        if case.instructions and case.instructions.status == results.FAILED:
            case.instructions.recount()      # --instructions: a failed count is made again
            again.append(case.id)
        if not case.needs_rerun:
            continue
        case.rerun(at)
        run.verification.pop(case.variant_key, None)
        again.append(case.id)
    return list(dict.fromkeys(again))
