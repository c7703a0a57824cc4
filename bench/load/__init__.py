"""Load generators behind one seam (`bench.load.generator.Generator`). Each tool is one
module; this registry is the only place that lists them. The run asks for the closed-loop
or the open-model generator by name and never names a tool itself."""
from __future__ import annotations

from bench.load import h2load, k6, oha, wrk, wsload
from bench.load.generator import Generator, LoadError, LoadRequest, LoadResult

GENERATORS: dict[str, Generator] = {g.name: g for g in (wrk.WRK, oha.OHA, k6.K6_GENERATOR,
                                                       h2load.H2LOAD, wsload.WSLOAD)}
# the default of each model: wrk measures the maximum (closed loop), oha the fixed rates
DEFAULT_CLOSED_LOOP = "wrk"
DEFAULT_OPEN_MODEL = "oha"


def generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise LoadError(f"unknown load generator {name!r}; known: "
                        f"{', '.join(sorted(GENERATORS))}") from None


def runs(chosen: Generator, open_model: bool) -> bool:
    """Whether `chosen` runs that model: its `models` (k6 runs both), else its one."""
    return open_model in getattr(chosen, "models", (chosen.open_model,))


def models() -> dict[str, tuple[bool, ...]]:
    """name -> the models it runs (False: closed loop, True: open model), for the plan."""
    return {name: tuple(m for m in (False, True) if runs(g, m))
            for name, g in GENERATORS.items()}


def for_request(request: LoadRequest, closed_loop: str = DEFAULT_CLOSED_LOOP,
                open_model: str = DEFAULT_OPEN_MODEL) -> Generator:
    """The generator that runs `request`: the open-model one for a rate, else the closed
    loop's. A generator asked for the model it does not run is refused."""
    chosen = generator(open_model if request.open_model else closed_loop)
    if not runs(chosen, request.open_model):
        raise LoadError(f"{chosen.name} does not run the "
                        f"{'open model' if request.open_model else 'closed loop'}")
    if request.pipeline > 1 and not pipelines(chosen):
        raise LoadError(f"{chosen.name} does not pipeline HTTP/1.1 requests (the "
                        f"{request.test} test writes {request.pipeline} at once)")
    return chosen


def pipelines(chosen: Generator) -> bool:
    """Whether `chosen` writes several requests at once on a connection (its `pipelines`;
    none but wrk does)."""
    return bool(getattr(chosen, "pipelines", False))


__all__ = ["GENERATORS", "Generator", "LoadError", "LoadRequest", "LoadResult", "for_request",
           "generator", "models", "pipelines", "runs"]
