"""Fuzzing a running server against docs/openapi.yaml with schemathesis (used by test_fuzz.py).

The requests are made once per test session and then replayed against every server
variant, in the same order: a failure reproduces, variants get exactly the same
requests, and the generation cost is paid once. Three sources:
- "coverage": schemathesis's deterministic boundary cases (minimum / maximum / one past
  them, every wrong type, missing keys and body, undeclared or malformed Content-Type,
  a missing token, other HTTP methods);
- "positive" / "negative": Hypothesis through schemathesis's strategies, derandomized
  (its seed comes from the generating function, not the clock);
- "edges": hand-written raw requests no schema describes (fuzz_edges.py); those without
  a body go out byte for byte (requests and urllib3 would re-quote their targets).

Each answer goes through schemathesis's checks (no 5xx, status code, content type and
body documented), then through what the document cannot express
(tests/integration/fuzz_expectations.py): the status this token, id and body must get,
a user answered as stored, the parameters echoed, the database suite's rows (as many as
n asks for once clamped, each as stored, /updates/' as written) and its fortunes page.
Every write the server reports (an accepted PATCH, a row /updates/ answered) is
recorded: reads are held to it, and the table afterwards (fuzz_expectations.
table_problems). A method the operation does not have must get a JSON 405. Every
failure is collected, not just the first, each with a curl command that reproduces it.
"""
from __future__ import annotations

import copy
import http.client
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from jsonschema import Draft202012Validator
from requests.structures import CaseInsensitiveDict
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core import NOT_SET
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (content_type_conformance,
                                               response_schema_conformance,
                                               status_code_conformance)
from urllib3 import HTTPHeaderDict

from tests.integration import fuzz_edges, fuzz_expectations as expect

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
TIMEOUT_S = 10.0
MAX_REPORTED = 12            # distinct failures listed per variant (the rest are counted)
DEAD_AFTER = 3               # transport failures in a row: the server is taken for dead


@lru_cache(maxsize=None)
def schema():
    return schemathesis.openapi.from_path(str(SCHEMA_PATH))


@lru_cache(maxsize=None)
def update_body_validator() -> Draft202012Validator:
    return Draft202012Validator(schema().raw_schema["components"]["schemas"]["UserUpdate"])


@dataclass(frozen=True)
class Step:
    """Requests for one operation: `count` generated ones in mode "positive" or
    "negative", or all of schemathesis's "coverage" cases, or all our hand-written
    "edges" (tests/integration/fuzz_edges.py) (count ignored).
    `user_id` fixes the path's id, so that negative data lands in the body: with a
    generated id, most invalid bodies go to invalid ids and end in the 404 that is
    checked before the body."""
    path: str
    method: str
    mode: str
    count: int = 0
    user_id: int | None = None


@lru_cache(maxsize=None)
def cases(step: Step) -> tuple:
    """The step's cases: the same ones on every call and in every run."""
    operation = schema()[step.path][step.method]
    if step.mode == "edges":
        return fuzz_edges.edges(step.path, step.method)
    if step.mode == "coverage":
        config = schema().config.generation_for(operation=operation)
        return tuple(schema().iter_coverage_cases(
            operation, generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
            generation_config=config))
    fixed = {"id": step.user_id} if step.user_id is not None else None
    strategy = operation.as_strategy(generation_mode=GenerationMode(step.mode),
                                     path_parameters=fixed)
    found: list = []

    # generate only: nothing here fails, so there is nothing to shrink
    @settings(max_examples=step.count, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def collect(case):
        found.append(case)

    collect()
    return tuple(found)


def token_for(step: Step, case, index: int, token: str) -> str | None:
    """The token this request carries. A coverage case without one is the "missing
    token" case and stays so; the others carry the right token, so they reach what
    they test. Generated cases: every 8th none, every 8th a wrong one (the 401 path
    fuzzed with the same ids and bodies), the others the right one (the generated
    value is random)."""
    if step.mode == "coverage":
        return token if "token" in {k.lower() for k in case.headers or {}} else None
    return {3: None, 6: token + "_wrong"}.get(index % 8, token)


@contextmanager
def own_connection(has_body: bool, session: requests.Session) -> Iterator[requests.Session]:
    """A request with a body goes on a connection of its own, closed after the answer:
    a server may answer (401, 405, 413) without reading the body and then close the
    connection without saying so (hyper does), and the pooled connection would carry the
    next request into that close (bench.verify.checks.Client.request says the same)."""
    if not has_body:
        yield session
        return
    with requests.Session() as own:
        yield own


def fresh_copy(case, token: str | None):
    """A new case with the generated one's data and this request's token."""
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "token"}
    if token is not None:
        headers["token"] = token
    return case.operation.Case(
        method=case.method, path_parameters=copy.deepcopy(case.path_parameters),
        headers=headers, query=copy.deepcopy(case.query),
        # NOT_SET (no body) is a sentinel compared by identity: never copied
        body=case.body if case.body is NOT_SET else copy.deepcopy(case.body),
        media_type=case.media_type)


@dataclass(frozen=True)
class Target:
    base_url: str
    token: str
    database: bool            # False: started with BENCH_DB=none


@dataclass
class Outcome:
    requests: int = 0
    statuses: dict = field(default_factory=dict)       # "GET /user/{id}/ 404" -> count
    failures: dict = field(default_factory=dict)       # short key -> first full message
    failure_count: int = 0
    # user id -> the last write the server reported (an accepted PATCH, a row /updates/
    # answered as written); history: every such write, oldest first (a cache may hold any)
    updates: dict[int, expect.Update] = field(default_factory=dict)
    history: dict[int, list[expect.Update]] = field(default_factory=dict)
    accepted_patches: int = 0
    written_rows: int = 0              # rows /updates/ answered as written
    unanswered_in_a_row: int = 0
    seconds: dict = field(default_factory=dict)        # "GET /queries/ edges" -> time sent

    @property
    def dead(self) -> bool:
        return self.unanswered_in_a_row >= DEAD_AFTER

    def fail(self, key: str, message: str) -> None:
        self.failure_count += 1
        self.failures.setdefault(key, message)

    def count(self, key: str) -> None:
        self.statuses[key] = self.statuses.get(key, 0) + 1

    def record(self, update: expect.Update) -> None:
        """A write the server reported: reads and the table are held to it from now on."""
        self.updates[update.user_id] = update
        self.history.setdefault(update.user_id, []).append(update)
        if update.by == "PATCH":
            self.accepted_patches += 1
        else:
            self.written_rows += 1

    def report(self) -> str:
        shown = list(self.failures.values())[:MAX_REPORTED]
        more = len(self.failures) - len(shown)
        head = (f"{self.failure_count} failing responses out of {self.requests} requests, "
                f"{len(self.failures)} distinct")
        return "\n\n".join([head] + shown + ([f"... and {more} more distinct failures"] if more else []))


def json_of(response):
    try:
        return response.json()
    except ValueError:
        return None


def method_problem(response) -> str:
    """A method the operation does not have: the contract requires nothing of it but
    that it changes nothing and is no 5xx; every server here answers a JSON 405, and
    a 2xx would mean it did something."""
    body = json_of(response)
    if response.status_code != 405 or not (isinstance(body, dict) and isinstance(body.get("error"), str)):
        return (f"status {response.status_code}, body {response.content[:100]!r}; expected a 405 "
                'with a JSON {"error": ...}')
    return ""


def now() -> datetime:
    return datetime.now(timezone.utc)


def note_writes(path: str, response, outcome: Outcome, window: tuple[datetime, datetime],
                counts: set[int] | None = None) -> str:
    """A 200 from /updates/: every row it answers as written is recorded, whatever else is
    wrong with the answer (the table is then held to exactly what the server reported);
    returns what is wrong with the answer ('' when nothing), judged against the rows as
    they were before it."""
    if path != expect.UPDATES or response.status_code != 200:
        return ""
    body = json_of(response)
    problem = expect.written_rows_problem(body, response.request.url, outcome.updates, window,
                                          counts)
    for update in expect.reported_writes(body):
        outcome.record(update)
    return problem


def suite_problem(path: str, response, outcome: Outcome, written: str,
                  counts: set[int] | None = None) -> tuple[str, str]:
    """(what, problem) for a 200 from the database suite: /queries/' rows as they are
    stored now, /cached/' rows in any state they had since the server started (the
    contract asks for no invalidation), /updates/' judged by note_writes, the fortunes
    page as bench/verify/suite.py parses it."""
    if path == expect.FORTUNES:
        return "wrong fortunes", expect.fortunes_page_problem(response)
    if path == expect.UPDATES:
        return "wrong written rows", written
    if path == expect.QUERIES:
        def states(uid):
            return [expect.current_state(uid, outcome.updates)]
    else:
        def states(uid):
            return [expect.restored(uid), *outcome.history.get(uid, [])]
    return "wrong rows", expect.read_rows_problem(json_of(response), response.request.url,
                                                  states, counts)


def send(step: Step, case, index: int, target: Target, session: requests.Session,
         outcome: Outcome) -> None:
    token = token_for(step, case, index, target.token)
    call = fresh_copy(case, token)
    label = f"{call.method} {call.path}"
    documented_method = call.method.upper() == step.method.upper()
    outcome.requests += 1
    before = now()
    try:
        with own_connection(call.body is not NOT_SET, session) as on:
            response = call.call(base_url=target.base_url, session=on, timeout=TIMEOUT_S)
    except requests.RequestException as exc:
        outcome.unanswered_in_a_row += 1
        outcome.fail(f"{label} no answer", f"{label}: no answer ({type(exc).__name__}: "
                     f"{str(exc)[:200]})\n    {call.as_curl_command()}")
        return
    outcome.unanswered_in_a_row = 0
    status = response.status_code
    outcome.count(f"{label} {status}")
    written = note_writes(call.path, response, outcome, (before, now()))

    def fail(what: str, problem: str) -> None:
        outcome.fail(f"{label} {status} {what}", f"{label}: {problem}\n    {call.as_curl_command()}")

    try:
        call.validate_response(response, checks=CHECKS if documented_method else [not_a_server_error])
    except (FailureGroup, Failure) as exc:      # a group holds every check that failed
        titles = sorted({type(f).__name__ for f in getattr(exc, "exceptions", [exc])})
        outcome.fail(f"{label} {status} {'+'.join(titles)}", str(exc).strip())
        return
    if not documented_method:
        problem = method_problem(response)
        if problem:
            fail("undocumented method", problem)
        return
    allowed = expect.expected_statuses(call, database=target.database, token_ok=token == target.token,
                                       body_valid=update_body_validator().is_valid)
    if allowed is not None and status not in allowed:
        fail("unexpected status", f"status {status}, the contract says {sorted(allowed)} for this "
                                  f"request (token {'right' if token == target.token else 'missing or wrong'})")
        return
    if status != 200:
        return
    if call.path == expect.USER_PATH:
        body = json_of(response)
        problem = expect.user_answer_problem(call, body, outcome.updates)
        if problem:
            fail("wrong user", problem)
        elif call.method.upper() == "PATCH":
            outcome.record(expect.Update(body["user_id"], call.body["username"],
                                         call.body["email"], expect.parse_stamp(body.get("updated_at"))))
    elif call.path in expect.ECHO_PATHS:
        problem = expect.echo_problem(call, response)
        if problem:
            fail("wrong echo", problem)
    elif call.path in expect.SUITE_PATHS:
        what, problem = suite_problem(call.path, response, outcome, written)
        if problem:
            fail(what, problem)


def failure_text(exc) -> str:
    return "\n".join(f"{f.title}: {f.message}" for f in getattr(exc, "exceptions", [exc]))


def raw_exchange(base_url: str, method: str, target: str, headers: dict,
                 timeout: float) -> requests.Response:
    """One request without a body on a connection of its own, its target sent byte for
    byte (requests would re-quote it: %35 goes out as 5; urllib3 turns an undecodable
    %ZZ into %25ZZ), its answer as a requests.Response that schemathesis's checks read."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, target, headers=headers)
        answer = conn.getresponse()
        content = answer.read()
    finally:
        conn.close()
    fields = HTTPHeaderDict()
    for name, value in answer.getheaders():
        fields.add(name, value)
    response = requests.Response()
    response.status_code, response.reason, response._content = answer.status, answer.reason, content
    response.headers = CaseInsensitiveDict(fields)
    response.raw = SimpleNamespace(headers=fields, version=answer.version)
    response.encoding = requests.utils.get_encoding_from_headers(response.headers)
    response.elapsed = timedelta(0)
    request = requests.Request(method, base_url + "/", headers=headers).prepare()
    request.url = response.url = base_url + target      # as sent, not re-quoted
    response.request = request
    return response


def send_edge(edge: fuzz_edges.Edge, target: Target, session: requests.Session,
              outcome: Outcome) -> None:
    """One hand-written request, sent as raw bytes, held to the document and the
    contract's answer (a case of the operation stands in for schemathesis's checks)."""
    label = f"{edge.method} {edge.path} ({edge.what})"
    request_target = edge.url_path + (f"?{edge.query}" if edge.query else "")
    shown = f"{edge.method} {request_target}" + \
        (f" body {edge.body[:80]!r}{'...' if len(edge.body) > 80 else ''} ({len(edge.body)} bytes)"
         if edge.body is not None else "")
    headers = {"token": target.token}
    if edge.body is not None:
        headers["Content-Type"] = "application/json"
    outcome.requests += 1
    before = now()
    try:
        if edge.body is None:
            response = raw_exchange(target.base_url, edge.method, request_target, headers, TIMEOUT_S)
        else:
            with own_connection(True, session) as on:
                response = on.request(edge.method, target.base_url + request_target,
                                      data=edge.body, headers=headers, timeout=TIMEOUT_S,
                                      allow_redirects=False)
    except (OSError, http.client.HTTPException) as exc:     # requests' errors are OSErrors
        outcome.unanswered_in_a_row += 1
        outcome.fail(f"{label} no answer", f"{label}: no answer ({type(exc).__name__})\n    {shown}")
        return
    outcome.unanswered_in_a_row = 0
    status = response.status_code
    outcome.count(f"{edge.method} {edge.path} {status}")
    written = note_writes(edge.path, response, outcome, (before, now()), edge.rows)
    # stands in for the request in schemathesis's checks, which read only the operation
    call = schema()[edge.path][edge.method].Case(
        path_parameters={"id": fuzz_edges.TARGET_ID} if edge.path == expect.USER_PATH else None)
    problem = ""
    try:
        call.validate_response(response, checks=CHECKS)
    except (FailureGroup, Failure) as exc:
        problem = failure_text(exc)
    allowed = edge.statuses if target.database or edge.path not in expect.DB_PATHS else {404}
    if not problem and status not in allowed:
        problem = f"status {status}, the contract says {sorted(allowed)}"
    if not problem and status == 200 and edge.fields and target.database:
        body = json_of(response)
        username, email = edge.fields
        if not isinstance(body, dict) or (body.get("username"), body.get("email")) != edge.fields:
            problem = f"answered {body!r}, expected username {username!r}, email {email!r}"
        else:
            outcome.record(expect.Update(fuzz_edges.TARGET_ID, username, email,
                                         expect.parse_stamp(body.get("updated_at"))))
    if not problem and status == 200 and edge.path in expect.SUITE_PATHS:
        _, problem = suite_problem(edge.path, response, outcome, written, edge.rows)
    if problem:
        outcome.fail(f"{label} {status}", f"{label}: {problem}\n    {shown}\n    answered "
                     f"{response.headers.get('Content-Type')!r} {response.content[:200]!r}")


def fuzz(plan: list[Step], target: Target) -> Outcome:
    """Send every case of the plan, in order."""
    outcome = Outcome()
    with requests.Session() as session:
        index = 0
        for step in plan:
            steps_cases = cases(step)         # generated once per session, not timed
            began = time.monotonic()
            for case in steps_cases:
                if outcome.dead:
                    return outcome
                if step.mode == "edges":
                    send_edge(case, target, session, outcome)
                else:
                    send(step, case, index, target, session, outcome)
                index += 1
            key = f"{step.method} {step.path} {step.mode}"
            outcome.seconds[key] = outcome.seconds.get(key, 0.0) + time.monotonic() - began
    return outcome
