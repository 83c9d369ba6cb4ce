"""docs/cluster.md's recipe, run as written against the ``spark_cluster`` fixture.

The blocks after ``<!-- cluster-recipe: run -->`` are run in order by one
bash, in a copy of the checkout, after the test's own values for the block
marked ``<!-- cluster-recipe: settings -->`` (the master's URL, the manifest
and config, a local output on this one machine with ``--shared-path``). They
build the wheel, make and pack the environment, and spark-submit the sync;
then the rows and the state are checked, and that every executor ran the
packed environment's Python.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import doc_recipes
import pytest

from cluster.events_api import EVENTS, IDS, MANIFEST, rows, serve_events, state

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cluster.md"
RUN, SETTINGS = "<!-- cluster-recipe: run -->", "<!-- cluster-recipe: settings -->"


def recipe_blocks(marker: str) -> list[str]:
    return doc_recipes.recipe_blocks(DOC, marker)


def test_the_recipe_blocks_are_there_and_the_settings_name_what_the_rest_use():
    (settings,) = recipe_blocks(SETTINGS)
    names = {line.split("=", 1)[0] for line in settings.splitlines() if "=" in line}
    assert names == {"MASTER_URL", "MANIFEST", "CONFIG", "OUTPUT_ARGS"}
    steps = "".join(recipe_blocks(RUN))
    for name in names:
        assert f"${name}" in steps or f'"${name}"' in steps, name
    for needed in ("pip wheel", "venv-pack", "--archives", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        assert needed in steps, needed


def _checkout(into: Path) -> Path:
    """What the wheel is built from: the project's files, not the caches or outputs of this checkout."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, into / name)
    shutil.copytree(REPO / "framework", into / "framework",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return into


@pytest.fixture
def events(fake_api):
    served = serve_events(fake_api)
    yield served
    served.release.set()


def test_the_recipe_lands_the_rows_on_the_cluster(spark_cluster, events, tmp_path):
    checkout = _checkout(tmp_path / "checkout")
    (checkout / "shop.yaml").write_text(MANIFEST)
    (checkout / "config.json").write_text(json.dumps(events.config()))
    out = tmp_path / "landed"
    settings = (f"MASTER_URL={shlex.quote(spark_cluster.master_url)}\nMANIFEST=shop.yaml\nCONFIG=config.json\n"
                f"OUTPUT_ARGS={shlex.quote(f'--output {out} --shared-path')}\n")
    script = "set -euo pipefail\n" + settings + "".join(
        f"echo '::: step {number}' >&2\n{block}" for number, block in enumerate(recipe_blocks(RUN), 1))
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # `python`, `pip`
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    began = time.monotonic()
    done = subprocess.run(["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=900)
    seconds = time.monotonic() - began
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}"
    print(f"the recipe ran in {seconds:.0f} s")  # shown with -s; docs/cluster.md quotes the measurements

    assert [r[0] for r in rows(out)] == IDS
    assert state(out) and sorted(e["id"] for e in EVENTS) == IDS
    # every executor of the application unpacked the archive and started its Python from it
    unpacked = [d for work in spark_cluster.work_dirs() for d in work.glob("app-*/*/env/bin/python")]
    assert unpacked, "no executor unpacked the archive as ./env"
    logs = [p.read_text(errors="replace") for work in spark_cluster.work_dirs() for p in work.glob("app-*/*/stderr")]
    assert not any("Traceback" in text for text in logs)
