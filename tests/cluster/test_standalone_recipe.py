"""docs/cluster.md's standalone recipe from the pip package, run as the page has it, every role on 127.0.0.1.

The blocks after ``<!-- standalone-recipe: run -->`` run in order in one bash, after the test's own values for
the block marked ``<!-- standalone-recipe: settings -->``: the environment is the ``wheel_env`` fixture's (the
wheel installed non-editable in a fresh venv; the page's install block then finds everything installed), the
master on a free port, a local output on this one machine. Only what the page leaves to
Spark's defaults is moved by the environment, so that a run beside another test session's cannot collide: the
web UIs' ports (``SPARK_MASTER_WEBUI_PORT``, ``SPARK_WORKER_WEBUI_PORT``) and the worker's folder
(``SPARK_WORKER_DIR``). The rows and the state are checked, and that the executors ran the environment's
Python; the page's last block stops the worker and the master (else the test does, by their pids).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import doc_recipes
import pytest
from wheel_env import clean_env

from cluster.events_api import IDS, MANIFEST, rows, serve_events, state

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cluster.md"
RUN, SETTINGS = "<!-- standalone-recipe: run -->", "<!-- standalone-recipe: settings -->"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_recipe_starts_master_and_worker_from_the_pip_package_and_needs_no_archive():
    (settings,) = doc_recipes.recipe_blocks(DOC, SETTINGS)
    names = doc_recipes.setting_names(settings)
    assert names == {"ENV", "MASTER_HOST", "MASTER_PORT", "MANIFEST", "CONFIG", "OUTPUT"}
    steps = "".join(doc_recipes.recipe_blocks(DOC, RUN))
    for name in names:
        assert f"${name}" in steps or f"${{{name}}}" in steps, name
    for needed in ('"$ENV/bin/spark-class" org.apache.spark.deploy.master.Master',
                   '"$ENV/bin/spark-class" org.apache.spark.deploy.worker.Worker', '"$ENV/bin/run-manifest"',
                   "manifest_framework-*.whl)[spark]", 'PYSPARK_PYTHON="$ENV/bin/python"'):
        assert needed in steps, needed
    assert "--archives" not in steps and "--py-files" not in steps and "venv-pack" not in steps


@pytest.fixture
def events(fake_api):
    served = serve_events(fake_api)
    yield served
    served.release.set()


def _stop_left_over(work: Path) -> None:
    for name in ("worker.pid", "master.pid"):
        try:
            os.kill(int((work / name).read_text().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def test_the_standalone_recipe_lands_the_rows(wheel_env, built_wheel, events, tmp_path):
    work = tmp_path / "machine"
    work.mkdir()
    (work / built_wheel.name).symlink_to(built_wheel)  # "with the wheel copied next to it"
    (work / "shop.yaml").write_text(MANIFEST)
    (work / "config.json").write_text(__import__("json").dumps(events.config()))
    out, worker_dir = tmp_path / "landed", tmp_path / "worker"
    settings = {"ENV": str(wheel_env.parent), "MASTER_HOST": "127.0.0.1", "MASTER_PORT": str(_free_port()),
                "MANIFEST": "shop.yaml", "CONFIG": "config.json", "OUTPUT": str(out)}
    env = clean_env(SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER_WEBUI_PORT=str(_free_port()),
                    SPARK_WORKER_WEBUI_PORT=str(_free_port()), SPARK_WORKER_DIR=str(worker_dir),
                    SPARK_WORKER_MEMORY="1g")
    script = doc_recipes.recipe_script(settings, doc_recipes.recipe_blocks(DOC, RUN))
    try:
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    finally:
        _stop_left_over(work)
    logs = "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-1500:] for p in sorted(work.glob("*.log")))
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}\n{logs}"

    assert [r[0] for r in rows(out)] == IDS
    assert state(out)
    executors = list(worker_dir.glob("app-*/*/stderr"))
    assert executors, f"no executor ran on the worker\n{logs}"
    assert not any("Traceback" in p.read_text(errors="replace") for p in executors)
    # the page's last block stopped them: no process is left (a bounded wait for their JVMs to exit)
    for name in ("worker.pid", "master.pid"):
        pid = int((work / name).read_text().strip())
        assert _gone(pid), f"{name}: process {pid} still runs after the page's kill"


def _gone(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                return True  # exited, not yet reaped by whoever inherited it
        except (OSError, IndexError):
            return True
        time.sleep(0.2)
    return False
