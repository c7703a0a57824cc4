"""HTTP conformance (bench.verify.conformance) against the real fixture server: each
planted defect is caught by exactly the check meant for it, the correct server passes
every check, and verification records the verdicts, directly and through nginx, as
warnings that never fail it."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from bench.core.conformance import CHECKS, FAIL, PASS
from bench.verify import conformance
from bench.verify.conformance import check_conformance
from tests.integration.test_verify import ROOT, TOKEN, PORTS, broken_server

pytestmark = pytest.mark.integration

# fixture mode -> the checks it must fail, and only those
PLANTED = {"correct": set(), "frozen_date": {"date"}, "ignores_close": {"close"},
           "accepts_cl_te": {"cl-te"}}


def test_each_planted_defect_is_caught_by_exactly_its_check(monkeypatch):
    # four servers and their checkers share a busy machine: the correct server's close and
    # answers may come seconds late. Both waits end at the close or the answer, so only
    # the defect that never closes (ignores_close) waits them out
    monkeypatch.setattr(conformance, "CLOSE_WAIT_S", 5.0)
    monkeypatch.setattr(conformance, "MALFORMED_WAIT_S", 5.0)
    with ExitStack() as stack:
        bases = {mode: stack.enter_context(broken_server("" if mode == "correct" else mode,
                                                         "none", None))
                 for mode in PLANTED}
        # in parallel: the frozen Date is only told apart after seconds of waiting
        with ThreadPoolExecutor(len(bases)) as pool:
            found = dict(zip(bases, pool.map(lambda b: check_conformance(b, TOKEN),
                                             bases.values())))
    for mode, failing in PLANTED.items():
        verdicts = found[mode]
        assert list(verdicts) == list(CHECKS), mode
        failed = {name for name, v in verdicts.items() if v["verdict"] == FAIL}
        assert failed == failing, (mode, verdicts)
        assert all(v["verdict"] == PASS for name, v in verdicts.items() if name not in failing), \
            (mode, verdicts)
    assert "frozen" in found["frozen_date"]["date"]["detail"]
    assert "still open" in found["ignores_close"]["close"]["detail"]
    assert "answered 200" in found["accepts_cl_te"]["cl-te"]["detail"]


def test_verification_records_conformance_directly_and_behind_nginx(tmp_path):
    """A server that ignores Connection: close passes verification, marked; nginx in
    front honours the close itself, which the block behind it shows."""
    from bench.core.manifest import discover
    from bench.core.plan import Variant
    from bench.core.settings import Settings
    from bench.infra.proxy import available_proxies
    from bench.verify import verified_server
    spec = discover([ROOT / "tests" / "fixtures" / "servers"])["broken_ignores_close"]
    port = next(PORTS)
    next(PORTS)                                 # port + 1: where the proxy listens
    with verified_server(Variant(spec, "none", False), Settings(port=port, workers=2), None,
                         tmp_path / "server.log", token=TOKEN, suite=False,
                         proxies={"nginx": available_proxies()["nginx"]}) as running:
        report = running.verification
    assert report.passed, report.summary_text()
    assert set(report.conformance) == {"none", "nginx"}
    assert report.conformance["none"]["close"]["verdict"] == FAIL
    assert report.conformance["nginx"]["close"]["verdict"] == PASS, report.conformance["nginx"]
    assert report.to_dict()["conformance"] == report.conformance
    assert "HTTP conformance, direct: 10/11 ✗close" in report.summary_text()
