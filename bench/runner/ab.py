"""An A/B run: two versions of the servers (git refs or folders) measured in one sitting.

Each version's servers are checked out (bench.infra.checkout) and built into a cache of
their own; every selected case is planned twice, once per version (labels id@A, id@B),
and measured in paired blocks (ABBA / BAAB, bench.core.plan.paired_schedule) by an
ordinary Run, so verification, judging, saving after each sample, Ctrl-C and the tables
are those of any run. The verdicts come from the paired analysis (bench.analysis.paired).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path

from bench.analysis import paired
from bench.core.manifest import ServerSpec, discover
from bench.core.plan import Case, paired_schedule, plan
from bench.core.settings import SelectionError, Settings
from bench.infra import checkout
from bench.report import ab as ab_report
from bench.session import FOR_RUN, Session, servers_unavailable

ARMS = ("A", "B")


@dataclass
class Selection:
    """What an A/B run measures and why."""
    servers: list[str]
    why: str                                  # how the servers were chosen
    only_in: dict[str, str]                   # server id -> the version it is missing from


def select(settings: Settings, baseline: dict[str, ServerSpec],
           candidate: dict[str, ServerSpec], everything: bool,
           unavailable: dict[str, str]) -> Selection:
    """--servers as named; --all every server both versions have; otherwise the servers
    whose code (own folder or the shared code it uses) differs between the versions."""
    both = sorted((set(baseline) & set(candidate)) - set(unavailable))
    only_in = {sid: "the candidate" if sid in baseline else "the baseline"
               for sid in set(baseline) ^ set(candidate)}
    if settings.servers:
        missing = [s for s in settings.servers if s not in both]
        if missing:
            raise SelectionError(
                f"--servers: {', '.join(missing)} not in both versions (or unavailable on "
                f"this machine); servers in both: {', '.join(both) or 'none'}")
        return Selection(list(settings.servers), "named with --servers", only_in)
    if everything:
        return Selection(both, "every server of both versions (--all)", only_in)
    changed = [s for s in checkout.changed_servers(baseline, candidate) if s in both]
    return Selection(changed, "the servers whose code differs between the versions (own "
                              "folder or the shared code it uses)", only_in)


def armed(spec: ServerSpec, version: checkout.Version) -> ServerSpec:
    return replace(spec, arm=version.arm, cache_dir=version.cache_dir)


def paired_cases(settings: Settings, specs: dict[str, dict[str, ServerSpec]],
                 unavailable: dict[str, str]) -> list[Case]:
    """Each case of the selection twice, baseline then candidate, side by side."""
    cases = plan(settings, specs["A"], unavailable=unavailable)
    out: list[Case] = []
    for case in cases:
        twin = dataclasses.replace(case, variant=dataclasses.replace(
            case.variant, server=specs["B"][case.variant.server.id]))
        out += [case, twin]
    return out


def check(settings: Settings, hosts) -> None:
    if settings.repeat < 2 or settings.repeat % 2:
        raise SelectionError(f"--repeat {settings.repeat}: ab measures each version twice "
                             f"per round (ABBA / BAAB), so --repeat must be even (10 = 5 "
                             f"rounds, the ab preset)")
    if settings.rates:
        raise SelectionError("--rate is not available in ab: the open model's rates are "
                             "shares of a maximum each version would measure differently")
    if hosts is not None and any(hosts.is_remote(r) for r in ("client", "server", "database")):
        raise SelectionError("ab runs on this machine only: --hosts is not available (the "
                             "versions' checkouts would have to be on every host)")


@dataclass
class Outcome:
    selection: Selection
    doc: dict | None                          # the stored run; None: nothing to measure
    rows: list[paired.PairedCase]
    run_dir: Path | None


def run_ab(settings: Settings, baseline: str, candidate: str, *, everything: bool = False,
           hosts=None, display: str = "auto") -> Outcome:
    """Check out, select, measure and analyse; the verdicts are written beside the run's
    results.json as ab.md and ab.json."""
    check(settings, hosts)
    versions = []
    try:
        for given, arm in zip((baseline, candidate), ARMS):
            try:
                versions.append(checkout.resolve(given, arm))
            except checkout.CheckoutError as exc:
                raise SelectionError(str(exc)) from None
        specs = {v.arm: {sid: armed(s, v) for sid, s in
                         discover(checkout.servers_dirs(v, settings.servers_dirs)).items()}
                 for v in versions}
        unavailable = servers_unavailable(specs["A"], hosts)
        chosen = select(settings, specs["A"], specs["B"], everything, unavailable)
        if not chosen.servers:
            return Outcome(chosen, None, [], None)
        run_settings = replace(settings, servers=tuple(chosen.servers), ceiling=False,
                               results_dir=Path(settings.results_dir) / "ab")
        cases = paired_cases(run_settings, specs, unavailable)
        from bench.runner.run import Run
        with Session(run_settings, cases, hosts=hosts, needs=FOR_RUN) as session:
            run = Run(session, cases, order=paired_schedule)
            run.doc.ab = {"baseline": versions[0].public(), "candidate": versions[1].public(),
                          "selection": {"servers": chosen.servers, "why": chosen.why,
                                        "only_in": chosen.only_in},
                          "pairs": [[cases[i].id, cases[i + 1].id]
                                    for i in range(0, len(cases), 2)]}
            doc = run.execute(display)
        rows = paired.analyse(doc)
        for fmt, name in (("md", "ab.md"), ("json", "ab.json")):
            (run.run_dir / name).write_text(
                ab_report.FORMATS[fmt](doc, rows, chosen.why, chosen.servers))
        return Outcome(chosen, doc, rows, run.run_dir)
    finally:
        for version in versions:
            checkout.remove(version)
