"""Importing the change-data package costs only what is used: no pandas, and the apply's modules on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    return set(done.stdout.split())


def test_the_package_imports_neither_pandas_nor_the_apply():
    loaded = _modules_after("import framework.cdc")
    assert "pandas" not in loaded and "framework.cdc.apply" not in loaded and "pyspark" not in loaded


def test_the_apply_and_a_tasks_staging_import_no_pandas():
    loaded = _modules_after("from framework.cdc import apply_changes, ChangeStream\nimport framework.cdc.staging")
    assert "framework.cdc.apply" in loaded and "pandas" not in loaded and "pyspark" not in loaded


def test_names_load_on_first_use_and_an_unknown_name_is_an_attribute_error():
    import framework.cdc as cdc
    from framework.cdc.apply import apply_changes

    assert cdc.apply_changes is apply_changes
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        cdc.nothing  # noqa: B018
