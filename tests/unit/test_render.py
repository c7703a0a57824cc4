"""The table model and its exporters, on a stored document."""
import csv
import io
import json

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
    assert lines[2].startswith("Measured on x (2 CPUs, 4 GiB, Linux 6.1): 8 workers and 32 DB "
                               "connections per server, wrk with 1 thread(s) x 64 connections, "
                               "3 sample(s) of 5 s per case after 2 s warm-up")
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
