"""Where a --dep version's copy of a server lives (bench.infra.envs.location): one per
checkout, since the copy links its siblings (../_gocommon) in the checkout it was made
from: a copy made from another clone, since removed, once broke gin's build."""
import dataclasses
import shutil

from bench.core import manifest
from bench.infra import envs
from bench.infra.checkout import code_hash
from bench.infra.host import LOCAL
from bench.paths import REPO


def test_two_checkouts_of_the_same_server_get_copies_of_their_own(tmp_path):
    other = tmp_path / "servers"
    for name in ("gin", "_gocommon"):
        shutil.copytree(REPO / "servers" / name, other / name)
    here, there = (dataclasses.replace(manifest.discover([folder])["gin"], arm="gin=v1.11.0",
                                       deps={"github.com/gin-gonic/gin": "v1.11.0"})
                   for folder in (REPO / "servers", other))
    assert code_hash(here) == code_hash(there)           # the same code...
    assert envs.location(here, LOCAL).env_root != envs.location(there, LOCAL).env_root
    # ...and one checkout asking twice finds its own copy again
    assert envs.location(here, LOCAL) == envs.location(dataclasses.replace(here), LOCAL)
