"""The package as a user installs it: the wheel (``built_wheel``), installed with its extras into a fresh venv
(``wheel_env``; both tests/wheel_env.py's, made once per session), run from a folder with no checkout in it.

``validate-manifest``, a protocol-mode sync and a Spark-mode sync of the example shop run from that environment's
``bin/`` against the example API; the Spark sync waits for Spark (``--wait-for-spark``), so its Python workers
import the installed package too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from wheel_env import clean_env

REPO = Path(__file__).resolve().parents[1]
SHOP = REPO / "examples" / "shop"


def _tracked_files() -> set[str]:
    """framework's files as git knows them (a stray untracked file is no part of the package): its modules and
    any data the runtime reads next to them."""
    listed = subprocess.run(["git", "ls-files", "framework"], cwd=REPO, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


def _run(bin_dir: Path, command: str, *args: str, cwd: Path, timeout: float = 300,
         **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / command), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=clean_env(**env), check=False)


def _shop_api():
    spec = importlib.util.spec_from_file_location("shop_api_wheel", SHOP / "api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ShopApi(rate_limit=None)


@pytest.fixture
def connector(tmp_path):
    """The example connector copied out of the checkout, its config pointing at a running shop API."""
    folder = tmp_path / "connector"
    folder.mkdir()
    shutil.copy(SHOP / "manifest.yaml", folder / "manifest.yaml")
    shutil.copytree(SHOP / "schemas", folder / "schemas")
    with _shop_api() as api:
        config = json.loads((SHOP / "config.json").read_text())
        config["base_url"] = api.url
        (folder / "config.json").write_text(json.dumps(config))
        yield folder


def test_the_wheel_holds_every_module_and_the_version_written_once(built_wheel):
    import framework

    with zipfile.ZipFile(built_wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    tracked = _tracked_files()
    assert len(tracked) > 200 and tracked - names == set(), "files of framework/ missing from the wheel"
    assert "framework/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "examples/", "bench/", "docs/"))]
    assert f"Version: {framework.__version__}\n" in metadata
    assert built_wheel.name == f"manifest_framework-{framework.__version__}-py3-none-any.whl"
    for script in ("validate-manifest", "run-manifest", "normalize-output", "manifest-builder"):
        assert f"{script} = framework.cli." in entry_points


def test_validate_manifest_runs_from_the_installed_wheel(wheel_env, connector):
    import framework

    version = _run(wheel_env, "validate-manifest", "--version", cwd=connector)
    assert version.stdout.strip() == f"validate-manifest {framework.__version__}", version.stderr
    where = _run(wheel_env, "python", "-c", "import framework; print(framework.__file__)", cwd=connector)
    assert Path(where.stdout.strip()).is_relative_to(wheel_env.parent), where.stdout + where.stderr
    done = _run(wheel_env, "validate-manifest", "--config", "config.json", "manifest.yaml", cwd=connector)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file checked: 0 errors, 0 warnings" in done.stderr


def test_a_protocol_sync_runs_from_the_installed_wheel(wheel_env, connector):
    done = _run(wheel_env, "run-manifest", "manifest.yaml", "--config", "config.json", "--protocol", cwd=connector)
    assert done.returncode == 0, done.stderr[-3000:]
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    streams = {m["record"]["stream"] for m in messages if m["type"] == "RECORD"}
    assert {"accounts", "orders"} <= streams, streams
    assert any(m["type"] == "STATE" for m in messages)


@pytest.mark.spark
def test_a_spark_sync_runs_from_the_installed_wheel(wheel_env, connector):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("no Java: Spark mode needs Java 17 (make setup installs it)")
    out = connector / "out"
    done = _run(wheel_env, "run-manifest", "manifest.yaml", "--config", "config.json", "--output", str(out),
                "--wait-for-spark", "--streams", "accounts,orders", cwd=connector, timeout=600,
                SPARK_LOCAL_IP="127.0.0.1")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Spark ready" in done.stderr, done.stderr[-2000:]  # the tasks ran on Spark, in the installed package
    assert pq.read_table(out / "orders").num_rows > 0 and pq.read_table(out / "accounts").num_rows > 0
    assert (out / "_airbyte_state" / "state.json").exists()


def test_the_readme_installs_as_this_test_does():
    """README.md's Install block builds and installs the wheel the way the fixtures here do (tests/wheel_env.py)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in install.split("```bash", 1)[1].split("```", 1)[0].splitlines()
                if line.strip()]
    assert commands == ["pip wheel --no-deps -w dist .", 'pip install "$(echo dist/manifest_framework-*.whl)[spark]"']
