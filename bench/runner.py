"""One benchmark run: provision, build, then every sample of the interleaved schedule
(restore -> start -> ready -> verify once per variant -> warm up -> measure while
sampling resources -> judge -> check -> stop), saving results.json after each sample."""
from __future__ import annotations

import dataclasses
import random
import time
import traceback
from datetime import timezone
from pathlib import Path

from bench.analysis import judge, statistics
from bench.core import dataset
from bench.core.plan import Case, LoadParams, Sample, databases_needed, schedule
from bench.core.settings import NO_PROXY, parse_rate
from bench.infra import databases, db, environment
from bench.infra import state as run_state
from bench.infra import topology
from bench.infra.lifecycle import Running, running_server
from bench.infra.resources import ConnectionSpread, ResourceSampler
from bench.infra.server import ServerError, ServerProcess, log_tail
from bench.infra.settle import settle
from bench.infra.signals import shielded, sigterm_as_interrupt
from bench.load import oha, wrk
from bench.report import formats, html, tables
from bench.report.progress import Display
from bench.session import Session
from bench.storage import results
from bench.storage.resume import TO_MEASURE
from bench.verify import verifier

WARMUP_SEED_OFFSET = 1_000_003
BURST_SEED_OFFSET = 2_000_003
# each sample's request stream differs (seeded per repetition) but is repeatable
SAMPLE_SEED_STRIDE = 7919


class NoMaximum(RuntimeError):
    """A rate given as a share of a maximum that this run did not measure."""


# a sample's time besides its warm-up and measured window (restore, settle, start, stop),
# for the first ETA, before any sample has finished
PLANNED_OVERHEAD_S = 3.0


def database_version(ep: db.Endpoint) -> str | None:
    try:
        return str(db.scalar(ep, "SELECT version()"))
    except Exception:  # noqa: BLE001 - informational only
        return None


def expected_distinct_rows(requests: int, rows: int = dataset.ROW_COUNT) -> float:
    """How many distinct ids `requests` uniform draws over `rows` ids hit, on average."""
    return rows * (1 - (1 - 1 / rows) ** requests)


def blank_sample(index: int, rnd: int) -> dict:
    return {"index": index, "round": rnd, "status": results.PENDING, "reason": None,
            "warnings": [], "started_at": None, "summary": None, "warmup": None,
            "error_rate": None, "wrk": None, "resources": None, "server_process": None,
            "checks": {}, "overhead_s": {}, "log": None}


def blank_case(case: Case, repeat: int) -> dict:
    v = case.variant
    return {"id": case.id, "key": case.key(), "server": v.server.id, "database": v.database,
            "orm": v.orm, "test": case.test, "status": results.PENDING, "reason": None,
            "warnings": [], "stats": None,
            "samples": [blank_sample(i, i) for i in range(repeat)]}


class Run:
    def __init__(self, session: Session, cases: list[Case],
                 previous: tuple[dict, Path] | None = None,
                 unavailable: dict[str, str] | None = None, *, new_order: bool = False):
        """A new run of `cases` in an entered `session` (its hosts, databases and builds),
        or (`previous`: a stored document and its folder, as prepared by
        bench.storage.resume) the continuation of a stored one, whose samples still
        pending or interrupted are measured into the same document. `unavailable`: the
        servers left out because this machine lacks their toolchain, with why (stored, so
        the tables say it). `new_order`: draw an order seed even if one was asked for
        (calibrate's second run gets an order of its own)."""
        self.session, self.cases = session, cases
        self.unavailable = dict(unavailable or {})
        # which machine runs each role (a role not in the hosts file runs here)
        self.hosts = session.hosts
        self.client_host = session.host("client")
        self.server_host = session.host("server")
        self.db_host = session.host("database")
        if previous is not None:
            self.doc, self.run_dir = previous
            order_seed = self.doc["schedule"]["order_seed"]
        elif session.context.order_seed is None or new_order:
            order_seed = random.SystemRandom().randrange(2**31)
        else:
            order_seed = session.context.order_seed
        # the settings as asked; what this run resolved (the order seed, the servers'
        # address) is beside them in the context
        self.context = session.context.with_order_seed(order_seed)
        self.settings = settings = self.context.settings
        self.samples: list[Sample] = schedule(cases, settings.repeat, order_seed)
        order = [f"{s.case.id}#{s.index}" for s in self.samples]
        if previous is None:
            self._new_document(order)
        elif order != self.doc["schedule"]["order"]:
            raise ValueError("the stored schedule differs from the one its settings give")
        self.run_id = self.doc["run_id"]
        self.logs = self.run_dir / "logs"
        self.records = {c["id"]: c for c in self.doc["cases"]}
        self.endpoints: dict[str, db.Endpoint] = {}
        self.provider = None
        self.build_errors: dict[str, str] = {}
        self.proxies = {}              # name -> ProxySpec, for --behind
        wanted = [name for name in settings.behind if name != NO_PROXY]
        if wanted:
            from bench.infra.proxy import available_proxies
            found = available_proxies()
            self.proxies = {name: found[name] for name in wanted}

    def _new_document(self, order: list[str]) -> None:
        settings, cases = self.settings, self.cases
        run_id = results.new_run_id()
        self.doc = results.new_document(run_id, self.context.public(),
                                        environment.environment(), self._load_record())
        if self.unavailable:
            self.doc["unavailable"] = self.unavailable
        machine = self.doc["environment"]["machine_id"] = environment.fingerprint(self.doc["environment"])
        self.run_dir = results.run_dir(settings.results_dir, machine, run_id)
        specs = {c.variant.server.id: c.variant.server for c in cases}
        self.doc["servers"] = {sid: {"description": s.description, "language": s.language,
                                     "concurrency": s.concurrency, "reference": s.reference,
                                     "versions": environment.server_versions(s.dir)}
                               for sid, s in specs.items()}
        self.doc["cases"] = [blank_case(c, settings.repeat) for c in cases]
        self.doc["schedule"] = {"order_seed": self.context.order_seed, "rounds": settings.repeat,
                                "order": order}
        self.doc["topology"] = topology.record(self.hosts)

    def wrk_load(self, load: LoadParams, seed: int) -> wrk.LoadSettings:
        """What wrk runs for a case's load parameters (threads: --threads, or the default
        for that many connections)."""
        s = self.settings
        return wrk.LoadSettings(threads=s.threads_for(load.connections),
                                connections=load.connections, duration_s=s.duration,
                                timeout_s=s.timeout, seed=seed, token=s.token,
                                connection_close=load.connection_mode == "close")

    def _load_record(self) -> dict:
        """The load generators as they will run: per connection level, the threads and the
        connections wrk really opens; the first level also at the top, as before sweeps."""
        s = self.settings
        levels = [self.wrk_load(LoadParams(c), s.seed) for c in s.levels]
        tools = environment.tools()
        record = {"generator": "wrk", "version": tools["wrk"], "threads": levels[0].threads,
                  "connections": levels[0].open_connections,
                  "connections_requested": levels[0].connections,
                  "levels": [{"connections": w.open_connections, "threads": w.threads,
                              "connections_requested": w.connections} for w in levels],
                  "connection_modes": list(s.connection_modes), "behind": list(s.behind),
                  "placement": {side: s.cpus(side) for side in ("server", "client", "db")}}
        if s.rates:
            record["open_model"] = {"generator": "oha", "version": oha.oha_version(),
                                    "rates": list(s.rates), "knee_p99_ms": s.knee_p99_ms}
        return record

    def save(self) -> None:
        statistics.refresh(self.doc)
        results.save(self.doc, self.run_dir)

    # ------------------------------------------------------------------ the run
    def execute(self, display_mode: str = "auto") -> dict:
        todo = [smp for smp in self.samples if self._record(smp)["status"] in TO_MEASURE]
        s = self.settings
        with Display(total_samples=len(todo), mode=display_mode,
                     planned_seconds_per_sample=s.duration + s.warmup + PLANNED_OVERHEAD_S) \
                as self.display:
            return self._execute(todo)

    def _execute(self, todo: list[Sample]) -> dict:
        show = self.display
        self.logs.mkdir(parents=True, exist_ok=True)
        self.doc["status"], self.doc["reason"] = "running", None
        self.save()
        if run_state.ACTIVE is not None:
            run_state.ACTIVE.run_dir(self.run_dir)
        show.run_started(self.run_id, len(self.cases), self.settings.repeat, str(self.run_dir),
                         self.context.order_seed)
        if len(todo) != len(self.samples):
            show.note(f"{len(todo)} of {len(self.samples)} samples to measure")
        for server_id, why in self.unavailable.items():
            show.note(f"not measured: {server_id} is unavailable on this machine: {why}")
        try:
            with sigterm_as_interrupt():
                engines = databases_needed([s.case for s in todo])
                if engines:
                    self._provision(engines)
                self._build_all({s.case.variant.server.id: s.case.variant.server for s in todo})
                for n, sample in enumerate(todo, 1):
                    record = self._record(sample)
                    show.sample_started(n, sample.case.id, sample.round + 1)
                    self._keep_database_up(sample.case.variant.database)
                    self._run_sample(sample, record)
                    self._after_sample(sample, record)
                    self.save()
                    ok = record["status"] == results.OK
                    summary = record.get("summary") or {}
                    show.sample_finished(n, sample.case.id, record["status"],
                                         summary.get("requests_per_sec") if ok else None,
                                         (summary.get("latency_ms") or {}).get("p99") if ok
                                         else None, self._outcome(record))
            self.doc["status"] = "complete"
        except KeyboardInterrupt:
            self._end_pending("interrupted", "interrupted (Ctrl-C or SIGTERM); results so far "
                              "are kept", results.INTERRUPTED,
                              "run interrupted before this sample was measured")
            show.error("interrupted: stopping servers and databases, keeping results so far")
        except Exception as exc:  # noqa: BLE001 - whatever ends the run, the document says so
            reason = (str(exc) if isinstance(exc, (databases.ProvisionError, wrk.LoadError))
                      else f"{type(exc).__name__}: {exc}")
            self._end_pending("failed", reason, results.FAILED, f"run failed: {reason}"[:300])
            show.error(f"run failed: {reason}")
            if not isinstance(exc, (databases.ProvisionError, wrk.LoadError)):
                with open(self.logs / "harness-error.log", "a") as f:
                    f.write(traceback.format_exc())
        finally:
            with shielded():
                left = self.session.stop_databases()
                if left:            # e.g. a data folder kept because a process still uses it
                    self.doc["cleanup_problems"] = left
                self.doc["finished_at"] = results.now_iso()
                self.save()
                self._write_tables()
        return self.doc

    def _keep_database_up(self, engine: str) -> None:
        """A database that died (in an earlier sample, or between samples) is restarted
        before the next sample that needs it; the restart is recorded."""
        if engine not in self.endpoints or self.session.alive(engine):
            return
        self.display.error(f"the {engine} database is down: restarting it")
        started = results.now_iso()
        self.endpoints[engine] = self.session.restart(engine)
        self.doc["databases"][engine].setdefault("restarts", []).append(started)

    def _after_sample(self, sample: Sample, record: dict) -> None:
        """A sample that did not end ok keeps the tail of its log; if its database died
        meanwhile, the reason says so (and the next sample gets a restarted one)."""
        engine = sample.case.variant.database
        if record["status"] in (results.OK, results.PENDING):
            return
        if engine != "none" and self.provider is not None and not self.provider.alive(engine):
            record["reason"] = (f"the {engine} database died during this sample; "
                                + (record["reason"] or ""))[:500]
        if record.get("log"):
            record["log_tail"] = log_tail(self.run_dir / record["log"], 20) or None

    def _record(self, sample: Sample) -> dict:
        return self.records[sample.case.id]["samples"][sample.index]

    def _end_pending(self, status: str, reason: str, sample_status: str, sample_reason: str):
        self.doc["status"], self.doc["reason"] = status, reason
        for case in self.doc["cases"]:
            for record in case["samples"]:
                if record["status"] == results.PENDING:
                    record.update(status=sample_status, reason=sample_reason)

    def _provision(self, engines: list[str]) -> None:
        self.endpoints = self.session.start_databases(engines, self.display)
        self.provider = self.session.provider
        for engine, ep in self.endpoints.items():
            self.doc["databases"][engine] = {**ep.public(), "mode": self.provider.mode,
                                             "version": database_version(ep)}

    def _build_all(self, specs: dict) -> None:
        for server_id, built in self.session.builds(specs.values(), self.logs, self.display):
            self.doc["builds"][server_id] = built.as_dict()
            if not built.ok:
                self.build_errors[server_id] = built.reason
            self.save()

    # ------------------------------------------------------------------ one sample
    def _run_sample(self, sample: Sample, record: dict) -> None:
        case, v = sample.case, sample.case.variant
        record["started_at"] = results.now_iso()
        if v.server.id in self.build_errors:
            record.update(status=results.FAILED, reason=self.build_errors[v.server.id])
            return
        known = self.doc["verification"].get(v.key)
        if known is not None and not known["passed"]:
            record.update(status=results.VERIFICATION_FAILED, reason=known["reason"])
            return
        endpoint = self.endpoints.get(v.database)
        log_path = self.logs / f"{case.id.replace('/', '__')}#{sample.index}.log"
        record["log"] = str(log_path.relative_to(self.run_dir))
        check = verifier(self.settings.token) if (self.settings.verify and known is None) else None
        try:
            with running_server(v, self.context.launch, endpoint, log_path, verifier=check,
                                overhead_s=record["overhead_s"],
                                settle_db=self._settler(endpoint),
                                proxy=self.proxies.get(case.load.proxy),
                                on_phase=self.display.phase,
                                host=self.server_host) as running:
                if running.settled is not None:
                    record["db_settle"] = running.settled.as_dict()
                    if not running.settled.quiet:
                        record["warnings"].append("the database was still busy when the "
                                                  "sample started: " + running.settled.steps[-1])
                if check is not None:
                    self._record_verification(v.key, running.verification)
                if not self.doc["verification"].get(v.key, {"passed": True})["passed"]:
                    record.update(status=results.VERIFICATION_FAILED,
                                  reason=self.doc["verification"][v.key]["reason"])
                    return
                self._measure(sample, running, endpoint, record)
        except ServerError as exc:
            record.update(status=results.FAILED, reason=exc.reason)
        except wrk.LoadError as exc:
            record.update(status=results.FAILED, reason=f"load generator: {exc}"[:500])
        except NoMaximum as exc:
            record.update(status=results.FAILED, reason=str(exc))
        except Exception as exc:  # noqa: BLE001 - one broken sample must not end the run
            record.update(status=results.FAILED, reason=f"{type(exc).__name__}: {exc}"[:500])
            with open(self.logs / "harness-error.log", "a") as f:
                f.write(f"{sample.case.id}#{sample.index}:\n{traceback.format_exc()}\n")

    def _record_verification(self, key: str, report) -> None:
        self.doc["verification"][key] = report.to_dict()
        with open(self.run_dir / "verification.txt", "a") as f:
            f.write(report.summary_text() + "\n\n")
        self.display.note(f"verification of {key}: "
                          f"{'passed' if report.passed else 'FAILED: ' + report.reason}")

    def _settler(self, endpoint: db.Endpoint | None):
        if endpoint is None:
            return None
        return lambda: settle(endpoint, lambda: self.provider.pids(endpoint.engine)
                              if self.provider is not None else [], host=self.db_host)

    def _resource_groups(self, running: Running, database: str, client_pid: list[int]):
        """Each group's pids, read on the host that runs it."""
        groups = {"server": (running.server.pids, self.server_host),
                  "client": (lambda: client_pid[:1], self.client_host)}
        if running.proxy is not None:
            groups["proxy"] = (running.proxy.pids, self.server_host)
        if database != "none" and self.provider is not None and self.provider.pids(database):
            groups["database"] = (lambda: self.provider.pids(database), self.db_host)
        return groups

    def asked_rate(self, case: Case) -> float:
        """The open-model rate of a case in req/s: absolute, or a share of the measured
        maximum of the same case under wrk (the median of its samples in this run)."""
        kind, value = parse_rate(case.load.rate)
        if kind == "absolute":
            return value
        base = self.records[Case(case.variant, case.test, case.load.closed_loop).id]
        stats = base.get("stats") or {}
        median = (stats.get("requests_per_sec") or {}).get("median")
        if stats.get("status") != results.OK or not median:
            raise NoMaximum(f"no measured maximum to take {case.load.rate} of: the closed-loop "
                            f"case {base['id']} is {stats.get('status', 'not measured')}")
        return value * median

    def _generate(self, sample: Sample, url: str, client_pid: list[int]):
        """The measured window's load: wrk (closed loop) or oha at a fixed rate."""
        s, case = self.settings, sample.case
        seed = s.seed + SAMPLE_SEED_STRIDE * sample.index
        cpus = s.cpus("client")
        if case.load.rate is None:
            load = self.wrk_load(case.load, seed)
            result = wrk.run_wrk(case.test, url, load, s.duration, on_start=client_pid.append,
                                 host=self.client_host,
                                 cpus=cpus)
            return result, {"generator": "wrk", "connection_close": load.connection_close}
        rate = self.asked_rate(case)
        # as many threads as wrk gets for these connections: oha's default (every physical
        # core) took CPU from the server and raised latency on a 2-core machine
        load = oha.OhaSettings(connections=case.load.connections, rate=rate,
                               duration_s=s.duration, timeout_s=s.timeout, seed=seed,
                               token=s.token, connection_close=case.load.connection_mode == "close",
                               worker_threads=s.threads_for(case.load.connections))
        result = oha.run_oha(case.test, url, load, s.duration, on_start=client_pid.append,
                             host=self.client_host,
                             cpus=cpus)
        return result, {"generator": "oha", "connection_close": load.connection_close,
                        "rate": result.summary["rate"]}

    def _measure(self, sample: Sample, running: Running, endpoint: db.Endpoint | None,
                 record: dict) -> None:
        s, case, server = self.settings, sample.case, running.server
        db_clock = db.scalar(endpoint, "SELECT CURRENT_TIMESTAMP") if endpoint else None
        if s.warmup > 0:
            # a seed of its own: with the run's seed the measured run would replay the
            # warm-up's ids, and hit rows (and caches) the warm-up just touched. The
            # warm-up is wrk's closed loop at the case's connections, whatever measures.
            warm = self.wrk_load(case.load, s.seed + SAMPLE_SEED_STRIDE * sample.index
                                 + WARMUP_SEED_OFFSET)
            self.display.phase("warm-up")
            record["warmup"] = wrk.run_wrk(case.test, running.base_url, warm, s.warmup,
                                           host=self.client_host,
                                           cpus=s.cpus("client")).summary
        client_pid: list[int] = []
        sampler = ResourceSampler(self._resource_groups(running, case.variant.database,
                                                        client_pid))
        # where the client connections are, half-way through the measured window
        spread = ConnectionSpread(server, at_s=s.duration / 2, host=self.server_host)
        workers_before = self._worker_pids(server)
        self.display.phase("measure")
        # accepted where the server runs (a proxy in front runs there too)
        opened_before = self.server_host.tcp_connections_accepted()
        with sampler, spread:
            result, generator = self._generate(sample, running.base_url, client_pid)
        record["connections_opened"] = self.server_host.tcp_connections_accepted() - opened_before
        if s.burst > 0:
            record["burst"] = self._burst(sample, running)
        record["summary"] = result.summary
        record["wrk"] = {**generator, "command": result.command, "exit_code": result.exit_code,
                         "client_cpu_s": round(result.client_cpu_s, 3),
                         "wall_s": round(result.wall_s, 3), "threads": result.threads,
                         "connections": result.connections}
        record["resources"] = figures = sampler.figures()
        # the generator's own CPU is known exactly (wait4's rusage); the sampler only sees
        # it between readings, and not at all after it exits
        figures["client"].update(cpu_s=round(result.client_cpu_s, 3),
                                 mean_cores=round(result.client_cpu_s / max(result.wall_s, 1e-6), 3))
        record["server_process"] = {
            "workers": s.workers, "pool_size": server.pool_size,
            "concurrency": case.variant.server.concurrency,
            "db_budget": server.budget.as_dict() if server.budget else None,
            # counted by the database while the server still holds its pools
            "db_connections_seen": db.server_connections(endpoint) if endpoint else None,
            "client_connections": spread.figures(),
            # a worker that crashed shows as a pid gone (replaced or not); readiness
            # waited for all W, so a new pid alone is a worker started late
            "worker_pids": {"before": workers_before, "after": self._worker_pids(server)},
            # what really ran: the CPUs the server's first process may use
            "cpus": self.server_host.affinity(server.proc.pid)}
        if not server.alive():
            record.update(status=results.FAILED,
                          reason=f"server exited during the run (code {server.proc.returncode})")
            return
        self.display.phase("check")
        verdict = judge.judge_sample(record, s.error_threshold)
        record["error_rate"] = verdict.figures["error_rate"]
        record["checks"].update(verdict.figures)
        record["warnings"] += verdict.warnings
        record.update(status=results.OK if verdict.valid else results.INVALID,
                      reason=verdict.reason)
        if case.test == "update user" and endpoint is not None and verdict.valid:
            self._check_updates(endpoint, db_clock, record, result.connections)

    def _burst(self, sample: Sample, running: Running) -> dict:
        """New connections after the window (Connection: close, the case's connection
        count): what a server's accept path and worker pool do under a wave of clients."""
        s = self.settings
        self.display.phase("burst")
        load = dataclasses.replace(self.wrk_load(sample.case.load, s.seed + BURST_SEED_OFFSET),
                                   connection_close=True)
        opened = self.server_host.tcp_connections_accepted()
        result = wrk.run_wrk(sample.case.test, running.base_url, load, s.burst,
                             host=self.client_host,
                             cpus=s.cpus("client"))
        return {"seconds": s.burst, "summary": result.summary,
                "connections_opened": self.server_host.tcp_connections_accepted() - opened}

    def _worker_pids(self, server: ServerProcess) -> list[int] | None:
        if server.spec.worker_check.count != "processes":
            return None
        return sorted(p.pid for p in server.worker_processes())

    def _check_updates(self, endpoint: db.Endpoint, since, record: dict,
                       connections: int) -> None:
        """After `update user`: still exactly the contract's rows, and plausibly many updated."""
        count = db.scalar(endpoint, "SELECT COUNT(*) FROM users")
        if since.tzinfo is None:          # MySQL: naive, in UTC
            since = since.replace(tzinfo=timezone.utc)
        params = (since if endpoint.engine == "postgres" else since.replace(tzinfo=None),)
        updated = db.scalar(endpoint, "SELECT COUNT(*) FROM users WHERE updated_at >= %s", params)
        sent = record["summary"]["requests"] + (record["warmup"] or {}).get("requests", 0)
        expected = expected_distinct_rows(sent)
        record["checks"].update(rows_after=count, rows_updated=updated,
                                rows_updated_expected=round(expected))
        if count != dataset.ROW_COUNT:
            record.update(status=results.INVALID,
                          reason=f"table has {count} rows after the run, expected {dataset.ROW_COUNT}")
        # requests still in flight when wrk stops are not counted but may have updated a row
        elif updated < 0.9 * expected or updated > min(sent + 2 * connections,
                                                       dataset.ROW_COUNT):
            record.update(status=results.INVALID,
                          reason=f"{updated} rows updated after {sent} PATCH requests; "
                                 f"about {expected:.0f} expected")

    # ------------------------------------------------------------------ output
    @staticmethod
    def _outcome(record: dict) -> str:
        if record["status"] == results.OK:
            s = record["summary"]
            res = (record.get("resources") or {}).get("server") or {}
            text = (f"{s['requests_per_sec']:,.0f} req/s, p50 {s['latency_ms']['p50']:.2f} ms, "
                    f"p99 {s['latency_ms']['p99']:.2f} ms, errors {s['errors']['total']}, "
                    f"server {res.get('mean_cores', 0):.2f} cores "
                    f"{res.get('memory_peak_mb') or 0:.0f} MiB, "
                    f"overhead {record['overhead_s'].get('total', 0):.2f} s")
            return text + "".join(f"\n       note: {w}" for w in record["warnings"])
        return f"{record['status'].upper()}: {record['reason']}"

    def _write_tables(self) -> None:
        built, rates = tables.build_tables(self.doc), tables.build_rate_tables(self.doc)
        if not built and not rates:
            self.display.final(f"results: {self.run_dir / results.RESULTS_FILE}")
            return
        text = formats.to_markdown(built, self.doc, rates=rates)
        (self.run_dir / "tables.md").write_text(text)
        try:
            report = html.write(self.doc, built, self.run_dir, rates)
        except Exception as exc:  # noqa: BLE001 - a chart must never cost the results
            report = f"not written ({type(exc).__name__}: {exc})"
        self.display.final(f"\n{text}\nresults: {self.run_dir / results.RESULTS_FILE}\n"
                           f"tables:  {self.run_dir / 'tables.md'}\nreport:  {report}")
