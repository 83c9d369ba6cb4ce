"""docs/cluster.md's Spark Connect commands, run as the page has them, from the installed wheel.

The blocks after ``<!-- connect-recipe: run -->`` run in one bash, after the test's own value for the block
marked ``<!-- connect-recipe: settings -->`` (a free port, not 15002), with the fresh environment of the
``wheel_env`` fixture first on PATH (its ``python``, ``run-manifest`` and pyspark). The server's daemon script
keeps its pid and log files in the test's folder (``SPARK_PID_DIR``, ``SPARK_LOG_DIR``), so that a run beside
another test session's cannot take its pid file. The page starts the server and syncs at once: the sync must
wait for the server to listen and land the example shop's rows; the page's last command stops the server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import doc_recipes
import pyarrow.parquet as pq
import pytest
from wheel_env import clean_env

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cluster.md"
SHOP = REPO / "examples" / "shop"
RUN, SETTINGS = "<!-- connect-recipe: run -->", "<!-- connect-recipe: settings -->"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_page_names_its_port_once_and_starts_syncs_and_stops():
    (settings,) = doc_recipes.recipe_blocks(DOC, SETTINGS)
    assert doc_recipes.setting_names(settings) == {"CONNECT_PORT"}
    (run,) = doc_recipes.recipe_blocks(DOC, RUN)
    assert "15002" not in run and run.count("$CONNECT_PORT") == 2
    for step in ("sbin/start-connect-server.sh", "run-manifest", "--remote", "sbin/stop-connect-server.sh"):
        assert step in run, step


def _shop_api():
    spec = importlib.util.spec_from_file_location("shop_api_connect_recipe", SHOP / "api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ShopApi(rate_limit=None)


def _stop_left_over(pid_dir: Path) -> None:
    """The server the page started, when its stop command did not run (a failed step): ours to stop."""
    for pid_file in pid_dir.glob("*.pid"):
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass


def test_the_connect_commands_run_as_written(wheel_env, tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("no Java: a Spark Connect server needs Java 17 (make setup installs it)")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(SHOP / "manifest.yaml", work / "shop.yaml")
    shutil.copytree(SHOP / "schemas", work / "schemas")
    pid_dir = tmp_path / "pids"
    env = clean_env(PATH=os.pathsep.join([str(wheel_env), os.environ.get("PATH", "")]), SPARK_PID_DIR=str(pid_dir),
                    SPARK_LOG_DIR=str(tmp_path / "logs"), FRAMEWORK_CONNECT_WAIT_S="240")
    script = doc_recipes.recipe_script({"CONNECT_PORT": str(_free_port())}, doc_recipes.recipe_blocks(DOC, RUN))
    try:
        with _shop_api() as api:
            config = json.loads((SHOP / "config.json").read_text())
            config["base_url"] = api.url
            (work / "config.json").write_text(json.dumps(config))
            done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                                  timeout=600, check=False)
    finally:
        _stop_left_over(pid_dir)
    logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in (tmp_path / "logs").glob("*.out"))
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{done.stdout[-2000:]}\n--- server log\n{logs}"
    print(done.stderr[-1500:])  # with -s: whether the sync had to wait for the server, and for how long
    assert "Spark Connect" in done.stderr or "sc://127.0.0.1" in done.stderr
    assert pq.read_table(work / "output" / "orders").num_rows > 0
    assert (work / "output" / "_airbyte_state" / "state.json").exists()
    assert "stopping org.apache.spark.sql.connect.service.SparkConnectServer" in done.stdout + done.stderr
