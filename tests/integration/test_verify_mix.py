"""The mixed test's verification against real databases: a burst drawn from the mix's
weights, counted by the database (bench.verify.mix_counts). The correct fixture passes on
both engines; a server that does one SELECT too many per get user is caught; and a server
that ignores the mix (every path answered 200 by one handler, no database behind it:
tests/fixtures/mix_server.py) fails for the SELECTs and UPDATEs it never sent."""
from __future__ import annotations

import pytest

from bench.core import mix
from bench.core.dataset import all_users
from bench.core.suite import Declaration
from bench.infra import db
from bench.verify.checks import Report
from bench.verify.mix_counts import CHECK, check_mix
from tests.fixtures import mix_server
from tests.integration.test_verify import broken_server, endpoints  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration
MIX = mix.load(mix.DEFAULT_PROFILE)


def checked(base: str, engine: str, endpoints) -> tuple[Report, object]:
    report = Report("fixture", engine, False)
    (check,) = check_mix(base, token=mix_server.TOKEN, endpoint=endpoints[engine], mix=MIX,
                         orm=False, declaration=Declaration(), report=report, seed=4)
    print(check)
    assert check.name == CHECK
    return report, check


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_the_correct_fixture_does_the_work_the_mix_draws(engine, endpoints):
    db.restore(endpoints[engine])
    with broken_server("", engine, endpoints[engine]) as base:
        report, check = checked(base, engine, endpoints)
    assert check.passed, check.detail
    counted = report.queries["mixed"]
    assert counted["mix"] == MIX.identity and sum(counted["drawn"].values()) == 100
    drawn = counted["drawn"]
    # one SELECT per get user, five per queries n=5, one per fortunes page, and one per
    # update user where the engine has no RETURNING (MariaDB)
    select = drawn["get_user"] + 5 * drawn["queries.5"] + drawn["fortunes"]
    extra = drawn["update_user"] if engine == "mysql" else 0
    assert counted["totals"]["select"] == pytest.approx(select + extra, abs=3)
    assert counted["totals"]["update"] == pytest.approx(drawn["update_user"], abs=3)
    assert db.fetch_users(endpoints[engine]) == all_users()      # the PATCHes undone


def test_a_select_too_many_per_get_user_is_caught(endpoints):
    with broken_server("double_query", "postgres", endpoints["postgres"]) as base:
        _, check = checked(base, "postgres", endpoints)
    assert not check.passed and "SELECT per mixed request, contract allows" in check.detail


def test_a_server_that_ignores_the_mix_fails_its_verification(endpoints):
    with mix_server.counting_server() as (base, seen):
        _, check = checked(base, "postgres", endpoints)
    assert sum(seen.values()) == 100                   # every request answered 200 ...
    assert not check.passed                            # ... and none did its work
    assert "SELECT per mixed request, contract requires" in check.detail
    assert "UPDATE per mixed request, contract requires" in check.detail
