"""A settings sweep (--server-env): every framework planned once per value, labelled
id@NAME=V with the value in its environment, the ceiling left alone; bad sweeps refused
with the flag named."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import parser
from bench.core import server_env
from bench.core.manifest import load_manifest
from bench.core.plan import plan
from bench.core.settings import SelectionError, Settings


def spec(tmp_path: Path, name: str, reference: bool = False):
    folder = tmp_path / name
    folder.mkdir()
    top = 'reference = true\ndatabases = []\n' if reference else 'databases = ["postgres"]\n'
    (folder / "manifest.toml").write_text(
        f'id = "{name}"\n{top}concurrency = "threads"\norm = [false]\n'
        f'start = ["x"]\n[workers]\ncount = "none"\nreason = "r"\n[env]\nGOGC = "100"\n')
    return load_manifest(folder)


def test_each_framework_is_planned_once_per_value_the_ceiling_once(tmp_path):
    specs = {"go": spec(tmp_path, "go"), "ref": spec(tmp_path, "ref", reference=True)}
    settings = Settings(servers=("go",), databases=("postgres",), tests=("get user", "plain"),
                        server_env=("GOMAXPROCS=2,8",))
    cases = plan(settings, specs)
    labels = [c.variant.server.label for c in cases]
    assert labels.count("go@GOMAXPROCS=2") == 2 and labels.count("go@GOMAXPROCS=8") == 2
    two = next(c.variant.server for c in cases if c.variant.server.arm == "GOMAXPROCS=2")
    assert two.env == {"GOGC": "100", "GOMAXPROCS": "2"}
    assert labels.count("ref") == 1            # the ceiling is measured as it is
    assert cases[0].key()["server"] == "go@GOMAXPROCS=2"
    assert cases[0].id.startswith("go@GOMAXPROCS=2/postgres/raw/get_user")


def test_two_flags_make_every_combination_and_a_value_wins_over_the_manifest(tmp_path):
    versions = server_env.swept(spec(tmp_path, "go"), ["GOMAXPROCS=2,8", "GOGC=50,200"])
    assert [v.label for v in versions] == ["go@GOMAXPROCS=2,GOGC=50", "go@GOMAXPROCS=2,GOGC=200",
                                           "go@GOMAXPROCS=8,GOGC=50", "go@GOMAXPROCS=8,GOGC=200"]
    assert versions[1].env["GOGC"] == "200"
    assert server_env.swept(spec(tmp_path, "plain"), [])[0].label == "plain"


@pytest.mark.parametrize("items, says", [
    (["GOMAXPROCS"], "expected NAME=VALUE"),
    (["2X=1"], "expected NAME=VALUE"),
    (["BENCH_WORKERS=2,8"], "harness's own settings"),
    (["A=1", "A=2"], "names A twice"),
    (["A=1,,2"], "empty"),
    (["A=1,1"], "twice"),
])
def test_a_sweep_that_cannot_run_is_refused_naming_the_flag(tmp_path, items, says):
    with pytest.raises(SelectionError, match=says) as caught:
        plan(Settings(server_env=tuple(items)), {"go": spec(tmp_path, "go")})
    assert "--server-env" in str(caught.value)


def test_the_flag_reaches_the_settings_and_the_stored_form():
    from bench.cli.arguments import settings_from
    args = parser().parse_args(["run", "--server-env", "GOMAXPROCS=2,8",
                                      "--server-env", "GOGC=off"])
    settings = settings_from(args)
    assert settings.server_env == ("GOMAXPROCS=2,8", "GOGC=off")
    assert settings.public()["server_env"] == ["GOMAXPROCS=2,8", "GOGC=off"]
