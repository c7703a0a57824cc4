"""One case of a run (a server, database, ORM or raw, test and load) with its samples.

A case's status, reason, warnings and stats are derived from its samples by
bench.analysis.statistics; the record only stores what that derived (`derived`). Its own
transition is `rerun`: `--rerun-failed` moves the samples of a case that did not end ok
into its history and gives it fresh pending samples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from bench.storage import results
from bench.storage.count import CountRecord
from bench.storage.record import ABSENT, Record, optional
from bench.storage.sample import SampleRecord

if TYPE_CHECKING:
    from bench.core.plan import Case

# the case statuses --rerun-failed measures again
RERUN = (results.FAILED, results.INVALID, results.VERIFICATION_FAILED, results.INTERRUPTED)


@dataclass(kw_only=True, slots=True)
class HistoryEntry(Record):
    """A case's samples as they were before `--rerun-failed` replaced them."""
    SCHEMA: ClassVar[str] = "#/$defs/history_entry"
    replaced_at: str
    status: str
    reason: str | None
    samples: list[SampleRecord]


@dataclass(kw_only=True, slots=True)
class CaseRecord(Record):
    SCHEMA: ClassVar[str] = "#/$defs/case"
    id: str
    key: dict                              # what makes the case (bench.core.plan.Case.key)
    server: str
    database: str
    orm: bool
    test: str
    status: str = results.PENDING
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    stats: dict | None = None              # bench.analysis.statistics.summarise_case
    samples: list[SampleRecord] = field(default_factory=list)
    history: list[HistoryEntry] = optional()
    # --instructions: the case's count (bench.storage.count), beside its samples
    instructions: CountRecord = optional()

    @classmethod
    def planned(cls, case: "Case", repeat: int) -> "CaseRecord":
        """A case of a new run: `repeat` pending samples, sample i in round i."""
        v = case.variant
        return cls(id=case.id, key=case.key(), server=v.server.label, database=v.database,
                   orm=v.orm, test=case.test,
                   samples=[SampleRecord.pending(i, i) for i in range(repeat)])

    @property
    def variant_key(self) -> str:
        """server/database/raw|orm: what verification is recorded under."""
        return f"{self.server}/{self.database}/{'orm' if self.orm else 'raw'}"

    def sample(self, index: int) -> SampleRecord:
        return self.samples[index]

    def derived(self, status: str, reason: str | None, warnings: list[str],
                stats: dict | None) -> None:
        """What bench.analysis derived from the samples."""
        self.status, self.reason, self.warnings, self.stats = status, reason, warnings, stats

    @property
    def needs_rerun(self) -> bool:
        return self.status in RERUN

    def rerun(self, at: str) -> None:
        """Keep the samples as history and start again with fresh pending ones (same
        indices and rounds, so the stored schedule still holds)."""
        if self.history is ABSENT:
            self.history = []
        self.history.append(HistoryEntry(replaced_at=at, status=self.status,
                                         reason=self.reason, samples=self.samples))
        self.samples = [SampleRecord.pending(s.index, s.round) for s in self.samples]
        self.derived(results.PENDING, None, [], None)
