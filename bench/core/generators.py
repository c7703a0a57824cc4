"""The load generators as the settings know them: which models each runs and which
runs what when --generator names several. Pure; bench.load holds the generators."""
from __future__ import annotations

from bench.core.errors import SelectionError, check_names

# the load generators and the models each runs (False: the closed loop, True: the open
# model): bench.load's registry, named here because core imports nothing from load
# (tests/unit/test_k6.py checks that the two agree)
GENERATOR_MODELS: dict[str, tuple[bool, ...]] = {"wrk": (False,), "oha": (False, True),
                                                 "k6": (False, True), "h2load": (False,),
                                                 "wsload": (False,)}
DEFAULT_CLOSED_LOOP, DEFAULT_OPEN_MODEL = "wrk", "oha"


def closed_loop_generators(generators) -> list[str]:
    """The closed-loop generators among --generator's (wrk when none is)."""
    return [g for g in generators if False in GENERATOR_MODELS.get(g, ())] \
        or [DEFAULT_CLOSED_LOOP]


def open_model_generators(generators) -> list[str]:
    """The open-model generators among --generator's (oha when none is)."""
    return [g for g in generators if True in GENERATOR_MODELS.get(g, ())] \
        or [DEFAULT_OPEN_MODEL]


def rate_base(generator: str) -> str:
    """The closed-loop generator whose measured maximum a rate share of `generator`
    refers to: wrk's for oha, the default open model (its shares were wrk's maximum before
    oha ran the closed loop too, and an oha rate case keeps its id and its meaning; the
    default `--rate 50%` measures no oha closed loop); itself for another that runs the
    closed loop too (k6); else wrk."""
    if generator == DEFAULT_OPEN_MODEL:
        return DEFAULT_CLOSED_LOOP
    return generator if False in GENERATOR_MODELS.get(generator, ()) else DEFAULT_CLOSED_LOOP


def validate_generators(s) -> None:
    """--generator, --iterations and --rate's shares of a Settings, checked together."""
    check_names("--generator", s.generators, sorted(GENERATOR_MODELS))
    if not s.generators:
        raise SelectionError("--generator names no load generator")
    others = [g for g in closed_loop_generators(s.generators) if g != "k6"]
    if s.iterations is not None and (type(s.iterations) is not int or s.iterations < 1 or others):
        raise SelectionError(f"--iterations N (a whole number >= 1) is k6's closed loop: got "
                             f"{s.iterations!r}, with the closed loop measured by "
                             f"{','.join(others or ['k6'])} (--generator k6 alone runs it)")
    if not s.rates:
        return
    closed = closed_loop_generators(s.generators)
    shares = [r for r in s.rates if str(r).endswith("%")]
    for g in open_model_generators(s.generators):
        if shares and rate_base(g) not in closed:
            raise SelectionError(
                f"--rate {shares[0]} is a share of the maximum {rate_base(g)} measures, but "
                f"--generator {','.join(s.generators)} runs no {rate_base(g)}: add it, or "
                f"give the rates in req/s")
