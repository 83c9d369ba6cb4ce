"""The package as a user installs it, for the tests that run it so: a wheel built from the project's files and a
fresh virtual environment it is installed into (not editable), with its ``spark`` and ``connect`` extras.

The wheel is built (``pip wheel --no-deps``, as README.md's Install section says) from a copy of the files a
build reads, so nothing of this checkout (caches, outputs, tests) can leak in. The environment is made without
its own pip (``--without-pip``), and this venv's pip installs into it (``pip --python``) from pip's cache and
the configured index, without byte-compiling: about 15 s, most of it unpacking PySpark. The ``built_wheel``
and ``wheel_env`` fixtures (tests/conftest.py) make each once per test session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXTRAS = "spark,connect"
#: What a test's environment must not pass on to the installed commands: it would point them at this checkout.
NOT_INHERITED = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE", "VIRTUAL_ENV",
                 "SPARK_HOME", "PYTHONHOME", "SPARK_CONNECT_MODE_ENABLED")


def clean_env(**more: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    env.update(more)
    return env


def build_wheel(workdir: Path) -> Path:
    source, dist = workdir / "source", workdir / "dist"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "framework", source / "framework", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = dist.glob("manifest_framework-*-py3-none-any.whl")
    return built


def install(wheel: Path, env_dir: Path, extras: str = EXTRAS) -> Path:
    """``env_dir``'s ``bin/``, a fresh venv with ``wheel[extras]`` installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install", "-q",
                           "--no-compile", f"{wheel}[{extras}]"], capture_output=True, text=True, timeout=900,
                          env=clean_env(), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir / "bin"
