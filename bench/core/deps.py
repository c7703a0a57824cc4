"""A release sweep (`--dep NAME=V1,V2`): a framework's own code run against each listed
version of one of its dependencies, in the same run and the same interleaved rounds,
so that "your last release is 28 % slower on this workload" is a measured row, not a
guess.

Each version is a version of the server in the sense `ab` and `--server-env` use
(ServerSpec.arm): the label `sanic@sanic=23.6.0` names its rows, results and logs, and
`ServerSpec.deps` carries the override, which the server's environment is built with
(bench.infra.envs: a virtualenv from its requirements with that pin changed, a copy of
its Go module with that requirement changed). A version the code cannot run on fails
its build or its verification with the reason; the other versions are still measured.

Pure: which ecosystem a server's folder is, which dependencies it declares, what its
requirements become with an override. No I/O beyond reading the server's own files.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tomllib
from pathlib import Path

from bench.core.manifest import ServerSpec
from bench.core.settings import SelectionError

# a dependency as each ecosystem names it: a PyPI project, a Go module path
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/]*\Z")
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-_]*\Z")
# a requirements line "name[extras]==version  # comment"
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-]*)(\[[^\]]*\])?\s*==\s*([^\s;#]+)")


class DepError(SelectionError):
    """A --dep that cannot be run; the message names the flag and the fault."""


def parse(items: tuple[str, ...] | list[str]) -> dict[str, tuple[str, ...]]:
    """{dependency: (versions...)} in the order given, from "NAME=V1,V2" items."""
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not NAME.match(name):
            raise DepError(f"--dep {item!r}: expected NAME=VERSION[,VERSION...] with NAME a "
                           f"dependency as its registry names it (sanic, "
                           f"github.com/gin-gonic/gin)")
        if canonical(name) in {canonical(n) for n in out}:
            raise DepError(f"--dep names {name} twice; give its versions in one flag: "
                           f"{name}=A,B")
        found = tuple(v.strip() for v in values.split(","))
        bad = [v for v in found if not VERSION.match(v)]
        if bad:
            raise DepError(f"--dep {item!r}: {bad[0]!r} is not a version")
        if len(set(found)) != len(found):
            raise DepError(f"--dep {item!r} lists a version twice")
        out[name] = found
    return out


def canonical(name: str) -> str:
    """PyPI's normalised project name (PEP 503); a Go module path is case-sensitive but
    never holds _ or . runs that this would merge."""
    return re.sub(r"[-_.]+", "-", name).lower()


def ecosystem(folder: Path) -> str | None:
    """What builds the server's dependencies: "python" (requirements.txt, a virtualenv
    of its own), "go" (go.mod), "npm" (package-lock.json), "cargo" (Cargo.toml)."""
    for marker, kind in (("requirements.txt", "python"), ("go.mod", "go"),
                         ("package-lock.json", "npm"), ("Cargo.toml", "cargo")):
        if (folder / marker).is_file():
            return kind
    return None


def python_requirements(text: str) -> dict[str, str]:
    """{canonical name: pinned version} of a requirements file's `==` pins."""
    out = {}
    for line in text.splitlines():
        m = REQUIREMENT.match(line)
        if m:
            out[canonical(m.group(1))] = m.group(3)
    return out


def with_overrides(text: str, overrides: dict[str, str]) -> str:
    """A requirements file with each overridden project's pin replaced (its extras and
    comment kept); a project it does not pin is added at the end."""
    wanted = {canonical(k): (k, v) for k, v in overrides.items()}
    lines, done = [], set()
    for line in text.splitlines():
        m = REQUIREMENT.match(line)
        key = canonical(m.group(1)) if m else None
        if key in wanted and m.group(3) == wanted[key][1]:
            lines.append(line)        # the pin already: the same environment as without
            done.add(key)
        elif key in wanted:
            lines.append(f"{m.group(1)}{m.group(2) or ''}=={wanted[key][1]}"
                         f"    # --dep (was {m.group(3)})")
            done.add(key)
        else:
            lines.append(line)
    lines += [f"{name}=={version}    # --dep (not pinned by the server)"
              for key, (name, version) in wanted.items() if key not in done]
    return "\n".join(lines) + "\n"


def go_requirements(text: str) -> dict[str, str]:
    """{module: version} of every `require` of a go.mod (direct and indirect)."""
    out, block = {}, False
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if line == "require (":
            block = True
        elif block and line == ")":
            block = False
        else:
            parts = line.removeprefix("require ").split() if (block or line.startswith(
                "require ")) else []
            if len(parts) >= 2:
                out[parts[0]] = parts[1]
    return out


def declares(spec: ServerSpec, name: str) -> bool:
    """Whether a --dep may override `name` for this server: its own requirements (PyPI's
    normalised names), go.mod (exact module paths), package.json or Cargo.toml (its own
    or a shared path crate's) name it."""
    kind = ecosystem(spec.dir)
    if kind == "python":
        return canonical(name) in python_requirements((spec.dir / "requirements.txt").read_text())
    if kind == "go":
        return name in go_requirements((spec.dir / "go.mod").read_text())
    if kind == "npm":
        return name in json.loads((spec.dir / "package.json").read_text()).get("dependencies", {})
    if kind == "cargo":
        return name in cargo_dependencies(spec.dir)
    return False


def cargo_dependencies(folder: Path) -> set[str]:
    """The crates a Rust server depends on directly: its Cargo.toml's and those of its
    path dependencies (a shared crate such as servers/_rscommon), whose versions its
    binary is built with too."""
    deps = tomllib.loads((folder / "Cargo.toml").read_text()).get("dependencies", {})
    out = {n for n, d in deps.items() if not (isinstance(d, dict) and "path" in d)}
    for dep in deps.values():
        if isinstance(dep, dict) and "path" in dep:
            shared = tomllib.loads((folder / dep["path"] / "Cargo.toml").read_text())
            out |= set(shared.get("dependencies", {}))
    return out


SUPPORTED = ("python", "go", "npm", "cargo")


def swept(spec: ServerSpec, items: tuple[str, ...] | list[str]) -> list[ServerSpec]:
    """The versions of a framework a run measures: itself when no --dep names one of its
    dependencies, else one per combination of the listed versions, labelled
    id@NAME=V (after any --server-env part of the label)."""
    if spec.reference or not items:
        return [spec]
    applies = {name: versions for name, versions in parse(items).items()
               if declares(spec, name)}
    if not applies:
        return [spec]
    out = []
    for values in itertools.product(*applies.values()):
        chosen = dict(zip(applies, values))
        part = ",".join(f"{k}={v}" for k, v in chosen.items())
        out.append(dataclasses.replace(spec, arm=f"{spec.arm},{part}" if spec.arm else part,
                                       deps={**spec.deps, **chosen}))
    return out


def check(items: tuple[str, ...] | list[str], specs: list[ServerSpec]) -> None:
    """Every --dep names a dependency of at least one selected framework whose ecosystem
    the harness can override (a clear error before any work, not a silent no-op)."""
    wanted = parse(items)
    frameworks = [s for s in specs if not s.reference]
    for name in wanted:
        users = [s for s in frameworks if declares(s, name)]
        if not users:
            raise DepError(f"--dep {name}: no selected server declares it (its "
                           f"requirements.txt, go.mod, package.json or Cargo.toml); selected: "
                           f"{', '.join(s.id for s in frameworks) or 'none'}")
        unsupported = [s.id for s in users if ecosystem(s.dir) not in SUPPORTED]
        if unsupported:
            raise DepError(f"--dep {name}: {', '.join(unsupported)} cannot be swept: "
                           f"only Python (requirements.txt), Go (go.mod), Node.js "
                           f"(package.json) and Rust (Cargo.toml) servers' dependencies "
                           f"can be overridden")
