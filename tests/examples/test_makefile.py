"""The Makefile's set-up paths: `make demo` installs only what the demo needs, `make test` what the tests need.

``make -n`` prints the commands a target would run without running them, so nothing is installed here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _commands(target: str) -> str:
    if shutil.which("make") is None:
        pytest.fail("`make` is not installed: the README's two commands need it")
    done = subprocess.run(["make", "-n", "-B", target, "PYTHON=python3"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_demo_installs_java_but_not_postgresql():
    commands = _commands("demo")
    assert "scripts/ensure-java.sh" in commands
    assert "ensure-postgres" not in commands and "postgresql" not in commands.lower()
    assert "examples/demo.sh" in commands


def test_the_tests_install_postgresql_and_java():
    commands = _commands("test")
    assert "scripts/ensure-postgres.sh" in commands and "scripts/ensure-java.sh" in commands
    assert "pytest" in commands
