"""The images the databases of `--db-mode docker` run in.

Two sources, chosen with --db-images (or BENCH_DB_IMAGES):

- official: postgres:15 and mysql:8.4, as docker-compose.yml names them, pulled from the
  registry Docker is set up with (Docker Hub on most machines);
- local: images built here from the operating system's own packages, for a machine no
  registry answers (an air-gapped lab; this project's CI): a base image made with
  debootstrap from the machine's own Debian mirror and sources and `docker import`ed, then
  images/<engine>/Dockerfile on it. Named `webbench-local/...`, so they never shadow an
  official image, and labelled with a hash of what made them (the recipe: the
  Dockerfile, its entrypoint, the base's suite and sources): an image whose label matches
  is used as it is, any other is rebuilt. MySQL 8.4 is no Debian package: the local
  image of the mysql engine is MariaDB, as in local mode, and results say so.
- auto (the default): official where both images are here already or a pull of them
  succeeds, else local.

Each run records which image each database ran in (name, image id, registry digest where
there is one, source): bench.infra.databases.docker.DockerProvider.describe().
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.infra.host import LOCAL
from bench.paths import REPO

SOURCES = ("auto", "official", "local")
OFFICIAL = {"postgres": "postgres:15", "mysql": "mysql:8.4"}
IMAGES_DIR = REPO / "images"
LOCAL_NAMES = {"postgres": "webbench-local/postgres:15", "mysql": "webbench-local/mariadb:debian"}
LOCAL_FOLDERS = {"postgres": "postgres", "mysql": "mariadb"}
BASE_NAME = "webbench-local/debian-base"
RECIPE_LABEL = "org.webbench.recipe"
LOCAL_OVERLAY = IMAGES_DIR / "compose.local.yml"
PULL_TIMEOUT_S = 300
BUILD_TIMEOUT_S = 1200
DEBOOTSTRAP_TIMEOUT_S = 900
APT_SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))


class ImageError(RuntimeError):
    pass


@dataclass
class ImageChoice:
    source: str                                 # "official" or "local"
    names: dict[str, str]                       # engine -> image name
    built: dict[str, float] = field(default_factory=dict)   # what was built, seconds
    why: str = ""                               # why this source (auto)

    def compose_files(self) -> list[Path]:
        """The compose files laid over docker-compose.yml for this source."""
        return [LOCAL_OVERLAY] if self.source == "local" else []

    def compose_env(self) -> dict[str, str]:
        return {"BENCH_PG_IMAGE": self.names.get("postgres", OFFICIAL["postgres"]),
                "BENCH_MYSQL_IMAGE": self.names.get("mysql", OFFICIAL["mysql"])}


def _docker(*args: str, timeout: float = 60, env: dict | None = None, **kw):
    return LOCAL.run(["docker", *args], timeout=timeout, env=env, **kw)


def present(name: str, env: dict | None = None) -> bool:
    return _docker("image", "inspect", name, timeout=30, env=env).returncode == 0


def label(name: str, env: dict | None = None) -> str | None:
    done = _docker("image", "inspect", "--format",
                   "{{index .Config.Labels \"" + RECIPE_LABEL + "\"}}", name, timeout=30,
                   env=env)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def describe(name: str, env: dict | None = None) -> dict:
    """What a result records of an image: its name, id and registry digest (None for an
    image built here: it was never pushed)."""
    done = _docker("image", "inspect", "--format",
                   "{{.Id}}|{{range .RepoDigests}}{{.}} {{end}}", name, timeout=30, env=env)
    if done.returncode != 0:
        return {"name": name, "id": None, "digest": None}
    image_id, _, digests = done.stdout.strip().partition("|")
    digest = next(iter(digests.split()), None)
    return {"name": name, "id": image_id or None,
            "digest": digest.partition("@")[2] if digest else None}


def choose(engines: list[str], source: str, env: dict | None = None,
           on_step=lambda text: None) -> ImageChoice:
    """The images for `engines`, pulled or built as the source needs (ImageError when it
    cannot: a pull refused for "official", a failed build for "local")."""
    if source not in SOURCES:
        raise ImageError(f"unknown --db-images {source!r}: choose {', '.join(SOURCES)}")
    if source in ("auto", "official"):
        missing = [e for e in engines if not present(OFFICIAL[e], env)]
        refused = []
        for engine in missing:
            on_step(f"pulling {OFFICIAL[engine]}")
            done = _docker("pull", "--quiet", OFFICIAL[engine], timeout=PULL_TIMEOUT_S,
                           env=env)
            if done.returncode != 0 or done.timed_out:
                refused.append(f"{OFFICIAL[engine]}: "
                               + (done.stderr.strip().splitlines() or ["timed out"])[-1])
        if not refused:
            return ImageChoice("official", {e: OFFICIAL[e] for e in engines},
                               why="the official images are here")
        if source == "official":
            raise ImageError("--db-images official: cannot pull " + "; ".join(refused)
                             + " (no registry answers? --db-images local builds them from "
                               "the operating system's packages)")
        why = f"no registry gave the official images ({refused[0][:160]})"
    else:
        why = "--db-images local"
    built = build_local(engines, env, on_step)
    return ImageChoice("local", {e: LOCAL_NAMES[e] for e in engines}, built, why)


# ------------------------------------------------------------------ the local images
def _host_sources() -> tuple[str, str]:
    """(the suite, the apt sources file) of this machine: the base image is made from
    the same distribution release and mirrors as the packages local mode runs."""
    release = {}
    for line in Path("/etc/os-release").read_text().splitlines():
        key, _, value = line.partition("=")
        release[key] = value.strip('"')
    suite = release.get("VERSION_CODENAME")
    sources = next((p for p in APT_SOURCES if p.exists() and p.read_text().strip()), None)
    if release.get("ID") not in ("debian", "ubuntu") or not suite or sources is None:
        raise ImageError("--db-images local builds from Debian or Ubuntu packages with "
                         "debootstrap; this machine is "
                         f"{release.get('PRETTY_NAME', 'unknown')}: use --db-images official")
    return suite, str(sources)


def _mirror(sources_file: str) -> str:
    """The first http(s) URI of the machine's main archive in its apt sources."""
    for line in Path(sources_file).read_text().splitlines():
        words = line.split("#", 1)[0].split()
        for word in words:
            if word.startswith(("http://", "https://")) and "security" not in word:
                return word
    raise ImageError(f"no archive URI in {sources_file} for debootstrap")


def recipe(engine: str | None, suite: str, sources_file: str) -> str:
    """A hash of what makes an image: the base's suite and sources, and for an engine its
    folder's files."""
    digest = hashlib.sha256(f"{suite}\n".encode() + Path(sources_file).read_bytes())
    if engine is not None:
        folder = IMAGES_DIR / LOCAL_FOLDERS[engine]
        for path in sorted(folder.iterdir()):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_local(engines: list[str], env: dict | None = None,
                on_step=lambda text: None) -> dict[str, float]:
    """Build what is missing or stale: the base image, then each engine's. Returns the
    seconds each build took (nothing: every image was cached)."""
    suite, sources = _host_sources()
    built: dict[str, float] = {}
    base_recipe = recipe(None, suite, sources)
    base = f"{BASE_NAME}:{suite}"
    if label(base, env) != base_recipe:
        on_step(f"building {base} with debootstrap (about a minute)")
        started = time.monotonic()
        _build_base(base, base_recipe, suite, sources, env)
        built[base] = round(time.monotonic() - started, 1)
    for engine in engines:
        name, want = LOCAL_NAMES[engine], recipe(engine, suite, sources) + base_recipe
        if label(name, env) == want:
            continue
        on_step(f"building {name} from images/{LOCAL_FOLDERS[engine]}/Dockerfile")
        started = time.monotonic()
        # --force-rm: a failed step's container is removed too (docker keeps it by default)
        done = _docker("build", "--force-rm", "--network", "host", "--build-arg", f"BASE={base}",
                       "--label", f"{RECIPE_LABEL}={want}", "--tag", name,
                       str(IMAGES_DIR / LOCAL_FOLDERS[engine]),
                       timeout=BUILD_TIMEOUT_S, env=env)
        if done.returncode != 0 or done.timed_out:
            raise ImageError(f"building {name} failed"
                             + (" (timed out)" if done.timed_out else
                                f" (exit {done.returncode})")
                             + ":\n" + "\n".join((done.stderr + done.stdout)
                                                 .strip().splitlines()[-15:]))
        built[name] = round(time.monotonic() - started, 1)
    return built


def _build_base(name: str, base_recipe: str, suite: str, sources: str,
                env: dict | None) -> None:
    if not LOCAL.which("debootstrap") and not os.path.exists("/usr/sbin/debootstrap"):
        raise ImageError("--db-images local needs debootstrap (Debian: the debootstrap "
                         "package; `make test-all`'s set-up installs it)")
    root = Path(tempfile.mkdtemp(prefix="webbench-rootfs-"))
    try:
        done = LOCAL.run(["debootstrap", "--variant=minbase", suite, str(root),
                          _mirror(sources)], timeout=DEBOOTSTRAP_TIMEOUT_S, env=env)
        if done.returncode != 0 or done.timed_out:
            raise ImageError(f"debootstrap {suite} failed:\n"
                             + "\n".join((done.stdout + done.stderr).splitlines()[-10:]))
        # the machine's own sources (its security suite too): the images get the
        # versions local mode runs
        apt = root / "etc/apt"
        (apt / "sources.list").unlink(missing_ok=True)
        shutil.copy(sources, apt / ("sources.list.d/debian.sources"
                                    if sources.endswith(".sources") else "sources.list"))
        for junk in (root / "var/cache/apt/archives").glob("*.deb"):
            junk.unlink()
        done = LOCAL.run(["sh", "-c", f"tar -C {root} -c . | docker import --change "
                                      f"'LABEL {RECIPE_LABEL}={base_recipe}' - {name}"],
                         timeout=BUILD_TIMEOUT_S, env=env)
        if done.returncode != 0 or done.timed_out:
            raise ImageError(f"docker import of the base image failed: "
                             f"{done.stderr.strip()[-500:]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
