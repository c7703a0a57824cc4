"""The table model and its exporters, on a stored document."""
import csv
import io
import json
from pathlib import Path

import pytest

from bench.report import formats, tables


def table(doc, test):
    return next(t for t in tables.build_tables(doc) if t.test == test)


def test_rows_ranked_by_median_and_failures_kept_last(sample_doc):
    rows = table(sample_doc, "get user").rows
    assert [r.server for r in rows] == ["fast", "close", "slow", "broken", "erratic"]
    assert [r.tie for r in rows[:3]] == [False, True, False]
    assert not rows[3].ranked and rows[3].status == "verification failed"
    # an invalid case is never ranked by its (higher) throughput and never dropped
    assert rows[4].status == "invalid"


def test_markdown_shows_spread_ties_and_reasons(sample_doc):
    md = formats.to_markdown(tables.build_tables(sample_doc), sample_doc)
    lines = md.splitlines()
    assert lines[2].startswith("Measured on x (2 CPUs, 4 GiB, Linux 6.1): 8 workers (runtimes "
                               "that schedule threads: one per usable CPU, at most 8) and 64 DB "
                               "connections per server, wrk with 1 thread(s) x 64 connections, "
                               "keep-alive, 3 sample(s) of 5 s per case after 2 s warm-up")
    assert "commit abcdef1234; run 20260102T000000Z-test, status complete." in lines[2]
    get_user = [line for line in lines if line.startswith("| get user")]
    cells = [c.strip() for c in get_user[0].split("|")[1:-1]]
    assert cells == ["get user", "fast", "postgres", "False", "9,000 ± 0.8 %",
                     "0.11 ms", "0.13 ms", "0.17 ms", "0.33 ms"]
    assert "| ≈ 9,000 ± 0.9 %" in get_user[1]
    assert [c.strip() for c in get_user[3].split("|")[5:-1]] == \
        ["verification failed: user fields: GET /user/42/: username differs", "-", "-", "-", "-"]
    assert "invalid: 3 of 3 samples invalid: 3.00% of requests failed" in get_user[4]
    assert "≈ marks a statistical tie with the row above" in md
    assert "1. fast (none, raw): 3 of 3 samples: client-bound: wrk used 99%" in md
    assert "unstable: req/s varies by" in md
    assert md.count("## ") == 3


def test_columns_and_none_for_tests_without_database(sample_doc):
    built = tables.build_tables(sample_doc)
    assert [t.test for t in built] == ["get user", "plain", "to json"]
    plain = formats.markdown_rows(table(sample_doc, "plain"))
    assert plain[0][:4] == ["plain", "fast", "None", "None"]
    assert formats.markdown_rows(table(sample_doc, "get user"))[0][:4] == \
        ["get user", "fast", "postgres", "False"]


def test_csv_has_the_contract_columns_and_parses_back(sample_doc):
    built = tables.build_tables(sample_doc)
    rows = list(csv.reader(io.StringIO(formats.to_csv(built, sample_doc))))
    assert rows[0][:9] == tables.CONTRACT_COLUMNS
    assert len(rows) == 1 + sum(len(t.rows) for t in built)
    fast = rows[1]
    assert fast[:5] == ["get user", "fast", "postgres", "False", "9000"]
    assert rows[0].index("tie_with_row_above") and rows[2][rows[0].index("tie_with_row_above")] == "True"
    interrupted = [r for r in rows if r[0] == "to json"][0]
    assert interrupted[4] == "" and interrupted[9] == "interrupted"


def test_json_export_carries_every_row_with_its_reason(sample_doc):
    built = tables.build_tables(sample_doc)
    data = json.loads(formats.to_json(built, sample_doc))
    assert [t["test"] for t in data["tables"]] == ["get user", "plain", "to json"]
    rows = data["tables"][0]["rows"]
    assert rows[0]["requests_per_sec"]["median"] == 9000
    assert rows[3]["status"] == "verification failed" and "username differs" in rows[3]["reason"]


# ---------------------------------------------------------------- on a stored result file

from bench.storage import results  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


def stored():
    doc = results.load(DATA / "results_v2.json")
    return doc, tables.build_tables(doc)


def test_markdown_of_a_stored_run_is_exactly_as_expected():
    doc, built = stored()
    assert formats.to_markdown(built, doc) == (DATA / "results_v2.tables.md").read_text()


def test_csv_and_json_of_a_stored_run_parse_back_to_the_same_rows():
    doc, built = stored()
    rows = [r for t in built for r in t.rows]
    parsed = list(csv.DictReader(io.StringIO(formats.to_csv(built, doc, ["relative"]))))
    assert len(parsed) == len(rows)
    for line, row in zip(parsed, rows):
        assert (line["test_name"], line["webserver_name"], line["database"], line["orm"],
                line["status"]) == (row.test, row.server, row.database, row.orm, row.status)
        assert line["reason"] == (row.reason or "")
        if row.ranked:
            assert float(line["req/sec"]) == pytest.approx(row.rps.median)
            assert float(line["latency_p99"]) == pytest.approx(row.latency_ms["p99"])
            assert float(line["vs best"]) == pytest.approx(row.relative)
        else:
            assert line["req/sec"] == "" and line["latency_p50"] == ""
    data = json.loads(formats.to_json(built, doc))
    back = [r for t in data["tables"] for r in t["rows"]]
    assert [(r["test"], r["server"], r["database"], r["orm"], r["status"], r["reason"],
             r["requests_per_sec"]["median"], r["tie_with_row_above"]) for r in back] == \
        [(r.test, r.server, r.database, r.orm, r.status, r.reason, r.rps.median, r.tie)
         for r in rows]


def test_extra_columns_on_request():
    doc, built = stored()
    md = formats.to_markdown(built, doc, ["errors", "spread", "cpu", "memory", "per-core",
                                          "relative"])
    header = next(line for line in md.splitlines() if line.startswith("| test_name"))
    assert [c.strip() for c in header.split("|")[10:-1]] == [
        "errors", "req/sec 95 % CI", "server cores", "server memory (PSS)",
        "req per server CPU-s", "vs best"]
    fast = next(line for line in md.splitlines() if line.startswith("| get user    | fast"))
    cells = [c.strip() for c in fast.split("|")[10:-1]]
    assert cells[0] == "0.000 %" and cells[2:] == ["1.00", "100 MiB", "1,000", "100.0 %"]


def test_the_header_says_what_the_databases_counted_against_each_budget():
    budget = {"total": 32, "processes": 8, "per_process": 4}

    def doc(*seen):
        return {"cases": [{"server": "a", "database": "postgres", "orm": False,
                           "samples": [{"server_process": {"db_budget": budget,
                                                           "db_connections_seen": n}}
                                       for n in seen]}]}
    assert tables.connections_sentence({"cases": []}) == ""      # older results: nothing
    assert tables.connections_sentence(doc(32, 32)) == (
        " After every sample the database counted exactly the budget's connections from "
        "the server.")
    assert tables.connections_sentence(doc(32, 28)) == (
        " Connections the database counted that differ from the budget: a (postgres, raw) "
        "28 of 32.")


def test_the_header_says_a_sample_was_k6_iterations_with_the_duration_as_its_cap(sample_doc):
    doc = dict(sample_doc, settings=dict(sample_doc["settings"], iterations=100_000,
                                         generators=["k6"]))
    assert ("3 sample(s) of 100,000 requests (k6 iterations, at most 5 s) per case after 2 s "
            "warm-up") in tables.header_sentence(doc)
