"""What makes two stored runs comparable, as one key: the rule `compare`, `history` and a
calibration's match all use, so that it lives in one place.

Pure functions of stored documents. The key holds the machine, the settings that shape
the figures (not the selection: servers, tests, repeat, the order's seed), the load
generators and their versions, where each role ran, each remote host's machine and
whether its checkout was the harness's commit, and each database engine's mode and
version. Two runs are comparable when their keys are equal; `differences` says how they
are not, in words.
"""
from __future__ import annotations

import hashlib
import json

from bench.core.machine import fingerprint, hardware_id

# Settings that shape the figures. Not: repeat (more samples of the same thing), servers,
# tests, databases, orm (the selection; a case is matched by id), order_seed, results_dir.
SHAPING_SETTINGS = ("preset", "workers", "db_connections", "duration", "warmup", "timeout",
                    "connections", "connection_levels", "connection_modes", "behind", "rates",
                    "burst", "seed", "server_cpus", "client_cpus", "db_cpus", "server_memory",
                    "proxy_memory")
# A setting older harnesses did not record did not exist yet: those runs ran as with its
# neutral value, so a run from before it compares with one that leaves it at that value.
BEFORE_IT_EXISTED = {"connection_modes": ["keep-alive"], "behind": ["none"], "rates": [],
                     "burst": 0.0, "server_cpus": None, "client_cpus": None, "db_cpus": None,
                     "server_memory": None, "proxy_memory": None}
LOAD_KEYS = ("generator", "version", "threads")
ALL_LOCAL = {"client": "local", "server": "local", "database": "local"}
KEY_ID_LENGTH = 10
NOT_RECORDED = "(not recorded)"


def machine_id(doc: dict) -> str:
    env = doc.get("environment", {})
    return env.get("machine_id") or fingerprint(env)


def roles(doc: dict) -> dict:
    """Role -> where it ran; runs from before --hosts ran everything on one machine."""
    return (doc.get("topology") or {}).get("roles") or ALL_LOCAL


PINNED = "the harness's commit"


def _remote_host(block: dict, harness: dict) -> dict:
    """A remote host's part of the key: its machine, and the code it ran: PINNED when its
    checkout held the harness's code (its commit, and the same uncommitted changes if any:
    what the preflight lets run; the commit itself is not in the key, it changes with
    every nightly run, on every host alike), else that commit."""
    if "error" in block:
        return {"fingerprint": f"unknown ({block['error'][:80]})", "code": NOT_RECORDED}
    git = block.get("git")
    if git is None:
        code = NOT_RECORDED
    elif git.get("commit") == harness.get("commit") and (
            not git.get("dirty")
            or git.get("diff_sha256") not in (None, "") and
            git.get("diff_sha256") == harness.get("diff_sha256")):
        code = PINNED
    else:
        code = f"{git.get('commit')}{' with local changes' if git.get('dirty') else ''}"
    return {"fingerprint": block.get("machine_id") or hardware_id(block), "code": code}


def key(doc: dict) -> dict:
    """Everything that must be equal for two runs' figures to be compared (JSON-able)."""
    settings = doc.get("settings") or {}
    load = doc.get("load") or {}
    open_model = load.get("open_model") or {}
    harness = (doc.get("environment") or {}).get("git") or {}
    hosts = ((doc.get("topology") or {}).get("hosts") or {})
    return {
        "machine": machine_id(doc),
        "settings": {k: _setting(settings, k) for k in SHAPING_SETTINGS},
        "load": {k: load.get(k) for k in LOAD_KEYS},
        "open_model": {k: open_model.get(k) for k in ("generator", "version")},
        "topology": dict(roles(doc)),
        "hosts": {role: _remote_host(block, harness) for role, block in sorted(hosts.items())},
        "databases": {engine: {"mode": db.get("mode"), "version": db.get("version")}
                      for engine, db in sorted((doc.get("databases") or {}).items())},
    }


def _setting(settings: dict, name: str):
    if name in settings:
        return settings[name]
    if name == "connection_levels" and "connections" in settings:
        return [settings["connections"]]          # before sweeps: the one level
    return BEFORE_IT_EXISTED.get(name, NOT_RECORDED)


def _for_engines(k: dict, engines) -> dict:
    return {**k, "databases": {e: v for e, v in k["databases"].items() if e in engines}}


def key_id(doc: dict, engine: str | None = None) -> str:
    """A short stable hash of the key, for naming a series. With `engine`, only that
    database engine's entry counts (a `plain` case does not change with PostgreSQL's
    version); "none" keeps no database at all."""
    k = key(doc)
    if engine is not None:
        k = _for_engines(k, {engine})
    raw = json.dumps(k, sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:KEY_ID_LENGTH]


def _hosts_differences(a: dict, b: dict) -> list[str]:
    out = []
    for role in sorted(set(a) | set(b)):
        ha, hb = a.get(role), b.get(role)
        if ha is None or hb is None:
            continue                  # the topology's difference already says it
        if ha["fingerprint"] != hb["fingerprint"]:
            out.append(f"different machine behind role {role}: {ha['fingerprint']} vs "
                       f"{hb['fingerprint']}")
        if ha["code"] != hb["code"]:
            out.append(f"remote host of role {role} ran different code: {ha['code']} vs "
                       f"{hb['code']}")
    return out


def differences(a: dict, b: dict, *, engines=None) -> list[str]:
    """How two keys (key()) differ, in words; empty: comparable. `engines`: only these
    database engines' entries count (None: every engine either key holds)."""
    out = []
    if a["machine"] != b["machine"]:
        out.append(f"different machine ({a['machine']} vs {b['machine']})")
    for name in SHAPING_SETTINGS:
        x, y = a["settings"].get(name, NOT_RECORDED), b["settings"].get(name, NOT_RECORDED)
        if x != y:
            out.append(f"different settings: {name} {x} vs {y}")
    for name in LOAD_KEYS:
        if a["load"].get(name) != b["load"].get(name):
            out.append(f"different load generator {name}: {a['load'].get(name)} vs "
                       f"{b['load'].get(name)}")
    for name in ("generator", "version"):
        if a["open_model"].get(name) != b["open_model"].get(name):
            out.append(f"different open-model generator {name}: {a['open_model'].get(name)} "
                       f"vs {b['open_model'].get(name)}")
    if a["topology"] != b["topology"]:
        out.append("different topology (which machine ran the client, the server and the "
                   f"database): {a['topology']} vs {b['topology']}")
    out += _hosts_differences(a["hosts"], b["hosts"])
    wanted = set(a["databases"]) | set(b["databases"]) if engines is None else set(engines)
    for engine in sorted(wanted - {"none"}):
        out += database_differences(a, b, engine)
    return out


def database_differences(a: dict, b: dict, engine: str) -> list[str]:
    x, y = a["databases"].get(engine, {}), b["databases"].get(engine, {})
    out = []
    if x.get("mode") != y.get("mode"):
        out.append(f"different database mode for {engine}: {x.get('mode')} vs {y.get('mode')}")
    if x.get("version") != y.get("version"):
        out.append(f"different {engine} version: {x.get('version')} vs {y.get('version')}")
    return out


def run_differences(a: dict, b: dict) -> list[str]:
    """What makes two runs incomparable as a whole: everything but the databases (those
    count only for the cases that use them)."""
    return differences(a, b, engines=())


# Two runs whose samples saw other processes' CPU (or the hypervisor's steal) differ by
# more than this share of the machine are compared, but weakly: the default
# --foreign-cpu-limit, the load above which one sample is already marked.
NOISE_GAP = 0.05
# CPU taken by others (or stolen) can cost a server at most about that share of its
# throughput; a req/s change beyond this many times the noise gap is more than the noise
# could have made, so it stays decisive (a 4x slower server on a 6 % noisier machine).
NOISE_EXPLAINS = 2.0


def median_noise(doc: dict) -> dict[str, float]:
    """The median foreign CPU share and steal share of a run's measured samples (only
    those that recorded them: runs from before have none)."""
    values: dict[str, list[float]] = {"foreign_cpu_share": [], "steal_share": []}
    for case in doc.get("cases", []):
        for sample in case.get("samples", []):
            noise = sample.get("noise") or {}
            for name, found in values.items():
                if isinstance(noise.get(name), (int, float)):
                    found.append(noise[name])
    return {name: sorted(v)[len(v) // 2] for name, v in values.items() if v}


def noise_gap(base: dict, cand: dict) -> float:
    """The largest difference between the two runs' median noise shares (0 when one of
    them did not record it)."""
    a, b = median_noise(base), median_noise(cand)
    return max((abs(a[n] - b[n]) for n in a if n in b), default=0.0)


def noise_differences(base: dict, cand: dict, gap: float = NOISE_GAP) -> list[str]:
    """How far apart the two runs' noise was, in words, when it is more than `gap`;
    empty when they are alike or one of them did not record it."""
    a, b = median_noise(base), median_noise(cand)
    out = []
    for name, what in (("foreign_cpu_share", "of the CPU used by other processes"),
                       ("steal_share", "of the CPU time stolen by the hypervisor")):
        if name in a and name in b and abs(a[name] - b[name]) > gap:
            out.append(f"the baseline's samples ran with {a[name] * 100:.1f} % {what} "
                       f"(median), the candidate's with {b[name] * 100:.1f} %")
    return out


# A server's dependency versions (`servers.<id>.versions`) are not part of the key: a
# dependency bump is what compare, ab and the nightly are there to measure, so two runs
# across one stay comparable, and each of them names the bump next to its verdicts
# (a run from before versions were recorded names nothing).
def dependency_changes(before: dict | None, after: dict | None) -> list[str]:
    """"sanic 25.12.1 → 23.6.0" for each dependency whose version differs between two
    `versions` blocks, "+name v" / "-name v" for one only one side has; [] when either
    side recorded none."""
    if not before or not after:
        return []
    out = []
    for name in sorted(set(before) | set(after), key=str.lower):
        x, y = before.get(name), after.get(name)
        if x == y:
            continue
        out.append(f"+{name} {y}" if x is None else f"-{name} {x}" if y is None
                   else f"{name} {x} → {y}")
    return out


def server_dependency_changes(base: dict, cand: dict, server_base: str | None = None,
                              server_cand: str | None = None) -> dict[str, list[str]]:
    """{server: its dependency changes} between two runs for every server both measured
    (or, within one document such as an A/B run's, between two labels of one server)."""
    a, b = base.get("servers") or {}, cand.get("servers") or {}
    if server_base is not None:
        pairs = [(server_base.split("@")[0], server_base, server_cand)]
    else:
        pairs = [(s, s, s) for s in sorted(set(a) & set(b))]
    out = {}
    for name, x, y in pairs:
        changed = dependency_changes((a.get(x) or {}).get("versions"),
                                     (b.get(y) or {}).get("versions"))
        if changed:
            out[name] = changed
    return out
