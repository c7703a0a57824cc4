"""Every framework and driver version a server really used: its direct dependencies,
read from what its folder ships (Cargo.lock, go.mod, package-lock.json, pom.xml) or, for
a Python server, from its own virtualenv (bench.infra.envs), and the runtime its
manifest's [toolchain] names; so no framework is named here and a new server's versions
are recorded without a line of code."""
from __future__ import annotations

import json
import platform
import re
import tomllib
from pathlib import Path
from xml.etree import ElementTree

from bench.infra import envs
from bench.infra.host import LOCAL


_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*([^\s;#]+)")


def _python_requirements(spec) -> dict:
    """The server's pinned requirements (its own virtualenv's, bench.infra.envs, a --dep
    applied) at the versions installed there, and "python": its interpreter. Before the
    environment is made, the pins (`==`: what pip installs)."""
    installed = {k.lower(): v for k, v in (envs.installed(spec, LOCAL) or {}).items()}
    out = {}
    for line in envs.requirements_text(spec.dir / "requirements.txt").splitlines():
        m = _REQ.match(line)
        if m:
            name = re.sub(r"\[.*\]", "", m.group(1))
            out[name] = installed.get(name.lower(), m.group(2))
    for name, version in spec.deps.items():      # a --dep: the version asked for
        if name not in out:
            out[name] = installed.get(name.lower(), version)
        elif name.lower() not in installed:
            out[name] = version
    out["python"] = installed.get("python", platform.python_version())
    return out


def _cargo(folder: Path) -> dict:
    """The server's direct dependencies, and those of its path dependencies (a shared
    crate such as servers/_rscommon), at the versions Cargo.lock pins."""
    deps = tomllib.loads((folder / "Cargo.toml").read_text()).get("dependencies", {})
    direct = set(deps)
    for spec in deps.values():
        if isinstance(spec, dict) and "path" in spec:
            shared = tomllib.loads((folder / spec["path"] / "Cargo.toml").read_text())
            direct |= set(shared.get("dependencies", {}))
    # a workspace member's lock file is the workspace's (servers/Cargo.lock)
    lock_path = next((d / "Cargo.lock" for d in (folder, *folder.parents)
                      if (d / "Cargo.lock").exists()), folder / "Cargo.lock")
    lock = tomllib.loads(lock_path.read_text())
    return {p["name"]: p["version"] for p in lock.get("package", []) if p["name"] in direct}


def _go_mod(folder: Path) -> tuple[dict, dict, dict]:
    """(direct requirements, every requirement, local replacements) of folder/go.mod:
    module -> version, module -> version, module -> the folder it is replaced by."""
    direct, every, local, block = {}, {}, {}, ""
    for raw in (folder / "go.mod").read_text().splitlines():
        line = raw.split("//")[0].strip()
        if line in ("require (", "replace ("):
            block = line.split()[0]
            continue
        if block and line == ")":
            block = ""
            continue
        kind = block or line.split(" ", 1)[0]
        parts = line.removeprefix(f"{kind} ").split() if not block else line.split()
        if kind == "require" and len(parts) >= 2:
            every[parts[0]] = parts[1]
            if "// indirect" not in raw:          # what the module itself requires
                direct[parts[0]] = parts[1]
        elif kind == "replace" and "=>" in parts:
            target = parts[parts.index("=>") + 1:]
            if len(target) == 1 and target[0].startswith((".", "/")):   # a local folder
                local[parts[0]] = (folder / target[0]).resolve()
    return direct, every, local


def _go(folder: Path) -> dict:
    """The server's direct requirements, and those of the local modules it is built with
    (a shared module such as servers/_gocommon, taken through a `replace` to a folder),
    at the versions the server's go.mod selects."""
    direct, every, local = _go_mod(folder)
    out = {m: v for m, v in direct.items() if m not in local}
    for shared in local.values():
        if (shared / "go.mod").is_file():
            for module, version in _go_mod(shared)[0].items():
                out.setdefault(module, every.get(module, version))
    return out


def _npm(folder: Path) -> dict:
    package = json.loads((folder / "package.json").read_text())
    lock = json.loads((folder / "package-lock.json").read_text())
    packages = lock.get("packages", {})
    return {name: packages.get(f"node_modules/{name}", {}).get("version", spec)
            for name, spec in package.get("dependencies", {}).items()}


def _maven(folder: Path) -> dict:
    """{groupId:artifactId: version} of the pom.xml's direct dependencies, ${property}
    references resolved from its <properties>; one without a version of its own takes
    the <dependencyManagement> entry's (a BOM imported there is named, not expanded)."""
    root = ElementTree.parse(folder / "pom.xml").getroot()
    ns = {"m": root.tag[1:].split("}")[0]} if root.tag.startswith("{") else {"m": ""}
    q = (lambda path: path.replace("m:", "")) if not ns["m"] else (lambda path: path)
    props = {el.tag.split("}")[-1]: (el.text or "").strip()
             for el in root.findall(q("m:properties/*"), ns)}

    def resolve(text: str | None) -> str | None:
        return re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)),
                      text.strip()) if text else None

    def coordinates(dep) -> tuple[str, str | None]:
        group, artifact = (dep.findtext(q(f"m:{t}"), None, ns) for t in ("groupId", "artifactId"))
        return f"{resolve(group)}:{resolve(artifact)}", resolve(dep.findtext(q("m:version"), None, ns))
    managed = dict(coordinates(d) for d in root.findall(
        q("m:dependencyManagement/m:dependencies/m:dependency"), ns))
    out = {}
    for dep in root.findall(q("m:dependencies/m:dependency"), ns):
        name, version = coordinates(dep)
        out[name] = version or managed.get(name) or "(managed by a BOM)"
    return out


VERSION_SOURCES = (("requirements.txt", _python_requirements),
                   ("Cargo.toml", _cargo), ("go.mod", _go), ("package-lock.json", _npm),
                   ("pom.xml", _maven))


def server_versions(spec, runtime=None) -> dict:
    """Direct dependencies and their versions, from whatever lock files the server's
    folder has: for a Python server, what its own virtualenv holds; for a --dep's copy
    of a Go module, the copy's go.mod once it is made (bench.infra.envs)."""
    where = envs.location(spec, LOCAL)
    folder = Path(where.dir) if where.dir and Path(where.dir).is_dir() else spec.dir
    out: dict = {}
    for name, reader in VERSION_SOURCES:
        path = folder / name
        if path.exists():
            try:
                out.update(reader(spec if reader is _python_requirements else folder))
            except (OSError, ValueError, KeyError, tomllib.TOMLDecodeError) as exc:
                out[f"({name})"] = f"unreadable: {exc}"
    if where.dir and not Path(where.dir).is_dir():      # a --dep's copy, not made yet
        out.update({name: f"{version} (asked)" for name, version in spec.deps.items()})
    # the runtime or compiler its manifest declares ([toolchain]: go, cargo, node,
    # java), as `runtime(command)` finds it on this machine (the caller's probe:
    # bench.setup.probe.runtime_version); a Python server's is its virtualenv's, above
    chain = getattr(spec, "toolchain", None)
    if runtime is not None and chain is not None and chain.command not in out:
        found = runtime(chain.command)
        if found:
            out[chain.command] = found
    return out
