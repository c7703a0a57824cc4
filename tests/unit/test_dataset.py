from datetime import datetime, timezone

from bench.core import dataset


def test_row_one_matches_the_contract_by_hand():
    # md5("1") = c4ca4238a0b923820dcc509a6f75849b
    u = dataset.expected_user(1)
    assert u.username == "user1_c4ca4"
    assert u.email == "238a0b923820d@example.com"
    assert u.created_at == u.updated_at == datetime(2024, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    assert u.is_archived is False


def test_every_tenth_row_is_archived_and_ids_are_dense():
    users = dataset.all_users()
    assert [u.user_id for u in users] == list(range(1, 10_001))
    assert sum(u.is_archived for u in users) == 1_000
    assert dataset.expected_user(10_000).is_archived


def test_mysql_rows_are_naive_utc_and_normalise_back():
    row = dataset.seed_rows("mysql")[41]
    assert row[3].tzinfo is None
    assert dataset.normalise_row(row) == dataset.expected_user(42)
