"""Importing the change-data package costs only what is used: no pandas, and the apply's modules only when imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    return set(done.stdout.split())


def test_the_package_imports_neither_pandas_nor_the_apply():
    loaded = _modules_after("import framework.cdc")
    assert "pandas" not in loaded and "framework.cdc.apply" not in loaded and "pyspark" not in loaded


def test_a_tasks_staging_imports_neither_the_apply_nor_pandas():
    loaded = _modules_after("import framework.cdc.staging")
    assert "framework.cdc.apply" not in loaded and "pandas" not in loaded and "pyspark" not in loaded


def test_the_apply_and_a_tasks_staging_import_no_pandas():
    loaded = _modules_after("from framework.cdc.apply import apply_changes\nfrom framework.cdc.plan import ChangeStream\n"
                            "import framework.cdc.staging")
    assert "framework.cdc.apply" in loaded and "pandas" not in loaded and "pyspark" not in loaded


def test_the_package_names_only_its_submodules():
    import framework.cdc as cdc

    assert not hasattr(cdc, "__getattr__") and not hasattr(cdc, "apply_changes")
