"""Load generators behind one seam (`bench.load.generator.Generator`). Each tool is one
module; this registry is the only place that lists them. The run asks for the closed-loop
or the open-model generator by name and never names a tool itself."""
from __future__ import annotations

from bench.load import oha, wrk
from bench.load.generator import Generator, LoadError, LoadRequest, LoadResult

GENERATORS: dict[str, Generator] = {g.name: g for g in (wrk.WRK, oha.OHA)}
# the default of each model: wrk measures the maximum (closed loop), oha the fixed rates
DEFAULT_CLOSED_LOOP = "wrk"
DEFAULT_OPEN_MODEL = "oha"


def generator(name: str) -> Generator:
    try:
        return GENERATORS[name]
    except KeyError:
        raise LoadError(f"unknown load generator {name!r}; known: "
                        f"{', '.join(sorted(GENERATORS))}") from None


def for_request(request: LoadRequest, closed_loop: str = DEFAULT_CLOSED_LOOP,
                open_model: str = DEFAULT_OPEN_MODEL) -> Generator:
    """The generator that runs `request`: the open-model one for a rate, else the closed
    loop's. A generator asked for the model it does not run is refused."""
    chosen = generator(open_model if request.open_model else closed_loop)
    if chosen.open_model != request.open_model:
        raise LoadError(f"{chosen.name} does not run the "
                        f"{'open model' if request.open_model else 'closed loop'}")
    return chosen


__all__ = ["GENERATORS", "Generator", "LoadError", "LoadRequest", "LoadResult", "for_request",
           "generator"]
