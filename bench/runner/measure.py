"""Measuring one sample: warm-up, the measured window with resources and connections
sampled, the burst after it. Returns a `Measurement` and writes nothing: the run decides
what of it is recorded, judged and shown.

The load comes from the generators behind `bench.load`'s seam: the closed-loop one for a
case's maximum, the open-model one for a fixed rate. Nothing here names a tool."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable

from bench import load
from bench.core.context import RunContext
from bench.core.mix import MIX_TEST
from bench.core import pipelining, workloads
from bench.core.workloads import IDENTITY, UPLOAD_TEST
from bench.core.protocols import HTTP2
from bench.core.plan import LoadParams, Sample
from bench.infra import db
from bench.infra.lifecycle import Running
from bench.infra.quiet import ForeignLoad
from bench.infra.resources import ConnectionSpread, ResourceSampler, add_cost
from bench.infra.server import ServerProcess
from bench.load import h2load
from bench.load.generator import LoadRequest, LoadResult, without_distribution
from bench.runner.cache import FILL_N, FILL_ROUND_S, FILLS_CACHE, fill_cache
from bench.storage.sample import (BurstRecord, GeneratorRecord, MemoryCapRecord,
                                  ServerProcessRecord, WorkerPids)
from bench.verify.updates import database_clock

WARMUP_SEED_OFFSET = 1_000_003
BURST_SEED_OFFSET = 2_000_003
# each sample's request stream differs (seeded per repetition) but is repeatable
SAMPLE_SEED_STRIDE = 7919


# tests whose request writes: one more before the window would change the rows the
# update checks count, so their start-up is taken to /ping/ only
WRITES = ("update user", "updates", "mixed")


def first_request(test: str, n: int | None, seed: int, token: str,
                  size: str | None = None) -> tuple[str, dict] | None:
    """The case's own endpoint as its load asks it (one of the paths the generators
    draw): what a server's start-up to its first correct answer is timed against."""
    if test in WRITES or test == UPLOAD_TEST:         # a POST: /ping/ only
        return None
    if test == workloads.WEBSOCKET_TEST:             # an upgrade: /ping/ only
        return None
    if test == pipelining.PIPELINED_TEST:            # one of its batch's requests
        test = pipelining.REQUESTS_OF
    return h2load.paths(test, seed, n, count=1, size=size)[0], {"token": token}


@dataclass
class Measurement:
    """What one sample's window gave, before anything is judged or recorded."""
    result: LoadResult
    generator: GeneratorRecord
    resources: dict
    server_process: ServerProcessRecord
    connections_opened: int                # TCP connections the server's host accepted
    warmup: dict | None = None             # the warm-up's summary
    burst: BurstRecord | None = None
    server_exit: int | None = None         # the server's exit code if it died meanwhile
    server_exit_reason: str | None = None  # ... and why, as the sample's reason says it
    db_clock: datetime | None = None       # the database's time before the load
    cache_fill: dict | None = None         # how the cached test's cache was filled (cache.py)
    noise: dict | None = None              # other processes' CPU in the window (infra.quiet)
    proxy_memory_cap: MemoryCapRecord | None = None   # --proxy-memory: its cgroup's account


class Measurer:
    """Measures samples with the run's load plan, on the hosts of their roles. `pids_of`
    gives a database's pids (empty when it has none to watch); `phase` is told each step."""

    def __init__(self, context: RunContext, *, client_host, server_host, db_host,
                 pids_of: Callable[[str], list[int]],
                 phase: Callable[[str], None] = lambda name: None,
                 db_cgroups_kept: Callable[[], str | None] = lambda: None):
        """`db_cgroups_kept`: why the database's processes must stay in their own cgroups
        (a container's), or None when the harness may move them into the role's."""
        self.context, self.plan = context, context.load
        self.client_host, self.server_host, self.db_host = client_host, server_host, db_host
        self.pids_of, self.phase = pids_of, phase
        self.db_cgroups_kept = db_cgroups_kept

    def request(self, test: str, url: str, params: LoadParams, seed: int, duration_s: float,
                rate: float | None = None, n: int | None = None,
                iterations: int | None = None, size: str | None = None) -> LoadRequest:
        """The load of a case's parameters (threads: --threads, or the default for that
        many connections)."""
        p = self.plan
        return LoadRequest(test=test, base_url=url, connections=params.connections,
                           threads=p.threads_for(params.connections), duration_s=duration_s,
                           timeout_s=p.timeout, seed=seed, token=p.token,
                           connection_close=params.connection_mode == "close", rate=rate,
                           n=n, iterations=iterations, protocol=params.protocol,
                           streams=params.streams, pipeline=params.pipeline, size=size,
                           accept_encoding=None if params.encoding == IDENTITY
                           else params.encoding,
                           mix=p.mix.script_arg if p.mix and test == MIX_TEST else None)

    def _run(self, request: LoadRequest, on_start: Callable[[int], None] | None = None,
             name: str | None = None):
        """Run `request` with the generator `name` (the case's), else the default of its
        model (the warm-up and the burst are always the closed loop)."""
        model = "open_model" if request.open_model else "closed_loop"
        generator = load.for_request(request, **({model: name} if name else {}))
        result = generator.run(request, host=self.client_host, on_start=on_start,
                               cpus=self.context.placement.cpus("client"))
        return generator, result

    def measure(self, sample: Sample, running: Running, endpoint: db.Endpoint | None,
                rate: float | None = None) -> Measurement:
        """One sample: `rate` None measures the closed loop, a rate the open model."""
        p, case, server = self.plan, sample.case, running.server
        seed = p.seed + SAMPLE_SEED_STRIDE * sample.index
        clock = database_clock(endpoint) if endpoint else None
        warmup, cache_fill = None, None
        if case.test in FILLS_CACHE and endpoint is not None:
            self.phase("cache fill")
            cache_fill = fill_cache(lambda: self._run(self.request(
                case.test, running.base_url, case.load, seed + WARMUP_SEED_OFFSET,
                FILL_ROUND_S, n=FILL_N)), endpoint)
        if p.warmup > 0:
            # a seed of its own: with the run's seed the measured run would replay the
            # warm-up's ids, and hit rows (and caches) the warm-up just touched. The
            # warm-up is the closed loop at the case's connections, whatever measures.
            self.phase("warm-up")
            warm = self.request(case.test, running.base_url, case.load,
                                seed + WARMUP_SEED_OFFSET, p.warmup, n=case.n, size=case.size)
            # over HTTP/2, and for a test with a generator of its own (websocket), the
            # case's own generator (wrk speaks HTTP/1.1 only)
            own = case.load.protocol in HTTP2 or case.test in workloads.OWN_GENERATOR
            warmup = without_distribution(self._run(
                warm, name=case.load.generator if own else None)[1].summary)
        client_pid: list[int] = []
        # a role born in a capped cgroup v2 is counted there; each cap's account is read
        # with the memory (--server-memory, --proxy-memory)
        caps = {role: c for role, c in (("server", server.memory_cap),
                                        ("proxy", running.proxy and running.proxy.memory_cap))
                if c is not None}
        sampler = ResourceSampler(self._resource_groups(running, case.variant.database,
                                                        client_pid),
                                  adopted={r: c.path for r, c in caps.items() if c.is_v2},
                                  left_alone={"database": kept}
                                  if (kept := self.db_cgroups_kept()) else None,
                                  cgroup_memory={r: c.read for r, c in caps.items()})
        # where the client connections are, half-way through the measured window; with
        # the client's keep-alive connections straight on the server, all of them once seen
        direct = (rate is None and running.proxy is None
                  and case.load.connection_mode == "keep-alive")
        spread = ConnectionSpread(server, at_s=p.duration / 2, host=self.server_host,
                                  expect=case.load.connections if direct else None,
                                  until_s=p.duration * 0.9,
                                  port=running.native.port if running.native else None)
        workers_before = self._worker_pids(server)
        self.phase("measure")
        # accepted where the server runs (a proxy in front runs there too)
        opened_before = self.server_host.tcp_connections_accepted()
        # --iterations sizes the measured closed-loop window only (k6's; the warm-up and
        # the rate points stay windows of time)
        request = self.request(case.test, running.base_url, case.load, seed, p.duration, rate,
                               n=case.n, iterations=p.iterations if rate is None else None,
                               size=case.size)
        if running.tls is not None:      # over TLS: the run's CA, for a generator that checks
            from bench.infra.certs import ca_on_host
            request = replace(request, ca_file=ca_on_host(running.tls, self.client_host))
        foreign = ForeignLoad(self.server_host, lambda: self._role_pids(
            running, case.variant.database, client_pid))

        def generator_started(pid: int) -> None:
            client_pid.append(pid)
            sampler.place("client", [pid])
            spread.client_started()
        with foreign, sampler, spread:
            generator, result = self._run(request, on_start=generator_started,
                                          name=case.load.generator)
        opened = self.server_host.tcp_connections_accepted() - opened_before
        # a burst is new connections with Connection: close, which HTTP/2 and a
        # WebSocket do not have
        burst = self._burst(sample, running) if p.burst > 0 and \
            case.load.protocol not in HTTP2 and case.test not in workloads.OWN_GENERATOR \
            else None
        resources = sampler.figures()
        if resources["client"]["accounting"] != "cgroup2":
            # the generator's own CPU is known exactly (wait4's rusage); the sampler only
            # sees it between readings, and not at all after it exits
            resources["client"].update(cpu_s=round(result.client_cpu_s, 3),
                                       mean_cores=round(result.client_cpu_s
                                                        / max(result.wall_s, 1e-6), 3),
                                       accounting="rusage")
        add_cost(resources, result.summary.get("requests"))
        return Measurement(
            result=result, resources=resources, connections_opened=opened, warmup=warmup,
            burst=burst, db_clock=clock, cache_fill=cache_fill, noise=foreign.figures(),
            generator=GeneratorRecord(
                name=generator.name, connection_close=request.connection_close,
                **generator.describe(request, result), command=result.command,
                exit_code=result.exit_code, client_cpu_s=round(result.client_cpu_s, 3),
                wall_s=round(result.wall_s, 3), threads=result.threads,
                connections=result.connections),
            server_process=self._server_process(server, case, endpoint, spread,
                                                workers_before,
                                                sampler.cgroup_memory_fullest.get("server")),
            proxy_memory_cap=self._cap_record(caps.get("proxy"),
                                              sampler.cgroup_memory_fullest.get("proxy")),
            server_exit=None if server.alive() else server.proc.returncode,
            server_exit_reason=None if server.alive() else server.exit_reason())

    def _server_process(self, server: ServerProcess, case, endpoint, spread,
                        workers_before, cap_in_window: dict | None) -> ServerProcessRecord:
        return ServerProcessRecord(
            workers=server.workers, pool_size=server.pool_size,
            concurrency=case.variant.server.concurrency,
            db_budget=server.budget.as_dict() if server.budget else None,
            # counted by the database while the server still holds its pools
            db_connections_seen=db.server_connections(endpoint) if endpoint else None,
            client_connections=spread.figures(),
            # a worker that crashed shows as a pid gone (replaced or not); readiness
            # waited for all W, so a new pid alone is a worker started late
            worker_pids=WorkerPids(before=workers_before, after=self._worker_pids(server)),
            # what really ran: the CPUs the server's first process may use
            cpus=self.server_host.affinity(server.proc.pid),
            memory_idle_mb=server.idle_memory.mb if server.idle_memory else None,
            memory_idle_kind=server.idle_memory.kind if server.idle_memory else None,
            memory_idle_split_mb=server.idle_memory.split if server.idle_memory else None,
            memory_cap=self._cap_record(server.memory_cap, cap_in_window))

    @staticmethod
    def _cap_record(cap, in_window: dict | None) -> MemoryCapRecord | None:
        """--server-memory, --proxy-memory: the capped cgroup's account at its fullest
        reading in the window (socket buffers are gone once the load stopped), with the
        OOM kills and the peak as they are now."""
        now = cap.read() if cap else None
        if now is None:
            return None
        return MemoryCapRecord(**{**now, **(in_window or {}),
                                  "oom_kills": now["oom_kills"], "peak_mb": now["peak_mb"]})

    def _burst(self, sample: Sample, running: Running) -> BurstRecord:
        """New connections after the window (Connection: close, the case's connection
        count): what a server's accept path and worker pool do under a wave of clients."""
        self.phase("burst")
        params = replace(sample.case.load, connection_mode="close")
        request = self.request(sample.case.test, running.base_url, params,
                               self.plan.seed + BURST_SEED_OFFSET, self.plan.burst,
                               n=sample.case.n, size=sample.case.size)
        opened = self.server_host.tcp_connections_accepted()
        result = self._run(request)[1]
        return BurstRecord(seconds=self.plan.burst, summary=without_distribution(result.summary),
                           connections_opened=self.server_host.tcp_connections_accepted()
                           - opened)

    def _resource_groups(self, running: Running, database: str, client_pid: list[int]):
        """Each group's pids, read on the host that runs it."""
        groups = {"server": (running.server.pids, self.server_host),
                  "client": (lambda: client_pid[:1], self.client_host)}
        if running.proxy is not None:
            groups["proxy"] = (running.proxy.pids, self.server_host)
        if database != "none" and self.pids_of(database):
            groups["database"] = (lambda: self.pids_of(database), self.db_host)
        return groups

    def _role_pids(self, running: Running, database: str,
                   client_pid: list[int]) -> list[int]:
        """Every role's pids, for the foreign load to leave out (those the harness did not
        start itself, such as a database in a container, are not in its tree)."""
        groups = self._resource_groups(running, database, client_pid)
        return [pid for pids, _ in groups.values() for pid in pids()]

    @staticmethod
    def _worker_pids(server: ServerProcess) -> list[int] | None:
        if server.spec.worker_check.count != "processes":
            return None
        return sorted(p.pid for p in server.worker_processes())
