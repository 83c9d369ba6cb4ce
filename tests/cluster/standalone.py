"""A Spark standalone cluster on 127.0.0.1 for tests: a master and one-core workers started from the pip package.

``spark-class`` (shipped in pyspark's ``bin/``) runs the master and the
workers as plain JVM processes; each worker gets its own work folder, so a
relative path that an executor resolves lands there, not in the test's
folder (the bug a relative ``--output`` had). :class:`StandaloneCluster` is a
context manager; the ``spark_cluster`` fixture (tests/cluster/conftest.py)
starts one per test session.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spark_class() -> str:
    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


@dataclass
class StandaloneCluster:
    root: Path
    workers: int = 2
    cores_per_worker: int = 1
    memory_per_worker: str = "1g"
    master_url: str = ""
    web_port: int = 0
    processes: list[subprocess.Popen] = field(default_factory=list)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env["SPARK_LOG_DIR"] = str(self.root / "logs")
        env.pop("SPARK_REMOTE", None)
        return env

    def start(self) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        port, self.web_port = _free_port(), _free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        log = open(self.root / "master.log", "wb")  # noqa: SIM115 - closed with the process
        self.processes.append(subprocess.Popen(
            [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(self.web_port)], stdout=log, stderr=subprocess.STDOUT, env=self._env(),
            start_new_session=True))
        self._wait_for(lambda: self._master_up(), "the master")
        for index in range(self.workers):
            work = self.root / f"worker-{index}"
            work.mkdir(exist_ok=True)
            wlog = open(self.root / f"worker-{index}.log", "wb")  # noqa: SIM115 - closed with the process
            self.processes.append(subprocess.Popen(
                [spark_class(), "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                 "--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker, "--work-dir", str(work),
                 "--webui-port", str(_free_port())],
                stdout=wlog, stderr=subprocess.STDOUT, env=self._env(), cwd=work, start_new_session=True))
        self._wait_for(lambda: self.alive_workers() >= self.workers, f"{self.workers} workers")
        return self

    def _master_up(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def alive_workers(self) -> int:
        import json

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=2) as answer:
                state = json.loads(answer.read())
        except OSError:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def _wait_for(self, ready, what: str, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.5)
        self.stop()
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(self.root.glob("*.log")))
        raise RuntimeError(f"the standalone cluster did not start ({what}):\n{logs}")

    def work_dirs(self) -> list[Path]:
        return [self.root / f"worker-{index}" for index in range(self.workers)]

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
