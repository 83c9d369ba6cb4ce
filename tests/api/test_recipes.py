"""The scheduler recipes of docs/python-api.md call only the Python API: checked with ast (their packages,
Airflow and Dagster, are too heavy for CI to run them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import framework

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted((REPO / "examples" / "recipes").glob("*.py"))


def test_there_are_airflow_and_dagster_recipes_and_the_page_links_them():
    assert [path.name for path in RECIPES] == ["airflow_dag.py", "dagster_job.py"]
    page = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert all(f"examples/recipes/{path.name}" in page for path in RECIPES)


def framework_uses(tree: ast.Module) -> list[str]:
    """What the module takes from the framework: ``framework.X`` for each import and attribute it names."""
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used += [alias.name for alias in node.names if alias.name.split(".")[0] == "framework"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "framework":
            used += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "framework":
            used.append(f"framework.{node.attr}")
    return used


@pytest.mark.parametrize("path", RECIPES, ids=lambda path: path.name)
def test_a_recipe_uses_only_the_public_api(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    used = framework_uses(tree)
    assert "framework.sync" in used
    public = {"framework", *(f"framework.{name}" for name in framework.__all__)}
    assert [name for name in used if name not in public] == [], f"{path}: only `framework`'s public names"
    for name in used:  # and each one exists
        if name != "framework":
            assert getattr(framework, name.split(".", 1)[1]) is not None


def test_the_check_catches_a_submodule():
    tree = ast.parse("import framework.cli.run\nfrom framework.api.sync import sync\nframework.engine\n")
    assert framework_uses(tree) == ["framework.cli.run", "framework.api.sync.sync", "framework.engine"]
