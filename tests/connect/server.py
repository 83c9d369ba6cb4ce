"""A Spark Connect server on 127.0.0.1 for tests and benchmarks, started from the pip package.

pyspark's wheel ships the server (``jars/spark-connect_*.jar``) and
``sbin/start-connect-server.sh``, which daemonizes it through
``spark-daemon.sh``; here ``bin/spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` runs the same
class in the foreground instead, so the process is ours to stop. The server
gets a free port, ``SPARK_LOCAL_IP=127.0.0.1``, a ``local[N]`` master and
this interpreter as its Python (``PYSPARK_PYTHON``), with the repository on
``PYTHONPATH`` so that its Python workers import ``framework`` (a real server
needs the package installed: docs/cluster.md, "Spark Connect").
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ConnectServer:
    root: Path
    cores: int = 2
    conf: dict[str, str] = field(default_factory=dict)  # more --conf settings (see warm_conf)
    jars: tuple[str, ...] = ()  # --jars: on the server's classpath (a JDBC driver)
    env: dict[str, str] = field(default_factory=dict)  # more environment (SPARK_CONNECT_AUTHENTICATE_TOKEN)
    url: str = ""
    process: subprocess.Popen | None = field(default=None, repr=False)

    def start(self, seconds: float = 120) -> ConnectServer:
        self.root.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        env = dict(os.environ)
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        env.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable),
                    "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)})
        env.update(self.env)
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        log = open(self.root / "connect-server.log", "wb")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [str(submit), "--class", SERVER_CLASS, "--name", "Spark Connect server (tests)",
             "--master", f"local[{self.cores}]", "--driver-memory", "1g",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
             "--conf", "spark.python.worker.reuse=true", "--conf", "spark.sql.shuffle.partitions=4",
             *(f"--conf={key}={value}" for key, value in self.conf.items()),
             *(("--jars", ",".join(self.jars)) if self.jars else ())],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.root, start_new_session=True)
        log.close()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                self.url = f"sc://127.0.0.1:{port}"
                return self
            except OSError:
                time.sleep(0.3)
        text = (self.root / "connect-server.log").read_text(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not start:\n{text}")

    def log(self) -> str:
        """The server's log so far (Spark's INFO lines: jobs cancelled, tasks killed)."""
        path = self.root / "connect-server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
