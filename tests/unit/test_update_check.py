"""The verdict on `update user`'s rows, on numbers alone."""
from bench.core.dataset import ROW_COUNT
from bench.verify.updates import expected_distinct_rows, judge_updates


def test_expected_distinct_rows_grows_towards_the_table_size():
    assert expected_distinct_rows(0) == 0
    assert abs(expected_distinct_rows(1) - 1) < 1e-9
    assert 6310 < expected_distinct_rows(ROW_COUNT) < 6330      # 1 - 1/e of the rows
    assert expected_distinct_rows(10**3) < expected_distinct_rows(10**4) <= ROW_COUNT


def test_plausible_updates_pass():
    sent = 5000
    check = judge_updates(ROW_COUNT, round(expected_distinct_rows(sent)), sent, sent, 64)
    assert check.invalid is None
    assert check.figures["rows_after"] == ROW_COUNT


def test_a_lost_or_added_row_is_invalid():
    assert "rows after the run" in judge_updates(ROW_COUNT - 1, 10, 10, 10, 1).invalid


def test_too_few_updated_rows_are_invalid():
    check = judge_updates(ROW_COUNT, 100, 5000, 5000, 64)
    assert "rows updated after 5000 answered PATCH requests" in check.invalid


def test_more_rows_than_requests_could_touch_are_invalid():
    assert judge_updates(ROW_COUNT, 300, 100, 100, 64).invalid is not None  # > 100 + 2 * 64
    assert judge_updates(ROW_COUNT, 100, 100, 100, 64).invalid is None


def test_requests_sent_without_an_answer_may_have_updated_rows_too():
    # Connection: close, a server that closes before answering: 1,000 PATCHes were sent
    # and updated their rows, 700 answers were counted
    assert judge_updates(ROW_COUNT, 950, 700, 1000, 16).invalid is None
    assert judge_updates(ROW_COUNT, 950, 700, 700, 16).invalid is not None
