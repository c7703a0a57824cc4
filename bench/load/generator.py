"""What every load generator is to the rest of the harness: one request for a window of
load in (`LoadRequest`), one neutral result out (`LoadResult`, whose `summary` has the
same keys and units whichever tool measured), and the `Generator` protocol between them.

A new generator is one module implementing `Generator` plus one line in
`bench/load/__init__.py`'s registry; the run never names a tool.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol


class LoadError(RuntimeError):
    """A load generator is missing, failed, hung, or produced no report."""


def check_window(duration_s: float, timeout_s: float, token: str) -> None:
    """What every load generator's settings need: a window, a timeout, a usable token."""
    if not duration_s > 0:
        raise ValueError(f"duration_s must be > 0, got {duration_s}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if not token or any(c in token for c in "\r\n \t"):
        raise ValueError("token must be a non-empty string without whitespace")


# a summary's whole distribution (bench.core.histogram): kept for the measured window,
# left out of the warm-up's and the burst's, whose percentiles nothing reads
DISTRIBUTION_KEYS = ("latency_histogram", "latency_histogram_error")


def without_distribution(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in DISTRIBUTION_KEYS}


@dataclass(frozen=True)
class LoadRequest:
    """One window of load, whatever runs it. `rate` None is the closed loop (each
    connection sends its next request when the last is answered); a rate in req/s is the
    open model (requests scheduled at that rate whether or not answers came back)."""
    test: str
    base_url: str
    connections: int
    threads: int
    duration_s: float
    timeout_s: float
    seed: int
    token: str
    connection_close: bool = False
    rate: float | None = None
    n: int | None = None           # the database suite's rows per request (queries, ...)
    # the closed loop ends after this many requests (duration_s its cap); only a generator
    # runs it: k6 (bench.core.settings refuses --iterations with any other)
    iterations: int | None = None
    # what the connections speak (bench.core.protocols; base_url's scheme says TLS or
    # not) and HTTP/2's concurrent streams per connection (h2load's -m)
    protocol: str = "h1"
    streams: int = 1
    # over TLS: the run's CA (PEM), for a generator that verifies the certificate (k6)
    ca_file: str | None = None
    # the `mixed` test's weighted endpoints, as its scripts read them
    # (bench.core.mix.Mix.script_arg: "get_user:60,update_user:15,queries.5:10,...")
    mix: str | None = None
    # HTTP/1.1 requests each connection writes at once (the pipelined test); only a
    # generator whose `pipelines` is true runs more than 1 (bench.core.pipelining)
    pipeline: int = 1
    # the static test's file, the upload test's body: "1k", "64k", "1m" (bench.core.workloads)
    size: str | None = None
    # --compression: the Accept-Encoding every request carries (None: the header is not
    # sent, and answers come uncompressed); the generators never decode what comes back
    accept_encoding: str | None = None

    @property
    def headers(self) -> list[str]:
        """The request headers besides the token every generator sends."""
        return [] if self.accept_encoding is None else \
            [f"Accept-Encoding: {self.accept_encoding}"]

    @property
    def open_model(self) -> bool:
        return self.rate is not None


@dataclass
class LoadResult:
    command: list[str]
    summary: dict            # the normalised summary (wrk's keys and units)
    client_cpu_s: float      # user + sys CPU of the generator process (os.wait4 rusage)
    wall_s: float
    exit_code: int
    stderr_tail: str = ""
    raw: dict = field(default_factory=dict)   # the tool's own report, as it printed it
    threads: int = 0                          # what ran, not what was asked for
    connections: int = 0

    @property
    def client_cpu_fraction(self) -> float:
        """client CPU seconds per wall second (1.0 == one core fully busy)."""
        return self.client_cpu_s / self.wall_s if self.wall_s > 0 else 0.0


class Generator(Protocol):
    """A load generator behind the seam. `open_model`: whether it runs `rate` requests
    (the open model) or the closed loop; a generator that runs both (k6) also has
    `models = frozenset({False, True})` (bench.load.runs reads it)."""
    name: str
    open_model: bool

    def version(self, host) -> str:
        """The tool's version line, as stored with the run."""

    def run(self, request: LoadRequest, *, host, on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        """Run one window; errors of the server are figures in the summary, a failure of
        the tool is LoadError."""

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        """What the stored generator record says besides the common fields (e.g. the
        rate block of an open-model run)."""

    def open_connections(self, connections: int, threads: int) -> int:
        """The connections it really opens when asked for `connections` on `threads`."""
