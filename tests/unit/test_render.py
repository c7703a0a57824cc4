from bench import render


def rows_of(tables, test):
    return next(t for t in tables if t.test == test).rows


def test_rows_sorted_best_first_and_failures_kept_last(sample_doc):
    rows = rows_of(render.build_tables(sample_doc), "get user")
    assert [r[1] for r in rows] == ["fast", "slow", "broken", "erratic"]
    assert rows[0][4] == "9,000"
    # an invalid run is never ranked by its (higher) throughput and never dropped
    assert rows[3][4].startswith("invalid: 3.00% of requests failed")
    assert rows[2][4].startswith("verification failed: user fields")
    assert rows[2][5:] == ["-", "-", "-", "-"]


def test_columns_and_none_for_tests_without_database(sample_doc):
    tables = render.build_tables(sample_doc)
    assert [t.test for t in tables] == ["get user", "plain", "to json"]
    plain = rows_of(tables, "plain")
    assert plain[0][:4] == ["plain", "fast", "None", "None"]
    assert rows_of(tables, "get user")[0][:4] == ["get user", "fast", "postgres", "False"]


def test_warnings_become_numbered_notes(sample_doc):
    table = next(t for t in render.build_tables(sample_doc) if t.test == "plain")
    assert table.rows[0][4] == "100,000 [1]"
    assert table.notes == ["fast (none, raw): client-bound: wrk used 99% of its 1 thread(s)' CPU"]


def test_markdown_has_the_contract_header_and_notes(sample_doc):
    md = render.to_markdown(render.build_tables(sample_doc), sample_doc)
    header = ("| test_name   | webserver_name   | database   | orm   | req/sec")
    assert "| test_name" in md and "| latency_p99" in md.replace("   ", " ")
    assert md.count("## ") == 3
    assert "1. fast (none, raw): client-bound" in md
    assert header.split("|")[1].strip() == "test_name"


def test_csv_export_has_same_rows(sample_doc):
    tables = render.build_tables(sample_doc)
    lines = render.to_csv(tables).strip().splitlines()
    assert lines[0] == ",".join(render.HEADERS)
    assert len(lines) == 1 + sum(len(t.rows) for t in tables)
