"""Each load generator's own CPU cost per request and the req/s it reaches, on the same
server and test (README, "Which generator when"). Puts load on a server: take the lock,

    flock /tmp/webbench-load.lock .venv/bin/python scripts/generator_cost.py --port 18180

servers/nginx (the ceiling, no build) answers `plain`; each generator runs ROUNDS windows,
interleaved: wrk (closed loop), k6 closed loop (constant-vus), oha and k6 open model at a
rate far beyond the server (so they send as fast as their connections allow: a maximum
too). Client CPU is the generator's own (wait4 rusage), per 1000 responses.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core import manifest  # noqa: E402
from bench.core.plan import Variant  # noqa: E402
from bench.core.settings import Settings  # noqa: E402
from bench.infra.lifecycle import running_server  # noqa: E402
from bench.load import for_request  # noqa: E402
from bench.load.generator import LoadRequest  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--test", default="plain")
    args = parser.parse_args()
    settings = Settings(workers=1, port=args.port)
    cases = [("wrk", None), ("k6", None), ("oha", 1_000_000), ("k6", 1_000_000)]
    figures: dict[str, list[tuple[float, float]]] = {}
    with running_server(Variant(manifest.discover()["nginx"], "none", False), settings, None,
                        Path(tempfile.mkdtemp()) / "nginx.log") as running:
        for _ in range(args.rounds):
            for name, rate in cases:
                request = LoadRequest(args.test, running.server.base_url, args.connections,
                                      args.threads, args.duration, 5.0, 1, "hardcoded_token",
                                      rate=rate)
                model = {"open_model": name} if rate else {"closed_loop": name}
                result = for_request(request, **model).run(request)
                s = result.summary
                label = f"{name} {'open model' if rate else 'closed loop'}"
                cpu = 1000 * result.client_cpu_s / max(1, s["requests"])
                figures.setdefault(label, []).append((s["requests_per_sec"], cpu))
                print(f"{label}: {s['requests_per_sec']:,.0f} req/s, {cpu:.3f} CPU-s per 1000 "
                      f"requests, errors {s['errors']['total']}", flush=True)
    print(f"\nmedians over {args.rounds} rounds ({args.test}, {args.connections} connections, "
          f"{args.threads} thread(s), {args.duration:g} s, servers/nginx with 1 worker):")
    for label, runs in figures.items():
        print(f"  {label:22} {statistics.median(r for r, _ in runs):>9,.0f} req/s  "
              f"{statistics.median(c for _, c in runs):.3f} CPU-s / 1000 req")


if __name__ == "__main__":
    main()
