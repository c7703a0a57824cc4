"""What the tables add for the HTTP workloads (bench.core.workloads, pipelining):

- what pipelining gave each server: its pipelined req/s against its own plain req/s at
  the same load, in the same run (both tables must be there). A server that answers a
  batch one request at a time gains little, and the pipelined table says so per row, as
  TechEmpower's readers had to work out by comparing two tables themselves;
- a "not supported" row, with why, for each server whose manifest says it cannot do a
  test (the run stored them: RunRecord.not_supported).
"""
from __future__ import annotations

from bench.core.pipelining import PIPELINED_TEST, REQUESTS_OF

# below this ratio a server is said to gain nothing from pipelining: the samples' own
# spread on a shared machine is some per cent, so only a clear gain is called one
NO_GAIN_BELOW = 1.15


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
        for table in (t for t in tables if t.test == left["test"]):
            yield table, left
