"""The pre-commit hook of .pre-commit-hooks.yaml, run as pre-commit runs it with its default filter.

pre-commit passes every staged file that matches the hook's ``files`` and ``types`` to its ``entry``;
here the entry is run the same way over a commit's worth of YAML: only the manifests are checked.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import EXAMPLE, REPO

HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))

WORKFLOW = "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{run: make test}]\n"
PRE_COMMIT_CONFIG = "repos:\n  - repo: local\n    hooks:\n      - id: validate-manifest\n"
BROKEN = "version: 6.7.0\nstreams:\n  - name: a\n    primary_ky: id\n"


def _run_hook(files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    (hook,) = [h for h in HOOKS if h["id"] == "validate-manifest"]
    chosen = [str(p.relative_to(cwd)) for p in files if re.search(hook["files"], str(p.relative_to(cwd)))]
    entry = shlex.split(hook["entry"])
    entry[0] = os.path.join(os.path.dirname(sys.executable), entry[0])  # the console script of this venv
    return subprocess.run([*entry, *chosen], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_the_default_filter_checks_manifests_and_skips_other_yaml(tmp_path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    workflow = tmp_path / ".github" / "workflows" / "ci.yml"
    workflow.write_text(WORKFLOW)
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(PRE_COMMIT_CONFIG)
    manifest = tmp_path / "shop.yaml"
    manifest.write_text(EXAMPLE.read_text())
    shutil.copytree(EXAMPLE.parent / "schemas", tmp_path / "schemas")  # its JsonFileSchemaLoader's files
    done = _run_hook([workflow, config, manifest], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file checked: 0 errors" in done.stderr
    assert ".github/workflows/ci.yml: skipped, not a manifest" in done.stderr
    assert ".pre-commit-config.yaml: skipped, not a manifest" in done.stderr
    assert "add `version" not in done.stdout


def test_a_broken_manifest_still_fails_the_hook(tmp_path):
    workflow = tmp_path / "ci.yml"
    workflow.write_text(WORKFLOW)
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    done = _run_hook([workflow, broken], tmp_path)
    assert done.returncode == 1
    assert "broken.yaml:4:5: error: unknown field `primary_ky`" in done.stdout
    assert "ci.yml" not in done.stdout


def test_the_readme_snippet_names_the_hook_and_says_how_a_manifest_is_recognised():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "- id: validate-manifest" in readme
    assert "type: DeclarativeSource" in readme and "dynamic_streams" in readme
