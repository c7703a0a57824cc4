"""The comparability key: what makes two stored runs comparable, one rule for compare,
history and a calibration's match; on documents alone."""
import copy

import pytest

from bench.analysis import comparability, compare
from tests.unit.conftest import case_doc, run_doc

REMOTE = {"hostname": "srv", "cpu_model": "EPYC", "cpu_count": 8, "memory_gb": 32,
          "kernel": "6.1", "tools": {"python": "3.11"}}


def stored(**change) -> dict:
    doc = run_doc([case_doc("a", "postgres", False, "get user", rps=(1000, 1010, 990, 1005, 995)),
                   case_doc("a", "none", False, "plain", rps=(9000, 9010, 8990, 9005, 8995))],
                  repeat=5)
    doc["environment"]["machine_id"] = "m1"
    doc["databases"] = {"postgres": {"mode": "local", "version": "PostgreSQL 15.18"}}
    doc["topology"] = {"roles": {"client": "local", "server": "root@10.0.0.2",
                                 "database": "local"},
                       "hosts": {"server": {**REMOTE, "git": {"commit": "abcdef1234567",
                                                              "dirty": False}}}}
    for how in change.values():
        how(doc)
    return doc


def remote(doc) -> dict:
    return doc["topology"]["hosts"]["server"]


CHANGES = {
    "preset": (lambda d: d["settings"].update(preset="nightly"),
               "different settings: preset default vs nightly"),
    "generator version": (lambda d: d["load"].update(version="wrk 4.2.0"),
                          "different load generator version: None vs wrk 4.2.0"),
    "open model": (lambda d: d["load"].update(open_model={"generator": "oha", "version": "1"}),
                   "different open-model generator generator: None vs oha"),
    "remote fingerprint": (lambda d: remote(d).update(cpu_count=16),
                           "different machine behind role server"),
    "remote commit": (lambda d: remote(d)["git"].update(commit="0123456"),
                      "remote host of role server ran different code: the harness's commit "
                      "vs 0123456"),
    "remote local changes": (lambda d: remote(d)["git"].update(dirty=True),
                             "abcdef1234567 with local changes"),
    "other local changes": (lambda d: (remote(d)["git"].update(dirty=True, diff_sha256="1"),
                                       d["environment"]["git"].update(dirty=True,
                                                                     diff_sha256="2")),
                            "abcdef1234567 with local changes"),
    "database version": (lambda d: d["databases"]["postgres"].update(version="PostgreSQL 16.1"),
                         "different postgres version: PostgreSQL 15.18 vs PostgreSQL 16.1"),
    "topology": (lambda d: d["topology"]["roles"].update(client="root@10.0.0.3"),
                 "different topology"),
    "cpu placement": (lambda d: d["settings"].update(server_cpus="0-1"),
                      "different settings: server_cpus None vs 0-1"),
}


@pytest.mark.parametrize("name", CHANGES)
def test_a_difference_of_key_makes_runs_not_comparable(name):
    change, said = CHANGES[name]
    base, cand = stored(), stored(change=change)
    diffs = comparability.differences(comparability.key(base), comparability.key(cand))
    assert any(said in d for d in diffs), diffs
    assert comparability.key_id(base) != comparability.key_id(cand)
    cmp = compare.compare(base, cand)
    uses = {"database version": {"postgres"}}.get(name, {"postgres", "none"})
    assert {c.database for c in cmp.cases if c.verdict == "not comparable"} == uses
    assert all(said in c.reason for c in cmp.cases if c.verdict == "not comparable")


def test_what_does_not_shape_the_figures_keeps_runs_comparable():
    base = stored()
    cand = stored(more=lambda d: d["settings"].update(repeat=10, order_seed=7, servers=["a"],
                                                      results_dir="/elsewhere"),
                  commit=lambda d: d["environment"]["git"].update(commit="fedcba7654321"),
                  pinned=lambda d: remote(d)["git"].update(commit="fedcba7654321"))
    assert comparability.key(base) == comparability.key(cand)
    assert comparability.key_id(base) == comparability.key_id(cand)
    assert {c.verdict for c in compare.compare(base, cand).cases} == {"unchanged"}


def test_a_remote_host_with_the_harness_s_own_uncommitted_changes_is_pinned():
    """What the preflight lets run (the same diff on both sides) keys as pinned."""
    same = lambda d: (remote(d)["git"].update(dirty=True, diff_sha256="d1"),  # noqa: E731
                      d["environment"]["git"].update(dirty=True, diff_sha256="d1"))
    assert comparability.key(stored(change=same))["hosts"]["server"]["code"] \
        == comparability.PINNED


def test_a_database_version_splits_only_the_cases_that_use_it():
    base = stored()
    cand = stored(v=CHANGES["database version"][0])
    assert comparability.key_id(base, "none") == comparability.key_id(cand, "none")
    assert comparability.key_id(base, "postgres") != comparability.key_id(cand, "postgres")
    assert comparability.run_differences(comparability.key(base), comparability.key(cand)) == []


def test_a_remote_host_fingerprint_ignores_the_name_given_to_this_machine(monkeypatch):
    base = stored()
    monkeypatch.setenv("BENCH_MACHINE_ID", "ci-runner")
    cand = stored(change=CHANGES["remote fingerprint"][0])
    assert comparability.key(base)["hosts"] != comparability.key(cand)["hosts"]


def test_a_change_of_topology_makes_two_runs_incomparable():
    base = {"environment": {"machine_id": "m"}, "settings": {}, "load": {}}
    moved = {**base, "topology": {"roles": {"client": "root@10.0.0.2", "server": "local",
                                            "database": "local"}}}
    key = comparability.key
    assert comparability.run_differences(key(base), key(base)) == []
    assert comparability.run_differences(
        key(base), key({**base, "topology": {"roles": comparability.ALL_LOCAL}})) == []
    (reason,) = comparability.run_differences(key(base), key(moved))
    assert reason.startswith("different topology") and "root@10.0.0.2" in reason


def test_a_host_whose_fingerprint_failed_is_named_not_fatal():
    doc = stored(err=lambda d: d["topology"]["hosts"].update(server={"error": "timed out"}))
    assert comparability.key(doc)["hosts"]["server"]["fingerprint"] == "unknown (timed out)"
    assert copy.deepcopy(comparability.key(doc)) == comparability.key(doc)


def test_a_run_from_before_a_setting_existed_compares_with_its_neutral_value():
    old = stored(gone=lambda d: [d["settings"].pop(k) for k in
                                 ("connection_levels", "connection_modes", "behind", "rates",
                                  "burst", "server_cpus", "client_cpus", "db_cpus")])
    assert comparability.key(old) == comparability.key(stored())
    no_seed = stored(gone=lambda d: d["settings"].pop("seed"))
    assert comparability.differences(comparability.key(no_seed), comparability.key(stored())) \
        == ["different settings: seed (not recorded) vs 1"]
