"""What the benchmarks share: the local API in a child process, and where the commands are."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PAGE_SIZE = 1000


class ApiServer:
    """``bench/api_server.py`` in a child process, for a ``with`` block; ``shards`` splits its records;
    ``options``: more of its flags (``--latency-ms``, ``--max-concurrent``, the shapes of bench/latency.py)."""

    def __init__(self, records: int, shards: int | None = None, page_size: int = PAGE_SIZE,
                 options: Sequence[str] = ()):
        self.records = records
        self.shards = shards
        self.page_size = page_size
        self.options = list(options)
        self.process: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> ApiServer:
        command = [sys.executable, str(HERE / "api_server.py"), "--records", str(self.records), "--port", "0",
                   "--page-size", str(self.page_size)]
        if self.shards is not None:
            command += ["--shards", str(self.shards)]
        command += self.options
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


# The typed schema of the benchmark's records (bench/api_server.py makes them).
RECORD_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"}, "account_id": {"type": "integer"}, "status": {"type": "string"},
        "amount": {"type": "number"}, "currency": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
        "customer": {"type": "object", "properties": {
            "name": {"type": "string"}, "email": {"type": "string"}, "tier": {"type": "string"},
            "address": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}},
        }},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


def bench_manifest(page_size: int = PAGE_SIZE, shards: int | None = None, typed: bool = False) -> str:
    """The benchmark's manifest: one stream ``records`` paged by page number; with ``shards``, one partition
    per shard (a ListPartitionRouter); with ``typed``, :data:`RECORD_SCHEMA` instead of an empty schema."""
    import yaml

    requester: dict = {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}", "path": "/records",
                       "http_method": "GET"}
    retriever: dict = {"type": "SimpleRetriever", "requester": requester}
    if shards is not None:
        requester["request_parameters"] = {"shards": str(shards)}
        retriever["partition_router"] = {
            "type": "ListPartitionRouter", "values": [str(shard) for shard in range(shards)], "cursor_field": "shard",
            "request_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "shard"}}
    retriever["record_selector"] = {"type": "RecordSelector",
                                    "extractor": {"type": "DpathExtractor", "field_path": ["data"]}}
    retriever["paginator"] = {
        "type": "DefaultPaginator",
        "pagination_strategy": {"type": "PageIncrement", "page_size": page_size, "start_from_page": 1},
        "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "page"},
        "page_size_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "per_page"}}
    manifest = {
        "version": "6.7.0", "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": ["records"]},
        "streams": [{"type": "DeclarativeStream", "name": "records", "primary_key": "id",
                     "schema_loader": {"type": "InlineSchemaLoader",
                                       "schema": RECORD_SCHEMA if typed else {"type": "object", "properties": {}}},
                     "retriever": retriever}],
        "spec": {"type": "Spec", "connection_specification": {
            "type": "object", "required": ["base_url"], "properties": {"base_url": {"type": "string"}}}},
    }
    return yaml.safe_dump(manifest, sort_keys=False)


def run_manifest_command() -> list[str]:
    """``run-manifest`` from this venv (or the module when the script is not installed), its bytecode
    compiled first (:func:`compile_framework`)."""
    compile_framework()
    script = shutil.which("run-manifest", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "framework.cli.run"]


def compile_framework() -> str:
    """Byte-compile the ``framework`` package a child process imports (same interpreter and environment),
    as pip does when it installs a package; returns its folder.

    The peers and the bare loop run from installed packages whose bytecode is compiled; an editable
    checkout under ``PYTHONDONTWRITEBYTECODE=1`` (set on the machine these benchmarks were taken on) would
    otherwise compile the framework's ~130 modules in every measured process (about 0.3 s of each start).
    ``compileall`` writes the files even under that variable, which only stops the import system from
    writing them; unchanged modules are skipped.
    """
    probe = "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('framework').origin))"
    folder = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", folder], check=True)
    return folder


def prepare_class_archive(wait: float = 180.0) -> str:
    """Make the class-data archive of Spark's classes that a local sync's driver JVM maps
    (framework/spark/class_archive.py), unless it is there; what was done, in words. A builder
    already at it (a sync's, in the background) is waited for, up to ``wait`` seconds.

    The first ``run-manifest`` sync of a machine makes it in the background after it ends; a benchmark
    makes it first, in the foreground, so that no measured run overlaps its making.
    """
    probe = ("import time\n"
             "from framework.spark.class_archive import class_archive\n"
             "from framework.spark.class_archive_builder import build\n"
             "a = class_archive()\n"
             f"deadline = time.time() + {wait!r}\n"
             "while a is not None and not a.usable() and a.building() and time.time() < deadline:\n"
             "    time.sleep(0.5)  # another builder (a sync's, in the background) is at it: its archive\n"
             "print('off' if a is None else ('there ' + a.path) if a.usable() else "
             "('made ' + a.path) if build(a) else 'not made')")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, env=env)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"failed ({done.stderr.strip()[-200:]})"


def peers_python(option: str | None, env_var: str) -> str | None:
    """The peers venv's python: the option, the environment variable, or `.venv-peers`."""
    for candidate in (option, os.environ.get(env_var), str(REPO / ".venv-peers" / "bin" / "python")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def aligned(columns: Sequence[str], grid: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> str:
    """A text table: the header, a rule, then one line per row of ``grid`` (the first column to the left,
    the others to the right), each as wide as its widest cell; a row's note (``notes``, by row; empty:
    none) on an indented line under it."""
    widths = [max([len(name)] + [len(row[i]) for row in grid]) for i, name in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    header = line(columns)
    lines = [header, "-" * len(header)]
    for index, row in enumerate(grid):
        lines.append(line(row))
        note = notes[index] if index < len(notes) else ""
        if note:
            lines.append(f"    {note}")
    return "\n".join(lines)
