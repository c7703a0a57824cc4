"""One benchmark run in a session: the interleaved schedule of samples (restore -> start
-> ready -> verify once per variant -> measure -> judge -> check -> stop), each recorded
into the run record and saved (validated, atomically) as soon as it ends.

The run schedules, records, saves and displays; measuring is bench.runner.measure's, the
session (bench.session) owns the hosts, databases and builds, the records
(bench.storage) own the document, the report package writes what a reader sees."""
from __future__ import annotations

import random
import traceback
from pathlib import Path
from typing import Callable

from bench.analysis import judge, statistics
from bench.core import protocols
from bench.core.mix import MIX_TEST, summary_problem
from bench.core.workloads import IDENTITY
from bench.core.plan import Case, Sample, databases_needed, schedule
from bench.core.settings import NO_PROXY, closed_loop_generators, open_model_generators, \
    parse_rate
from bench.infra import databases, db, environment, versions
from bench.infra import state as run_state
from bench.infra import topology
from bench.setup.probe import runtime_version
from bench.infra.lifecycle import running_server
from bench.infra.quiet import MachineWatch, noise_verdict
from bench.infra.server import ServerError, log_tail
from bench.infra.settle import settle
from bench.infra.signals import shielded, sigterm_as_interrupt
from bench.load import LoadError
from bench.load import generator as load_generator
from bench.report import console
from bench.report.progress import Display
from bench.runner.cache import not_filled
from bench.runner.measure import Measurement, Measurer, first_request
from bench.session import Session
from bench.storage import results
from bench.storage.case import CaseRecord
from bench.storage.document import (LoadLevel, LoadRecord, OpenModel, Placement,
                                    RunRecord, Schedule, ServerInfo)
from bench.storage.sample import SampleRecord
from bench.verify import verified_server
from bench.verify.updates import check_updates

# a sample's time besides its warm-up and measured window (restore, settle, start, stop),
# for the first ETA, before any sample has finished
PLANNED_OVERHEAD_S = 3.0


class NoMaximum(RuntimeError):
    """A rate given as a share of a maximum that this run did not measure."""


def database_version(ep: db.Endpoint) -> str | None:
    try:
        return str(db.scalar(ep, "SELECT version()"))
    except Exception:  # noqa: BLE001 - informational only
        return None


class Run:
    def __init__(self, session: Session, cases: list[Case],
                 previous: tuple[RunRecord, Path] | None = None,
                 unavailable: dict[str, str] | None = None, *, new_order: bool = False,
                 not_supported: list[dict] | None = None,
                 order: Callable[[list[Case], int, int], list[Sample]] = schedule):
        """A new run of `cases` in an entered `session` (its hosts, databases and builds),
        or (`previous`: a stored run and its folder, as prepared by bench.cli.resume) the
        continuation of a stored one, whose samples still pending or interrupted are
        measured into the same document. `unavailable`: the servers left out because this
        machine lacks their toolchain, with why (stored, so the tables say it);
        `not_supported`: the (server, test) pairs left out because the server's manifest
        says it cannot do that workload (bench.core.plan.not_supported), stored too.
        `new_order`: draw an order seed even if one was asked for (calibrate's second run
        gets an order of its own). `order`: what puts the samples in order (cases,
        samples per case, seed); `ab` gives its paired blocks."""
        self.session, self.cases = session, cases
        self.unavailable = dict(unavailable or {})
        self.not_supported = list(not_supported or [])
        # which machine runs each role (a role not in the hosts file runs here)
        self.hosts = session.hosts
        self.client_host = session.host("client")
        self.server_host = session.host("server")
        self.db_host = session.host("database")
        if previous is not None:
            self.doc, self.run_dir = previous
            order_seed = self.doc.schedule.order_seed
        elif session.context.order_seed is None or new_order:
            order_seed = random.SystemRandom().randrange(2**31)
        else:
            order_seed = session.context.order_seed
        # the settings as asked; what this run resolved (the order seed, the servers'
        # address) is beside them in the context
        self.context = session.context.with_order_seed(order_seed)
        self.settings = settings = self.context.settings
        self.samples: list[Sample] = order(cases, settings.repeat, order_seed)
        order = [f"{s.case.id}#{s.index}" for s in self.samples]
        if previous is None:
            self._new_document(order)
        elif order != self.doc.schedule.order:
            raise ValueError("the stored schedule differs from the one its settings give")
        self.run_id = self.doc.run_id
        self.logs = self.run_dir / "logs"
        self.records = {c.id: c for c in self.doc.cases}
        self.stored: dict = {}         # the document as last saved (what readers read)
        self.endpoints: dict[str, db.Endpoint] = {}
        self.build_errors: dict[str, str] = {}
        self.proxy_build_errors: dict[str, str] = {}     # proxy name -> why, for --behind
        self.proxies = {}              # name -> ProxySpec, for --behind
        wanted = [name for name in settings.behind if name != NO_PROXY]
        if any(p != protocols.DEFAULT for p in settings.protocols) and \
                settings.tls_proxy not in wanted:
            wanted.append(settings.tls_proxy)      # terminates what a server does not speak
        self.tls = None                # the run's certificates (bench.infra.certs), made once
        self.h2spec_seen: dict = {}    # (proxy, protocol) -> h2spec's verdict, run once
        if wanted:
            from bench.infra.proxy import available_proxies
            found = available_proxies()
            self.proxies = {name: found[name] for name in wanted}
        self.display = None

    def _new_document(self, order: list[str]) -> None:
        settings, cases = self.settings, self.cases
        run_id = results.new_run_id()
        env = environment.environment()
        machine = env["machine_id"] = environment.fingerprint(env)
        self.run_dir = results.run_dir(settings.results_dir, machine, run_id)
        specs = {c.variant.server.label: c.variant.server for c in cases}
        servers = {sid: ServerInfo(description=s.description, language=s.language,
                                   concurrency=s.concurrency, reference=s.reference,
                                   versions=versions.server_versions(s, runtime_version))
                   for sid, s in specs.items()}
        self.doc = RunRecord.new(
            run_id=run_id, settings=self.context.public(), environment=env,
            load=self._load_record(), servers=servers,
            cases=[CaseRecord.planned(c, settings.repeat) for c in cases],
            schedule=Schedule(order_seed=self.context.order_seed, rounds=settings.repeat,
                              order=order),
            topology=topology.record(self.hosts), unavailable=self.unavailable,
            not_supported=self.not_supported)

    def _load_record(self) -> LoadRecord:
        """The load generators as they will run: per connection level, the threads and the
        connections the closed-loop generator really opens; the first level also at the
        top, as before sweeps."""
        plan, placement = self.context.load, self.context.placement
        # the first closed-loop and open-model generators of --generator (the record's
        # one generator per model; each sample stores the one that ran it)
        closed = load_generator(closed_loop_generators(plan.generators)[0])
        levels = [LoadLevel(connections=closed.open_connections(c, plan.threads_for(c)),
                            threads=plan.threads_for(c), connections_requested=c)
                  for c in plan.levels]
        record = LoadRecord(
            generator=closed.name, version=closed.version(self.client_host),
            threads=levels[0].threads, connections=levels[0].connections,
            connections_requested=levels[0].connections_requested, levels=levels,
            connection_modes=list(plan.connection_modes), behind=list(plan.behind),
            placement=Placement(server=placement.cpus("server"),
                                client=placement.cpus("client"), db=placement.cpus("db")))
        if plan.rates:
            open_model = load_generator(open_model_generators(plan.generators)[0])
            record.open_model = OpenModel(generator=open_model.name,
                                          version=open_model.version(self.client_host),
                                          rates=list(plan.rates), knee_p99_ms=plan.knee_p99_ms)
        return record

    def save(self) -> None:
        """Validated and written atomically, with the cases' verdicts derived again."""
        self.stored = self.doc.save(self.run_dir, derive=statistics.refresh)

    # ------------------------------------------------------------------ the run
    def execute(self, display_mode: str = "auto") -> dict:
        todo = [smp for smp in self.samples if self._record(smp).unmeasured]
        plan = self.context.load
        with Display(total_samples=len(todo), mode=display_mode,
                     planned_seconds_per_sample=plan.duration + plan.warmup
                     + PLANNED_OVERHEAD_S) as self.display:
            self.measurer = Measurer(self.context, client_host=self.client_host,
                                     server_host=self.server_host, db_host=self.db_host,
                                     pids_of=self._database_pids, phase=self.display.phase,
                                     db_cgroups_kept=lambda: getattr(
                                         self.session.provider, "cgroups_kept", None))
            return self._execute(todo)

    def _execute(self, todo: list[Sample]) -> dict:
        show = self.display
        self.logs.mkdir(parents=True, exist_ok=True)
        self.doc.start()
        self.save()
        if run_state.ACTIVE is not None:
            run_state.ACTIVE.run_dir(self.run_dir)
        show.run_started(self.run_id, len(self.cases), self.settings.repeat, str(self.run_dir),
                         self.context.order_seed)
        if len(todo) != len(self.samples):
            show.note(f"{len(todo)} of {len(self.samples)} samples to measure")
        for server_id, why in self.unavailable.items():
            show.note(f"not measured: {server_id} is unavailable on this machine: {why}")
        for left in self.not_supported:
            show.note(f"not measured: {left['server']} does not support {left['test']}: "
                      f"{left['reason']}")
        try:
            with sigterm_as_interrupt():
                engines = databases_needed([s.case for s in todo])
                if engines:
                    self._provision(engines)
                self._build_all({s.case.variant.server.label: s.case.variant.server for s in todo})
                self._build_proxies({s.case.load.proxy for s in todo})
                watch, last_round = MachineWatch(self.server_host), None
                for n, sample in enumerate(todo, 1):
                    record = self._record(sample)
                    if sample.round != last_round:      # before the run, then each round
                        self._machine_state(watch, sample.round, last_round is None)
                        last_round = sample.round
                    show.sample_started(n, sample.case.id, sample.round + 1)
                    self._keep_database_up(sample.case.variant.database)
                    self._run_sample(sample, record)
                    self._after_sample(sample, record)
                    self.save()
                    ok = record.status == results.OK
                    summary = record.summary or {}
                    show.sample_finished(n, sample.case.id, record.status,
                                         summary.get("requests_per_sec") if ok else None,
                                         (summary.get("latency_ms") or {}).get("p99") if ok
                                         else None, console.sample_outcome(record.to_json()))
            if self.context.count is not None:
                from bench.runner.counting import Counting
                Counting(self).execute()
            self.doc.complete()
        except KeyboardInterrupt:
            self.doc.interrupt("interrupted (Ctrl-C or SIGTERM); results so far are kept",
                               "run interrupted before this sample was measured")
            show.error("interrupted: stopping servers and databases, keeping results so far")
        except Exception as exc:  # noqa: BLE001 - whatever ends the run, the document says so
            known = isinstance(exc, (databases.ProvisionError, LoadError))
            reason = str(exc) if known else f"{type(exc).__name__}: {exc}"
            self.doc.fail(reason, f"run failed: {reason}"[:300])
            show.error(f"run failed: {reason}")
            if not known:
                with open(self.logs / "harness-error.log", "a") as f:
                    f.write(traceback.format_exc())
        finally:
            with shielded():
                left = self.session.stop_databases()
                if left:            # e.g. a data folder kept because a process still uses it
                    self.doc.cleanup_problems = left
                self.doc.finish(results.now_iso())
                self.save()
                show.final(console.write_run_outputs(self.stored, self.run_dir,
                                                     self.run_dir / results.RESULTS_FILE))
        return self.stored

    # ------------------------------------------------------------------ the session's parts
    def _provision(self, engines: list[str]) -> None:
        self.endpoints = self.session.start_databases(engines, self.display)
        for engine, ep in self.endpoints.items():
            provider = self.session.provider
            # docker mode adds the container's image (name, id, digest, source)
            described = provider.describe(engine) if hasattr(provider, "describe") else {}
            self.doc.databases[engine] = {**ep.public(), "mode": provider.mode,
                                          "version": database_version(ep), **described}

    def _database_pids(self, engine: str) -> list[int]:
        provider = self.session.provider
        return provider.pids(engine) if provider is not None and engine in self.endpoints \
            else []

    def _keep_database_up(self, engine: str) -> None:
        """A database that died (in an earlier sample, or between samples) is restarted
        before the next sample that needs it; the restart is recorded."""
        if engine not in self.endpoints or self.session.alive(engine):
            return
        self.display.error(f"the {engine} database is down: restarting it")
        started = results.now_iso()
        self.endpoints[engine] = self.session.restart(engine)
        self.doc.databases[engine].setdefault("restarts", []).append(started)

    def _build_all(self, specs: dict) -> None:
        for server_id, built in self.session.builds(specs.values(), self.logs, self.display):
            self.doc.builds[server_id] = built.record
            if not built.ok:
                self.build_errors[server_id] = built.reason
            elif server_id in self.doc.servers:
                # what its environment really holds, now that it is made
                self.doc.servers[server_id].versions = \
                    versions.server_versions(specs[server_id], runtime_version)
            self.save()

    def _build_proxies(self, names: set[str]) -> None:
        """The --behind proxies built from source (a `build` in proxy.toml) that this run's
        samples put in front, as servers are built: recorded under "builds" as
        behind-<name>; a failed build fails the samples behind that proxy."""
        specs = [self.proxies[n] for n in sorted(names) if n in self.proxies]
        for label, built in self.session.builds(specs, self.logs, self.display):
            self.doc.builds[label] = built.record
            if not built.ok:
                self.proxy_build_errors[label.removeprefix("behind-")] = built.reason
            self.save()

    def _machine_state(self, watch: MachineWatch, rnd: int, first: bool) -> None:
        """The server host's state into the environment block, with the foreign load
        since the reading before (bench.infra.quiet)."""
        label = f"round {rnd + 1}" if not first else \
            ("before the run" if rnd == 0 else f"resumed at round {rnd + 1}")
        self.display.phase("machine state")
        self.doc.environment.setdefault("machine_state", {"host": self.server_host.name,
                                                          "readings": []})
        self.doc.environment["machine_state"]["readings"].append(watch.reading(label))

    # ------------------------------------------------------------------ one sample
    def _record(self, sample: Sample) -> SampleRecord:
        return self.records[sample.case.id].sample(sample.index)

    def _after_sample(self, sample: Sample, record: SampleRecord) -> None:
        """A sample that did not end ok keeps the tail of its log; if its database died
        meanwhile, the reason says so (and the next sample gets a restarted one)."""
        engine = sample.case.variant.database
        if record.status in (results.OK, results.PENDING):
            return
        if engine in self.endpoints and not self.session.alive(engine):
            record.reason = (f"the {engine} database died during this sample; "
                             + (record.reason or ""))[:500]
        if record.log:
            record.log_tail = log_tail(self.run_dir / record.log, 20) or None

    def _protocol_checks(self, variant) -> dict:
        """What verification needs to check a framework over the run's protocols besides
        h1: the terminating proxy and the certificates (none for the ceiling, measured
        over h1 only)."""
        others = [p for p in self.settings.protocols if p != protocols.DEFAULT]
        if not others or variant.server.reference:
            return {}
        tls = next((self._certificates(p) for p in others if p in protocols.TLS), None)
        return {"protocols": tuple(others), "edge": self.proxies[self.settings.tls_proxy],
                "tls": tls, "h2spec_seen": self.h2spec_seen}

    def _certificates(self, protocol: str):
        """The run's CA and server certificate (in its folder), made on first use by a
        protocol over TLS: for the names a client on this machine uses."""
        if protocol not in protocols.TLS:
            return None
        if self.tls is None:
            from bench.infra import certs
            # the names a client uses: here, and the server host's address (--hosts)
            self.tls = certs.for_clients(self.run_dir / "tls", self.settings.host,
                                         self.context.launch.host)
        return self.tls

    def _run_sample(self, sample: Sample, record: SampleRecord) -> None:
        case, v = sample.case, sample.case.variant
        record.begin(results.now_iso())
        if v.server.label in self.build_errors:
            record.mark_failed(self.build_errors[v.server.label])
            return
        if case.load.proxy in self.proxy_build_errors:
            record.mark_failed(f"the {case.load.proxy} proxy did not build: "
                               f"{self.proxy_build_errors[case.load.proxy]}")
            return
        known = self.doc.verification.get(v.key)
        if known is not None and not known["passed"]:
            record.mark_verification_failed(known["reason"])
            return
        endpoint = self.endpoints.get(v.database)
        log_path = self.logs / f"{case.id.replace('/', '__')}#{sample.index}.log"
        record.log = str(log_path.relative_to(self.run_dir))
        try:
            if self.settings.verify and known is None:
                self._verify(v, endpoint, log_path, record.overhead_s)
                if not self.doc.verification[v.key]["passed"]:
                    record.mark_verification_failed(self.doc.verification[v.key]["reason"])
                    return
            rate = self.asked_rate(case) if case.load.rate is not None else None
            with running_server(v, self.context.launch, endpoint, log_path,
                                overhead_s=record.overhead_s,
                                settle_db=self._settler(endpoint),
                                proxy=self.proxies.get(case.load.proxy),
                                on_phase=self.display.phase,
                                host=self.server_host, protocol=case.load.protocol,
                                tls=self._certificates(case.load.protocol),
                                first_request=first_request(
                                    case.test, case.n, self.context.load.seed,
                                    self.settings.token, case.size),
                                compression=case.load.encoding != IDENTITY) as running:
                if running.settled is not None:
                    record.db_settle = running.settled.as_dict()
                    if not running.settled.quiet:
                        record.warnings.append("the database was still busy when the "
                                               "sample started: " + running.settled.steps[-1])
                measured = self.measurer.measure(sample, running, endpoint, rate)
                self._record_measurement(sample, measured, endpoint, record)
            # complete once the server stopped: e.g. its log could not be fetched
            record.warnings += running.warnings
        except ServerError as exc:
            record.mark_failed(exc.reason)
        except LoadError as exc:
            record.mark_failed(f"load generator: {exc}"[:500])
        except NoMaximum as exc:
            record.mark_failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - one broken sample must not end the run
            record.mark_failed(f"{type(exc).__name__}: {exc}"[:500])
            with open(self.logs / "harness-error.log", "a") as f:
                f.write(f"{sample.case.id}#{sample.index}:\n{traceback.format_exc()}\n")

    def _record_measurement(self, sample: Sample, m: Measurement,
                            endpoint: db.Endpoint | None, record: SampleRecord) -> None:
        """Store what was measured, then the verdicts on it: the judge's, and for
        `update user` the database's own count of the rows it changed."""
        record.warmup, record.connections_opened = m.warmup, m.connections_opened
        if m.burst is not None:
            record.burst = m.burst
        if m.cache_fill is not None:
            record.checks["cache_fill"] = m.cache_fill
        record.summary, record.generator = m.result.summary, m.generator
        record.resources, record.server_process = m.resources, m.server_process
        record.noise = m.noise
        if m.proxy_memory_cap is not None:
            record.proxy_memory_cap = m.proxy_memory_cap
        if m.server_exit is not None:
            record.mark_failed(m.server_exit_reason
                               or f"server exited during the run (code {m.server_exit})")
            return
        self.display.phase("check")
        verdict = judge.judge_sample(record.to_json(), self.context.load.error_threshold)
        record.error_rate = verdict.figures["error_rate"]
        record.checks.update(verdict.figures)
        record.warnings += verdict.warnings
        record.judged(verdict.valid, verdict.reason)
        noisy = noise_verdict(m.noise, self.settings.foreign_cpu_limit)
        if noisy and self.settings.strict and verdict.valid:
            record.mark_invalid(f"{noisy} (--strict)")
        elif noisy:
            record.warnings.append(noisy)
        unfilled = not_filled(m.cache_fill)
        if unfilled and verdict.valid:
            record.mark_invalid(unfilled)
        if sample.case.test == "update user" and endpoint is not None and verdict.valid:
            summary, warm = m.result.summary, m.warmup or {}
            updates = check_updates(
                endpoint, m.db_clock,
                answered=summary["requests"] + warm.get("requests", 0),
                sent=(summary.get("sent") or summary["requests"])
                + (warm.get("sent") or warm.get("requests", 0)),
                connections=m.result.connections)
            record.checks.update(updates.figures)
            if updates.invalid:
                record.mark_invalid(updates.invalid)
        if sample.case.test == MIX_TEST and verdict.valid:
            unmixed = summary_problem(self.context.load.mix, m.result.summary)
            if unmixed:
                record.mark_invalid(unmixed)

    def _verify(self, variant, endpoint, log_path, overhead_s: dict) -> None:
        """Verify a variant in a start of its own (its log beside the sample's), before
        its first sample; the report goes into the document at once."""
        started = {}
        with verified_server(variant, self.context.launch, endpoint,
                             log_path.with_name(log_path.stem.split("#")[0] + "#verify.log"),
                             token=self.settings.token, suite=self.settings.with_suite,
                             mix=self.context.load.mix, overhead_s=started,
                             pipeline=self.settings.pipelined_depth,
                             tests=self.settings.tests, compression=self.settings.compression,
                             settle_db=self._settler(endpoint),
                             on_phase=self.display.phase, host=self.server_host,
                             # the reference (ceiling) is only ever measured directly
                             proxies={} if variant.server.reference else self.proxies,
                             **self._protocol_checks(variant)) as running:
            report = running.verification
        overhead_s["verify"] = round(started.get("total", 0.0), 4)
        self._record_verification(variant.key, report)

    def _record_verification(self, key: str, report) -> None:
        self.doc.verification[key] = report.to_dict()
        with open(self.run_dir / results.VERIFICATION_REPORT, "a") as f:
            f.write(report.summary_text() + "\n\n")
        self.display.note(f"verification of {key}: "
                          f"{'passed' if report.passed else 'FAILED: ' + report.reason}")

    def _settler(self, endpoint: db.Endpoint | None):
        if endpoint is None:
            return None
        return lambda: settle(endpoint, lambda: self._database_pids(endpoint.engine),
                              host=self.db_host)

    def asked_rate(self, case: Case) -> float:
        """The open-model rate of a case in req/s: absolute, or a share of the measured
        maximum of the same case in the closed loop (the median of its samples here)."""
        kind, value = parse_rate(case.load.rate)
        if kind == "absolute":
            return value
        base = self.records[Case(case.variant, case.test, case.load.closed_loop).id]
        stats = base.stats or {}
        median = (stats.get("requests_per_sec") or {}).get("median")
        if stats.get("status") != results.OK or not median:
            raise NoMaximum(f"no measured maximum to take {case.load.rate} of: the closed-loop "
                            f"case {base.id} is {stats.get('status', 'not measured')}")
        return value * median

