"""The harness's agent: the operations that must run on the host they concern.

Every module here uses the standard library only and imports nothing but its siblings
(relatively), so the same files run in two ways:

- here, imported as `bench.infra.agent.*`: LocalHost calls them in-process;
- on another machine, sent over SSH by RemoteHost: `BOOT` (a fixed one-line-per-statement
  program given to that host's python3 with -c) reads `payload()` from its stdin, loads
  these modules under the package name `webbench_agent` and runs `service.main()`, which
  answers requests by operation name (see service.py).

Nothing else in bench/ is ever sent as source text, and nothing else opens /proc.
"""
from __future__ import annotations

import json
from pathlib import Path

# in the order they are loaded on another host: each after the siblings it imports
MODULES = ("procfs", "sockets", "cgroup", "memcap", "files", "programs", "network", "quietness", "steps", "children",
           "service")

# The command run over SSH (after `exec python3 -c`); nothing but this fixed text (and the
# configured interpreter's name) is ever quoted for a shell.
BOOT = "\n".join([
    "import json, sys, types",
    "modules = json.loads(sys.stdin.buffer.readline())",
    "package = types.ModuleType('webbench_agent')",
    "package.__path__ = []",
    "sys.modules['webbench_agent'] = package",
    "for name, source in modules:",
    "    module = types.ModuleType('webbench_agent.' + name)",
    "    module.__package__ = 'webbench_agent'",
    "    sys.modules[module.__name__] = module",
    "    setattr(package, name, module)",
    "    exec(compile(source, 'webbench_agent/' + name + '.py', 'exec'), module.__dict__)",
    "sys.modules['webbench_agent.service'].main()",
])


def payload() -> bytes:
    """The first line BOOT reads: every module's own file, as [[name, source], ...]."""
    here = Path(__file__).parent
    modules = [[name, (here / f"{name}.py").read_text()] for name in MODULES]
    return json.dumps(modules).encode() + b"\n"
