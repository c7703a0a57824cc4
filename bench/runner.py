"""One benchmark run: provision, build, then for every case restore -> start -> verify ->
warm up -> measure -> check -> stop, writing results.json after each case."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bench import db, dataset, lifecycle, load, provision, render, results, stats, verify
from bench.config import Case, Settings, Variant, databases_needed
from bench.manifest import ServerSpec


WARMUP_SEED_OFFSET = 1_000_003


def say(message: str) -> None:
    print(message, flush=True)


def database_version(ep: db.Endpoint) -> str | None:
    try:
        return str(db.scalar(ep, "SELECT version()"))
    except Exception:  # noqa: BLE001 - informational only
        return None


def expected_distinct_rows(requests: int, rows: int = dataset.ROW_COUNT) -> float:
    """How many distinct ids `requests` uniform draws over `rows` ids hit, on average."""
    return rows * (1 - (1 - 1 / rows) ** requests)


@dataclass
class Run:
    settings: Settings
    cases: list[Case]

    def __post_init__(self):
        self.run_id = results.new_run_id()
        self.run_dir = Path(self.settings.results_dir) / self.run_id
        self.logs = self.run_dir / "logs"
        self.doc = results.new_document(self.run_id, self.settings.public(), results.environment())
        self.doc["cases"] = [self._blank(c) for c in self.cases]
        self.endpoints: dict[str, db.Endpoint] = {}
        self.build_errors: dict[str, str] = {}

    @staticmethod
    def _blank(case: Case) -> dict:
        v = case.variant
        return {"id": case.id, "server": v.server.id, "database": v.database, "orm": v.orm,
                "test": case.test, "status": results.PENDING, "reason": None, "warnings": [],
                "summary": None, "warmup": None, "error_rate": None, "wrk": None,
                "server_process": None, "checks": {}, "overhead_s": {}, "log": None}

    def save(self) -> None:
        results.save(self.doc, self.run_dir)

    # ------------------------------------------------------------------ the run
    def execute(self) -> dict:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.save()
        say(f"run {self.run_id}: {len(self.cases)} cases, results in {self.run_dir}")
        provider = None
        try:
            with lifecycle.sigterm_as_interrupt():
                engines = databases_needed(self.cases)
                if engines:
                    provider = self._provision(engines)
                self._build_all()
                for index, (case, record) in enumerate(zip(self.cases, self.doc["cases"]), 1):
                    say(f"[{index}/{len(self.cases)}] {case.variant.key} {case.test}")
                    self._run_case(case, record)
                    self.save()
                    say(f"    -> {self._outcome(record)}")
            self.doc["status"] = "complete"
        except KeyboardInterrupt:
            self.doc["status"] = "interrupted"
            self.doc["reason"] = "interrupted (Ctrl-C or SIGTERM); results so far are kept"
            for record in self.doc["cases"]:
                if record["status"] == results.PENDING:
                    record["status"] = results.INTERRUPTED
                    record["reason"] = "run interrupted before this case finished"
            say("\ninterrupted: stopping servers and databases, keeping results so far")
        except (provision.ProvisionError, load.LoadError) as exc:
            self.doc["status"] = "failed"
            self.doc["reason"] = str(exc)
            say(f"run failed: {exc}")
        finally:
            if provider is not None:
                provider.stop()
            self.doc["finished_at"] = results.now_iso()
            self.save()
            self._write_tables()
        return self.doc

    def _provision(self, engines: list[str]):
        s = self.settings
        prov = provision.provider(s.db_mode, engines,
                                  ports={"postgres": s.pg_port, "mysql": s.mysql_port},
                                  dsns={"postgres": s.postgres_dsn, "mysql": s.mysql_dsn},
                                  keep=s.keep_db)
        say(f"databases ({prov.mode}): starting {', '.join(engines)}")
        try:
            self.endpoints = prov.start()
        except BaseException:
            prov.stop()
            raise
        for engine, ep in self.endpoints.items():
            self.doc["databases"][engine] = {**ep.public(), "mode": prov.mode,
                                             "version": database_version(ep)}
        return prov

    def _build_all(self) -> None:
        specs: dict[str, ServerSpec] = {c.variant.server.id: c.variant.server for c in self.cases}
        for spec in specs.values():
            if not spec.build:
                continue
            say(f"building {spec.id} (log: logs/build-{spec.id}.log)")
            try:
                seconds = lifecycle.build(spec, self.settings, self.logs / f"build-{spec.id}.log")
                self.doc["builds"][spec.id] = {"ok": True, "seconds": round(seconds, 2), "error": None}
            except lifecycle.ServerError as exc:
                self.build_errors[spec.id] = exc.reason
                self.doc["builds"][spec.id] = {"ok": False, "seconds": 0, "error": str(exc)}
                say(str(exc))
            self.save()

    # ------------------------------------------------------------------ one case
    def _run_case(self, case: Case, record: dict) -> None:
        v = case.variant
        record["started_at"] = results.now_iso()
        if v.server.id in self.build_errors:
            record.update(status=results.FAILED, reason=self.build_errors[v.server.id])
            return
        known = self.doc["verification"].get(v.key)
        if known is not None and not known["passed"]:
            record.update(status=results.VERIFICATION_FAILED, reason=known["reason"])
            return
        endpoint = self.endpoints.get(v.database)
        log_path = self.logs / f"{case.id.replace('/', '__')}.log"
        record["log"] = str(log_path.relative_to(self.run_dir))
        overhead = record["overhead_s"]
        overhead["restore"] = round(db.restore(endpoint), 4) if endpoint else 0.0
        server = lifecycle.ServerProcess(v, self.settings, endpoint, log_path)
        try:
            t0 = time.monotonic()
            server.start()
            server.wait_ready()
            overhead["start_to_ready"] = round(time.monotonic() - t0, 4)
            if not self._verified(v, server, endpoint, record):
                return
            self._measure(case, server, endpoint, record)
        except lifecycle.ServerError as exc:
            record.update(status=results.FAILED, reason=exc.reason)
            say(str(exc))
        except load.LoadError as exc:
            record.update(status=results.FAILED, reason=f"load generator: {exc}")
        finally:
            overhead["stop"] = round(server.stop(), 4)
            overhead["total"] = round(sum(overhead.get(k, 0.0) for k in
                                          ("restore", "start_to_ready", "stop")), 4)

    def _verified(self, v: Variant, server: lifecycle.ServerProcess,
                  endpoint: db.Endpoint | None, record: dict) -> bool:
        if not self.settings.verify:
            return True
        if v.key not in self.doc["verification"]:
            report = verify.verify_server(server.base_url, server_id=v.server.id,
                                          database=v.database, orm=v.orm,
                                          token=self.settings.token, endpoint=endpoint)
            self.doc["verification"][v.key] = report.to_dict()
            with open(self.run_dir / "verification.txt", "a") as f:
                f.write(report.summary_text() + "\n\n")
            say(f"    verification: {'passed' if report.passed else 'FAILED: ' + report.reason}")
        known = self.doc["verification"][v.key]
        if not known["passed"]:
            record.update(status=results.VERIFICATION_FAILED, reason=known["reason"])
            return False
        return True

    def _measure(self, case: Case, server: lifecycle.ServerProcess,
                 endpoint: db.Endpoint | None, record: dict) -> None:
        s = self.settings
        load_settings = load.LoadSettings(threads=s.threads, connections=s.connections,
                                          duration_s=s.duration, timeout_s=s.timeout,
                                          seed=s.seed, token=s.token)
        db_clock = db.scalar(endpoint, "SELECT CURRENT_TIMESTAMP") if endpoint else None
        if s.warmup > 0:
            # a seed of its own: with the run's seed the measured run would replay the
            # warm-up's ids, and hit rows (and caches) the warm-up just touched
            warm_settings = dataclasses.replace(load_settings, seed=s.seed + WARMUP_SEED_OFFSET)
            warm = load.run_wrk(case.test, server.base_url, warm_settings, s.warmup)
            record["warmup"] = warm.summary
        base = server.resources()
        result = load.run_wrk(case.test, server.base_url, load_settings, s.duration)
        after = server.resources()
        record["summary"] = result.summary
        record["wrk"] = {"command": result.command, "exit_code": result.exit_code,
                         "client_cpu_s": round(result.client_cpu_s, 3),
                         "wall_s": round(result.wall_s, 3)}
        record["server_process"] = {
            "workers": s.workers, "pool_size": server.pool_size,
            "concurrency": case.variant.server.concurrency,
            "cpu_s": round(after.cpu_s - base.cpu_s, 3), "rss_mb": round(after.rss_mb, 1),
            "processes": after.processes}
        if not server.alive():
            record.update(status=results.FAILED,
                          reason=f"server exited during the run (code {server.proc.returncode})")
            return
        valid, reason, warnings, figures = stats.judge(
            result.summary, connections=s.connections, threads=s.threads,
            client_cpu_s=result.client_cpu_s, wall_s=result.wall_s, threshold=s.error_threshold,
            server_cpu_s=after.cpu_s - base.cpu_s)
        record["error_rate"] = figures["error_rate"]
        record["checks"].update(figures)
        record["warnings"] += warnings
        record.update(status=results.OK if valid else results.INVALID, reason=reason)
        if case.test == "update user" and endpoint is not None and valid:
            self._check_updates(endpoint, db_clock, record)

    def _check_updates(self, endpoint: db.Endpoint, since, record: dict) -> None:
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
        elif updated < 0.9 * expected or updated > min(sent + 2 * self.settings.connections,
                                                       dataset.ROW_COUNT):
            record.update(status=results.INVALID,
                          reason=f"{updated} rows updated after {sent} PATCH requests; "
                                 f"about {expected:.0f} expected")

    # ------------------------------------------------------------------ output
    @staticmethod
    def _outcome(record: dict) -> str:
        if record["status"] == results.OK:
            s = record["summary"]
            text = (f"{s['requests_per_sec']:,.0f} req/s, p50 {s['latency_ms']['p50']:.2f} ms, "
                    f"p99 {s['latency_ms']['p99']:.2f} ms, errors {s['errors']['total']}, "
                    f"overhead {record['overhead_s'].get('total', 0):.2f} s")
            return text + "".join(f"\n       note: {w}" for w in record["warnings"])
        return f"{record['status'].upper()}: {record['reason']}"

    def _write_tables(self) -> None:
        tables = render.build_tables(self.doc)
        if not tables:
            return
        text = render.to_markdown(tables, self.doc)
        (self.run_dir / "tables.md").write_text(text)
        say("\n" + text)
        say(f"results: {self.run_dir / results.RESULTS_FILE}\ntables:  {self.run_dir / 'tables.md'}")
