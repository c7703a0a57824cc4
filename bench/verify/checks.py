"""What a verification is made of: one check and its verdict, the report of a server's
checks, and the HTTP client every check uses (transport errors become values)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable

import requests

from bench.core.conformance import cell, failed_checks

MAX_DETAIL = 600


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""
    severity: str = "error"          # "warning" never fails verification


@dataclass
class Report:
    server_id: str
    database: str
    orm: bool
    checks: list[Check] = field(default_factory=list)
    queries: dict = field(default_factory=dict)
    connections: dict = field(default_factory=dict)   # DB budget and the count seen
    # HTTP conformance (bench.verify.conformance), per endpoint the load hits ("none":
    # the server itself, else the proxy in front): check -> verdict. Warnings only:
    # never part of `passed`.
    conformance: dict = field(default_factory=dict)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed and c.severity == "error"]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def reason(self) -> str:
        """One short line: the first failure, or "" when verification passed."""
        if self.passed:
            return ""
        first = self.failures[0]
        more = len(self.failures) - 1
        text = f"{first.name}: {first.detail}".replace("\n", " ")
        text = text if len(text) <= 160 else text[:157] + "..."
        return text + (f" (+{more} more failed check{'s' * (more > 1)})" if more else "")

    def to_dict(self) -> dict:
        out = {"server_id": self.server_id, "database": self.database, "orm": self.orm,
               "passed": self.passed, "reason": self.reason,
               "checks": [asdict(c) for c in self.checks], "queries": self.queries,
               "connections": self.connections}
        if self.conformance:
            out["conformance"] = self.conformance
        return out

    def summary_text(self) -> str:
        failed, warned = len(self.failures), sum(
            1 for c in self.checks if not c.passed and c.severity == "warning")
        head = (f"verification of {self.server_id} (database={self.database}, orm={self.orm}): "
                f"{'PASSED' if self.passed else 'FAILED'} - {len(self.checks)} checks, "
                f"{failed} failed, {warned} warning{'s' * (warned != 1)}")
        lines = [head]
        for c in self.checks:
            mark = "ok  " if c.passed else ("FAIL" if c.severity == "error" else "warn")
            lines.append(f"  {mark} {c.name}" + (f": {c.detail}" if c.detail else ""))
        for test, q in self.queries.items():
            if isinstance(q, dict) and "per_request" in q:
                per = ", ".join(f"{k} {v}" for k, v in q["per_request"].items())
                lines.append(f"  queries per request, {test} ({q['method']}): {per}")
        for proxy, verdicts in self.conformance.items():
            name, _, over = proxy.partition("@")        # "nginx@h2": over HTTP/2 (h2spec)
            where = ("direct" if name == "none" else f"behind {name}") + \
                (f", over {over}" if over else "")
            lines.append(f"  HTTP conformance, {where}: {cell(verdicts)} (warnings, never a failure)")
            lines += [f"    warn {name}: {verdicts[name]['detail']}" for name in failed_checks(verdicts)]
        return "\n".join(lines)


# --------------------------------------------------------------------------- HTTP

class Client:
    """One requests.Session; transport errors become values, never exceptions.

    After three transport failures in a row the server is taken for dead and further
    requests fail at once instead of each waiting for its timeout."""

    def __init__(self, base_url: str, token: str, timeout: float):
        self.base = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.session = requests.Session()
        self.transport_failures = 0

    def request(self, method: str, path: str, *, token: str | None = "default",
                data: bytes | str | None = None, json_body=None,
                connection_of_its_own: bool = False,
                headers: dict | None = None) -> tuple[requests.Response | None, str]:
        """`connection_of_its_own` sends the request on a new connection that the client
        closes after the answer: for a request whose body the server may rightly leave
        unread (a 401 before the body). A server may then close that connection after
        answering without saying so (hyper does), and a pooled connection would carry the
        next request into that close: a race the client loses now and then, which is no
        fault of the server's (RFC 9112 §9.3.1). `headers` go last (they win)."""
        if self.transport_failures >= 3:
            return None, f"{method} {path}: skipped, the server stopped answering"
        extra, headers = headers or {}, {"Connection": "close"} if connection_of_its_own else {}
        token = self.token if token == "default" else token
        if token is not None:
            headers["token"] = token
        if json_body is not None:
            data, headers["Content-Type"] = json.dumps(json_body), "application/json"
        elif data is not None:
            headers["Content-Type"] = "application/json"
        headers.update(extra)
        session = requests.Session() if connection_of_its_own else self.session
        try:
            resp = session.request(method, self.base + path, headers=headers, data=data,
                                   timeout=self.timeout, allow_redirects=False)
        except requests.RequestException as exc:
            self.transport_failures += 1
            return None, f"{method} {path}: no answer ({type(exc).__name__}: {str(exc)[:120]})"
        finally:
            if session is not self.session:
                session.close()      # the answer is read already (no streaming)
        self.transport_failures = 0
        return resp, ""

    def close(self) -> None:
        self.session.close()


def make_check(name: str, problems: list[str], ok_detail: str = "", severity: str = "error") -> Check:
    problems = [p for p in problems if p]
    if not problems:
        return Check(name, True, ok_detail, severity)
    detail = "; ".join(problems)
    if len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL - 3] + "..."
    return Check(name, False, detail, severity)


# ------------------------------------------------------------------ user objects

def guarded(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    """A harness-side error (database down, bug) fails its group, not the whole run."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return [Check(name, False, f"harness error: {type(exc).__name__}: {str(exc)[:200]}")]
