"""The counting phase of a run (`--instructions`): after its samples, each countable case
counted `instructions_runs` times (bench.runner.count), each count recorded into the case
(bench.storage.count) and the document saved at once, as a sample is.

Which cases: one per count key (a server variant on one test: cases that differ only in
client connections or load generator send the server the same requests, and share it);
a case measured through a proxy, over another protocol, with Connection: close or at a
fixed rate is not counted (bench.core.counting.why_not_counted). A server whose manifest
says it cannot be counted, or a machine without a counter, gives a "not countable" count
with the reason, never a zero.

The order: an A/B run's pairs A B B A (each version's two counts around the other's, as
its samples' blocks); otherwise each case's counts one after the other.
"""
from __future__ import annotations

from bench.core.counting import COUNT_WORKERS, RUNTIME_ENV, count_key, why_not_counted
from bench.core.plan import Case
from bench.infra.counters.callgrind import Callgrind
from bench.infra.counters.perf import Perf
from bench.runner.count import CaseCount, CountFailed
from bench.setup import counters
from bench.storage import results
from bench.storage.count import CountRecord

COUNTS_DIR = "counts"
README = """Each folder holds one count of one case (--instructions): <case>/run<k>/.
  instructions/   the instruction counter's files. Under callgrind: callgrind.out.<pid>.1
                  is process <pid>'s counted window (the N requests), .2 its idle window
                  (what it did by the clock alone, taken off the first), and
                  callgrind.out.<pid> everything from the warm-up to the stop. Open one with
                  `callgrind_annotate callgrind.out.<pid>.1` or KCachegrind.
  syscalls/       strace -c's summaries per process: strace.<pid>.1.txt the counted
                  window, .2 the idle one.
  python/         a Python server's bytecodes per Python function: py.<pid>.1.json the
                  counted window, .2 the idle one.
  *.log           the server's output in each of those starts.
results.json holds the figures: cases[].instructions.
"""


class Counting:
    """Counts the cases of a Run (bench.runner.run) that need it."""

    def __init__(self, run):
        self.run, self.plan = run, run.context.count
        settings = run.settings
        self.found = counters.instruction_counter(settings.counter)
        self.syscalls = counters.syscall_counter().present
        self.folder = run.run_dir / COUNTS_DIR

    # ------------------------------------------------------------------ what to count
    def planned(self) -> list[tuple[Case, CountRecord]]:
        """Each case's count record (made now where missing), and the cases that share
        another's; the records still to count first, in counting order."""
        mine: dict[str, tuple[Case, CountRecord]] = {}
        for case in self.run.cases:
            if why_not_counted(case.test, case.load) is not None:
                continue
            key = count_key(case.variant.key, case.test, case.n, case.mix)
            record = self.run.records[case.id]
            if key in mine:
                continue             # shares the first case's count (copied once counted)
            if not record.instructions:
                record.instructions = self._new_record(case, key)
            mine[key] = (case, record.instructions)
        return [pair for pair in mine.values() if not pair[1].done]

    def _new_record(self, case: Case, key: str) -> CountRecord:
        record = CountRecord.planned(
            key=key, method=self.found.method, tool=self.found.tool,
            requests=self.plan.requests, warmup=case.variant.server.count.warmup,
            workers=COUNT_WORKERS, seed=self.plan.seed, runs=self.plan.runs,
            environment={**RUNTIME_ENV.get(case.variant.server.language, {}),
                         **case.variant.server.count.env},
            command=case.variant.server.count.start)
        spec = case.variant.server
        if not spec.count.countable:
            record.not_countable(f"{spec.id}: {spec.count.reason}")
        elif not self.found.present:
            record.not_countable(f"no instruction counter on this machine: {self.found.why}")
        elif self.run.server_host.remote:
            record.not_countable(f"counts run on this machine only; --hosts puts the server "
                                 f"on {self.run.server_host.name}")
        return record

    def order(self, todo: list[tuple[Case, CountRecord]]) -> list[tuple[Case, CountRecord]]:
        """One entry per count to make: A B B A for an A/B run's pairs, else each case's
        counts in a row."""
        pairs = (self.run.doc.ab or {}).get("pairs") or []
        by_id = {case.id: (case, record) for case, record in todo}
        out, seen = [], set()
        for a, b in pairs:
            if a in by_id and b in by_id:
                first, second = by_id[a], by_id[b]
                for i in range(max(first[1].planned_runs, second[1].planned_runs)):
                    out += [first, second] if i % 2 == 0 else [second, first]
                seen |= {a, b}
        for case, record in todo:
            if case.id not in seen:
                out += [(case, record)] * record.planned_runs
        return out

    # ------------------------------------------------------------------ counting
    def execute(self) -> None:
        todo = self.planned()
        for case, record in todo:
            if record.status in (results.PENDING, results.INTERRUPTED) and record.runs:
                record.runs.clear()   # a count interrupted midway is counted again whole
            if record.status == results.INTERRUPTED:
                record.status, record.reason = results.PENDING, None
        steps = self.order([(c, r) for c, r in todo if r.status == results.PENDING])
        show = self.run.display
        if steps:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / "README.txt").write_text(README)
            show.note(f"counting: {len(steps)} count(s) of {len({id(r) for _, r in steps})} "
                      f"case(s), {self.plan.requests} requests each, with "
                      f"{self.found.method} ({self.found.tool})")
        current = None
        try:
            for n, (case, record) in enumerate(steps, 1):
                if record.done:
                    continue
                current = record
                self._count(n, len(steps), case, record)
                self.run.save()
        except BaseException:
            if current is not None and not current.done:
                current.interrupted("interrupted while it was counted")
            raise
        finally:
            self._share()
        self.run.save()

    def _count(self, n: int, total: int, case: Case, record: CountRecord) -> None:
        run, show = self.run, self.run.display
        v = case.variant
        if v.server.label in run.build_errors:
            record.failed(f"build failed: {run.build_errors[v.server.label]}")
            return
        endpoint = run.endpoints.get(v.database)
        verified = run.doc.verification.get(v.key)
        if verified is None and run.settings.verify:
            run._verify(v, endpoint, run.logs / f"{case.id.replace('/', '__')}#count.log", {})
            verified = run.doc.verification[v.key]
        if verified is not None and not verified["passed"]:
            record.failed(f"verification failed: {verified['reason']}")
            return
        run._keep_database_up(v.database)
        endpoint = run.endpoints.get(v.database)
        folder = self.folder / case.id.replace("/", "__") / f"run{len(record.runs) + 1}"
        counter = (lambda where: Perf(run.server_host, where)) if self.found.method == "perf" \
            else (lambda where: Callgrind(run.server_host, where))
        show.note(f"count {n}/{total}: {case.id} run {len(record.runs) + 1} of "
                  f"{record.planned_runs}")
        try:
            counted = CaseCount(case, run.context, self.plan, endpoint=endpoint,
                                host=run.server_host, instructions=counter,
                                syscalls=self.syscalls, on_phase=show.phase
                                ).run(folder, run.run_dir)
        except CountFailed as exc:
            record.failed(str(exc))
            show.error(f"count of {case.id} failed: {exc}")
            return
        record.counted(counted)
        syscalls = counted.syscalls.per_request if counted.syscalls else None
        show.note(f"counted {case.id}: {counted.instructions_per_request:,.0f} instructions"
                  + (f", {syscalls:.2f} system calls" if syscalls is not None else "")
                  + f" per request ({counted.seconds.get('total', 0):.0f} s)")

    def _share(self) -> None:
        """Cases that share a counted case's key get a copy of its count."""
        counted: dict[str, CountRecord] = {}
        for case in self.run.cases:
            record = self.run.records[case.id]
            if why_not_counted(case.test, case.load) is not None:
                continue
            key = count_key(case.variant.key, case.test, case.n, case.mix)
            if key not in counted:
                if record.instructions:
                    counted[key] = record.instructions
            elif counted[key].done:
                record.instructions = CountRecord.from_json(counted[key].to_json())
