"""What the benchmarks share: the local API in a child process, and where the commands are."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PAGE_SIZE = 1000


class ApiServer:
    """``bench/api_server.py`` in a child process, for a ``with`` block; ``shards`` splits its records."""

    def __init__(self, records: int, shards: int | None = None, page_size: int = PAGE_SIZE):
        self.records = records
        self.shards = shards
        self.page_size = page_size
        self.process: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> ApiServer:
        command = [sys.executable, str(HERE / "api_server.py"), "--records", str(self.records), "--port", "0",
                   "--page-size", str(self.page_size)]
        if self.shards is not None:
            command += ["--shards", str(self.shards)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("ready "):
            self.process.kill()
            raise SystemExit(f"bench/api_server.py did not start (it printed {line!r})")
        self.url = line.split(" ", 1)[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


def run_manifest_command() -> list[str]:
    """``run-manifest`` from this venv (or the module when the script is not installed)."""
    script = shutil.which("run-manifest", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "framework.cli.run"]


def peers_python(option: str | None, env_var: str) -> str | None:
    """The peers venv's python: the option, the environment variable, or `.venv-peers`."""
    for candidate in (option, os.environ.get(env_var), str(REPO / ".venv-peers" / "bin" / "python")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None
