"""What the tables add for the HTTP workloads (bench.core.workloads, pipelining):

- what pipelining gave each server: its pipelined req/s against its own plain req/s at
  the same load, in the same run (both tables must be there). A server that answers a
  batch one request at a time gains little, and the pipelined table says so per row, as
  TechEmpower's readers had to work out by comparing two tables themselves;
- what compression cost and saved (--compression): on every row of a compressed table,
  the bytes on the wire per answer (wrk's bytes read, headers included, per answer) and
  the server's CPU per request, each against the same server's uncompressed case at the
  same load in the same run;
- on a websocket table, what its req/sec is (messages echoed per second) and, per row,
  the server's CPU per message;
- a "not supported" row, with why, for each server whose manifest says it cannot do a
  test (the run stored them: RunRecord.not_supported).
"""
from __future__ import annotations

from bench.core.pipelining import PIPELINED_TEST, REQUESTS_OF
from bench.core.workloads import WEBSOCKET_TEST

ENCODED = ", Accept-Encoding: "             # what a compressed case's mode says

# below this ratio a server is said to gain nothing from pipelining: the samples' own
# spread on a shared machine is some per cent, so only a clear gain is called one
NO_GAIN_BELOW = 1.15


def workload_notes(doc: dict, tables: list, mode_of) -> None:
    """Every note the HTTP workloads add to the tables (see the module docstring)."""
    gain_over_plain(tables)
    compression_notes(doc, tables, mode_of)
    websocket_notes(doc, tables, mode_of)


def websocket_notes(doc: dict, tables: list, mode_of) -> None:
    """A websocket table's req/sec is messages per second: said once per table, and each
    ranked row's server CPU per message."""
    for table in (t for t in tables if t.test == WEBSOCKET_TEST):
        table.notes.append("req/sec is messages/s: each a text message sent, echoed and "
                           "checked byte for byte, one in flight per connection; "
                           "latency is each message's round trip")
        for row in (r for r in table.rows if r.ranked):
            case = next((c for c in doc["cases"] if c["status"] == "ok"
                         and c["server"] == row.server and c["test"] == table.test
                         and mode_of(c) == table.load["connection_mode"]), None)
            cpu = server_cpu_us(case) if case else None
            if cpu is not None:
                table.notes.append(f"{row.server}: server CPU {cpu:,.1f} µs per message")
                row.notes.append(len(table.notes))


def gain_over_plain(tables: list) -> None:
    """A note on every ranked row of each pipelined table whose server has a ranked plain
    row at the same connections, mode, proxy and generator."""
    plains = [t for t in tables if t.test == REQUESTS_OF]
    for table in (t for t in tables if t.test == PIPELINED_TEST):
        plain = next((p for p in plains if _same_load(p.load, table.load)), None)
        if plain is None:
            continue
        medians = {r.server: r.rps.median for r in plain.rows if r.ranked}
        for row in table.rows:
            base = medians.get(row.server)
            if not row.ranked or not base:
                continue
            ratio = row.rps.median / base
            verdict = (f"no clear gain from pipelining (under {NO_GAIN_BELOW:g}x; a server "
                       f"that answers a batch one request at a time gains none)"
                       if ratio < NO_GAIN_BELOW else "its gain from pipelining")
            table.notes.append(f"{row.server}: {ratio:.2f}x its plain req/s ({base:,.0f}) "
                               f"in this run, {verdict}")
            row.notes.append(len(table.notes))


def _same_load(plain: dict, pipelined: dict) -> bool:
    mode = pipelined["connection_mode"]
    return (all(plain[k] == pipelined[k] for k in ("connections", "generator", "proxy"))
            and mode.startswith(plain["connection_mode"] + ", pipelined "))



def not_supported_in(doc: dict, tables: list):
    """(table, {server, test, reason}) for every server whose manifest says it cannot do
    a test a table shows: its row says so, with why, never a silent gap."""
    for left in doc.get("not_supported") or []:
        for table in tables:
            mode = table.load["connection_mode"]
            compressed = ENCODED in mode
            if table.test == left["test"] or (left["test"] == "compression" and compressed) \
                    or (left["test"].startswith("compression.") and compressed
                        and mode.split(ENCODED)[1].startswith(left["test"].split(".")[1])):
                yield table, left


def compression_notes(doc: dict, tables: list, mode_of) -> None:
    """A note on every ranked row of a compressed table: bytes per answer on the wire and
    server CPU per request, against its uncompressed case (same server, test, size and
    load). `mode_of(case)`: the connection mode its table names (tables.load_params)."""
    cases = {_plain_key(c): c for c in doc["cases"] if c["status"] == "ok"}
    for table in (t for t in tables if ENCODED in t.load["connection_mode"]):
        for row in (r for r in table.rows if r.ranked):
            encoded = next((c for c in doc["cases"] if c["status"] == "ok"
                            and c["server"] == row.server and c["test"] == table.test
                            and mode_of(c) == table.load["connection_mode"]), None)
            plain = encoded and cases.get(_plain_key(encoded, identity=True))
            if not plain:
                continue
            wire, base = bytes_per_answer(encoded), bytes_per_answer(plain)
            cpu, base_cpu = server_cpu_us(encoded), server_cpu_us(plain)
            parts = [f"{wire:,.0f} B per answer on the wire, uncompressed {base:,.0f} B "
                     f"({wire / base:.0%})"] if wire and base else []
            if cpu is not None and base_cpu is not None:
                parts.append(f"server CPU {cpu:,.1f} µs per request, {cpu - base_cpu:+,.1f} µs "
                             f"against uncompressed")
            if parts:
                table.notes.append(f"{row.server}: " + "; ".join(parts))
                row.notes.append(len(table.notes))


def _plain_key(case: dict, identity: bool = False) -> tuple:
    key = {k: v for k, v in case["key"].items() if not (identity and k == "encoding")}
    return tuple(sorted((k, str(v)) for k, v in key.items()))


def bytes_per_answer(case: dict) -> float | None:
    """wrk's bytes read per answer over the case's ok samples (headers included)."""
    ok = [s["summary"] for s in case["samples"] if s["status"] == "ok" and s.get("summary")]
    answers = sum(s.get("requests") or 0 for s in ok)
    return sum(s.get("bytes") or 0 for s in ok) / answers if answers else None


def server_cpu_us(case: dict) -> float | None:
    cost = ((case.get("stats") or {}).get("resources") or {}).get("cost") or {}
    return (cost.get("server") or {}).get("cpu_us_per_request")
