"""validate-manifest and protocol mode need no Spark: they run with the `spark` extra's packages absent.

The packages of the ``spark`` extra (pyspark, pyarrow, pandas, fastavro,
boto3) are made unimportable in a child process (a meta path finder that
refuses them), as in the pre-commit hook's small environment; Spark mode then
exits 2 with the fix instead of an ImportError.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "examples" / "shop"

BLOCKER = """
import sys
from importlib.abc import MetaPathFinder
BLOCKED = {"pyspark", "pyarrow", "pandas", "fastavro", "boto3"}
class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None
sys.meta_path.insert(0, Refuse())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if name.split(".")[0] in BLOCKED else _find(name, package)
from framework.cli.{module} import main
sys.exit(main(sys.argv[1:]))
"""


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", BLOCKER.replace("{module}", module), *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=REPO)


def test_validate_manifest_runs_without_the_spark_extra():
    done = _run("validate", str(SHOP / "manifest.yaml"))
    assert done.returncode == 0, done.stderr
    assert "pyspark" not in done.stderr


def test_protocol_mode_reads_without_the_spark_extra(tmp_path):
    spec = importlib.util.spec_from_file_location("shop_api_nospark", SHOP / "api.py")
    assert spec is not None and spec.loader is not None
    shop_api = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = shop_api
    spec.loader.exec_module(shop_api)
    with shop_api.ShopApi() as api:
        config = json.loads((SHOP / "config.json").read_text())
        config["base_url"] = api.url
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        done = _run("run", str(SHOP / "manifest.yaml"), "--config", str(path), "--protocol", "--streams", "accounts")
    assert done.returncode == 0, done.stderr
    records = [line for line in done.stdout.splitlines() if '"type":"RECORD"' in line]
    assert records, done.stdout[-2000:]


@pytest.mark.parametrize("module", ["run", "normalize"])
def test_spark_mode_without_the_extra_exits_2_with_the_fix(tmp_path, module):
    if module == "run":
        args = [str(SHOP / "manifest.yaml"), "--config", str(SHOP / "config.json"), "--output", str(tmp_path)]
    else:
        args = ["--output", str(tmp_path)]
    done = _run(module, *args)
    assert done.returncode == 2, done.stderr
    assert "pip install 'manifest-framework[spark]'" in done.stderr
    assert "Traceback" not in done.stderr
