"""How fast does ``run-manifest --protocol`` extract records, next to a bare loop?

    python bench/extraction.py [--records 200000] [--runs 2] [--peers] [--peers-python PATH]
                               [--against CHECKOUT]

Starts ``bench/api_server.py`` (its own process) with N synthetic records in
pages of 1,000, writes a manifest for it (one DeclarativeStream, PageIncrement,
DpathExtractor ``["data"]``) into a temp folder, and measures, each in a
fresh process whose stdout this script reads:

* **bare loop**: ``requests.Session().get`` + ``orjson.loads`` over the same
  pages, counting the records: the floor of any Python HTTP client;
* **protocol**: ``run-manifest MANIFEST --config CFG --protocol``, counting the
  RECORD lines it prints (so encoding and writing the output are included);
* **protocol 2x**: the same at twice the records, to show peak memory is flat;
* **protocol (CHECKOUT)** (``--against``): the same command with another
  checkout of the framework first on ``PYTHONPATH`` (an older commit, say:
  ``git worktree add /tmp/before HEAD~3``), byte-compiled first like this one;
  run in the same rounds, so both see the same load;
* **airbyte-cdk** (``--peers``): ``source-declarative-manifest read`` with the
  manifest injected into the config as ``__injected_declarative_manifest``,
  from the peers venv (``bash bench/peers.sh``) or ``--peers-python``.

For each: records, wall seconds (process start to exit), start seconds (to the
stream's first status line), read seconds (the rest), records/s over the read
and over the wall time, CPU seconds (user + system) and the process's peak RSS
(both from ``os.wait4``'s rusage, so only that process: CPU time moves much
less than the wall time on a busy machine). Modes run in rounds, ``--runs`` of them; the
best run is kept for times, the highest peak RSS for memory. See bench/README.md.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import PAGE_SIZE, ApiServer, bench_manifest, peers_python, run_manifest_command

STREAM = "records"
START_MARK = b"started\n"  # what the bare loop prints once its imports are done
BARE = "bare loop (requests + orjson)"
PROTOCOL = "run-manifest --protocol"
PROTOCOL_DOUBLE = "run-manifest --protocol (2x records)"
CDK = "airbyte-cdk source-declarative-manifest"



# -- the bare loop (runs in its own process: `extraction.py --bare-loop URL`) ---------------------------------


def bare_loop(base_url: str, per_page: int) -> None:
    import orjson
    import requests

    out = sys.stdout.buffer
    out.write(START_MARK)
    out.flush()
    session = requests.Session()
    count = 0
    page = 1
    while True:
        response = session.get(f"{base_url}/records", params={"page": page, "per_page": per_page}, timeout=30)
        response.raise_for_status()
        data = orjson.loads(response.content)["data"]
        for _record in data:
            count += 1
        if len(data) < per_page:
            break
        page += 1
    out.write(b"records %d\n" % count)


# -- measuring a process ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    records: int
    wall: float  # process start to exit
    start: float  # process start to the stream's first status line
    read: float  # from there to exit
    rss_mib: float  # peak resident memory of the process
    exit_code: int
    error: str | None  # a failure: an ERROR trace's message or the end of stderr
    cpu: float = 0.0  # user + system seconds of the process

    @property
    def per_second_read(self) -> float:
        return self.records / self.read if self.read > 0 else 0.0

    @property
    def per_second_wall(self) -> float:
        return self.records / self.wall if self.wall > 0 else 0.0


def _is_start(line: bytes) -> bool:
    return line == START_MARK or (b'"STREAM_STATUS"' in line and b'"STARTED"' in line)


def _record_count(line: bytes) -> int:
    """1 for an Airbyte RECORD line, the total for the bare loop's closing line, else 0."""
    if line.startswith(b'{"type":"RECORD"'):
        return 1
    if line.startswith(b"records "):
        return int(line.split()[1])
    if b'"RECORD"' in line[:40]:  # a RECORD written with other spacing or key order
        import orjson

        return 1 if orjson.loads(line).get("type") == "RECORD" else 0
    return 0


def _error_of(line: bytes) -> str | None:
    if b'"ERROR"' in line[:64] and b'"TRACE"' in line[:32]:
        import orjson

        error = orjson.loads(line)["trace"].get("error") or {}
        return str(error.get("message") or error)[:300]
    return None


def measure(command: Sequence[str], cwd: str, env: dict[str, str] | None = None) -> Run:
    """Run ``command``, reading its stdout as it comes; its own wall time, phases, CPU time and peak RSS."""
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                                   bufsize=1 << 20, env=env)
        first: float | None = None
        records = 0
        error = None
        assert process.stdout is not None
        for line in process.stdout:
            if first is None and _is_start(line):
                first = time.perf_counter()
            records += _record_count(line)
            if error is None and not line.startswith(b'{"type":"RECORD"'):
                error = _error_of(line)
        process.stdout.close()
        _, status, usage = os.wait4(process.pid, 0)
        ended = time.perf_counter()
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode and error is None:
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace").strip().splitlines()[-3:]
            error = " | ".join(tail)[:300] or f"exit code {process.returncode}"
    first = first if first is not None else started
    return Run(records, ended - started, first - started, ended - first, usage.ru_maxrss / 1024,
               process.returncode, error, usage.ru_utime + usage.ru_stime)


def best_of(runs: Sequence[Run]) -> Run:
    """Best times across runs (each phase on its own); the highest peak RSS; a failure wins over success."""
    failed = [r for r in runs if r.error or r.exit_code]
    if failed:
        return failed[0]
    return Run(runs[0].records, min(r.wall for r in runs), min(r.start for r in runs), min(r.read for r in runs),
               max(r.rss_mib for r in runs), 0, None, min(r.cpu for r in runs))


# -- the API server -----------------------------------------------------------------------------------------


# -- the modes ----------------------------------------------------------------------------------------------


def _write_inputs(folder: Path, url: str) -> dict[str, str]:
    """The manifest, our config, the CDK's config (manifest injected) and a catalog; their paths."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    manifest_text = bench_manifest(PAGE_SIZE)
    config = {"base_url": url}
    paths = {name: str(folder / name) for name in ("manifest.yaml", "config.json", "cdk_config.json", "catalog.json")}
    Path(paths["manifest.yaml"]).write_text(manifest_text)
    Path(paths["config.json"]).write_text(json.dumps(config))
    injected = dict(config, __injected_declarative_manifest=yaml.safe_load(manifest_text))
    Path(paths["cdk_config.json"]).write_text(json.dumps(injected))
    catalog = {"streams": [{"stream": {"name": STREAM, "json_schema": {}, "supported_sync_modes": ["full_refresh"]},
                            "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]}
    Path(paths["catalog.json"]).write_text(json.dumps(catalog))
    return paths


def _cdk_command(python: str) -> list[str]:
    script = Path(python).parent / "source-declarative-manifest"
    if script.exists():
        return [str(script)]
    return [python, "-c", "import sys; from airbyte_cdk.cli.source_declarative_manifest import run; "
                          "sys.argv[0] = 'source-declarative-manifest'; run()"]


def _modes(paths: dict[str, str], url: str, peers_python: str | None) -> dict[str, list[str]]:
    modes = {
        BARE: [sys.executable, __file__, "--bare-loop", url],
        PROTOCOL: run_manifest_command() + [paths["manifest.yaml"], "--config",
                                                                paths["config.json"], "--protocol"],
    }
    if peers_python:
        modes[CDK] = _cdk_command(peers_python) + [
            "read", "--config", paths["cdk_config.json"], "--catalog", paths["catalog.json"]]
    return modes


@dataclass(frozen=True)
class Mode:
    label: str
    command: list[str]
    expected: int  # records the API holds
    env: dict[str, str] | None = None  # the process's environment (None: this one's)


def against(checkout: str, command: list[str]) -> tuple[str, dict[str, str]]:
    """The label and environment that run ``command`` (run-manifest) on another checkout's framework,
    byte-compiled first as this one's is (:func:`harness.compile_framework`)."""
    folder = os.path.abspath(checkout)
    if not os.path.isfile(os.path.join(folder, "framework", "__init__.py")):
        raise SystemExit(f"--against {checkout}: no framework/ package there")
    compileall.compile_dir(os.path.join(folder, "framework"), quiet=1)
    return f"{PROTOCOL} ({checkout})", dict(os.environ, PYTHONPATH=folder)


def measure_rounds(modes: Sequence[Mode], cwd: str, runs: int,
                   progress: Callable[[str], None]) -> list[tuple[str, Run]]:
    """Each mode ``runs`` times, in rounds (every mode once, then again), so a machine that gets busier or
    quieter during the bench weighs on every mode alike. A mode that fails is not run again."""
    results: dict[str, list[Run]] = {mode.label: [] for mode in modes}
    for round_number in range(1, runs + 1):
        for mode in modes:
            done = results[mode.label]
            if done and (done[-1].error or done[-1].exit_code):
                continue
            run = measure(mode.command, cwd, mode.env)
            if run.records != mode.expected and not run.error:
                run = Run(run.records, run.wall, run.start, run.read, run.rss_mib, run.exit_code,
                          f"read {run.records:,} records, expected {mode.expected:,}", run.cpu)
            progress(f"  round {round_number}/{runs}, {mode.label}: {run.records:,} records in {run.wall:.2f} s"
                     + (f"  FAILED: {run.error}" if run.error or run.exit_code else ""))
            done.append(run)
    return [(mode.label, best_of(results[mode.label])) for mode in modes]


# -- report -------------------------------------------------------------------------------------------------


def table(rows: Sequence[tuple[str, Run]]) -> str:
    width = max([42, *(len(label) for label, _ in rows)])
    head = (f"{'mode':<{width}} {'records':>9} {'wall s':>7} {'start s':>7} {'read s':>7} "
            f"{'rec/s read':>11} {'rec/s wall':>11} {'CPU s':>6} {'peak RSS MiB':>12}")
    lines = [head, "-" * len(head)]
    for label, run in rows:
        lines.append(f"{label:<{width}} {run.records:>9,} {run.wall:>7.2f} {run.start:>7.2f} {run.read:>7.2f} "
                     f"{run.per_second_read:>11,.0f} {run.per_second_wall:>11,.0f} {run.cpu:>6.2f} "
                     f"{run.rss_mib:>12.1f}")
        if run.error or run.exit_code:
            lines.append(f"{'':<{width}} FAILED (exit {run.exit_code}): {run.error}")
    return "\n".join(lines)


def _ratio(a: Run, b: Run, attribute: str) -> float:
    base = getattr(b, attribute)
    return getattr(a, attribute) / base if base else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Extraction throughput: run-manifest --protocol vs a bare loop.")
    parser.add_argument("--records", type=int, default=200_000, help="records the API serves (default 200000)")
    parser.add_argument("--runs", type=int, default=2, help="runs per mode; the best is kept (default 2)")
    parser.add_argument("--peers", action="store_true", help="also run airbyte-cdk's source-declarative-manifest")
    parser.add_argument("--peers-python", metavar="PATH",
                        help="python with airbyte-cdk (default: $AIRBYTE_CDK_PYTHON, then .venv-peers/bin/python)")
    parser.add_argument("--no-double", action="store_true", help="skip the 2x-records memory run")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="also run protocol mode on another checkout of the framework, in the same rounds")
    parser.add_argument("--bare-loop", metavar="URL", help=argparse.SUPPRESS)  # the bare loop's own process
    args = parser.parse_args(argv)
    if args.bare_loop:
        bare_loop(args.bare_loop, PAGE_SIZE)
        return 0

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    peers = None
    if args.peers:
        peers = peers_python(args.peers_python, "AIRBYTE_CDK_PYTHON")
        if peers is None:
            print("--peers: no python with airbyte-cdk found; run `bash bench/peers.sh` (makes .venv-peers) "
                  "or pass --peers-python PATH", file=sys.stderr)
            return 2

    total_started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-extraction-") as tmp, contextlib.ExitStack() as servers:
        progress(f"starting the API ({args.records:,} records"
                 + ("" if args.no_double else f", and {args.records * 2:,} for the 2x run") + ") ...")
        server = servers.enter_context(ApiServer(args.records))
        paths = _write_inputs(Path(tmp, "1x"), server.url)
        modes = [Mode(label, command, args.records) for label, command in _modes(paths, server.url, peers).items()]
        if args.against:
            label, env = against(args.against, modes[1].command)
            modes.insert(2, Mode(label, modes[1].command, args.records, env))
        if not args.no_double:
            double = servers.enter_context(ApiServer(args.records * 2))
            double_paths = _write_inputs(Path(tmp, "2x"), double.url)
            command = _modes(double_paths, double.url, None)[PROTOCOL]
            modes.append(Mode(PROTOCOL_DOUBLE, command, args.records * 2))
        rows = measure_rounds(modes, tmp, args.runs, progress)

    print()
    print(f"Extraction: {args.records:,} records in pages of {PAGE_SIZE:,} from a local API "
          f"(best of {args.runs} runs; {time.perf_counter() - total_started:.0f} s in all)")
    print()
    print(table(rows))
    print()
    by_label = dict(rows)
    bare = by_label[BARE]
    protocol = by_label[PROTOCOL]
    print(f"protocol / bare: {_ratio(protocol, bare, 'per_second_read'):.2f} of the bare loop's records/s over "
          f"the read, {_ratio(protocol, bare, 'per_second_wall'):.2f} over the wall time (target >= 0.50)")
    if args.against:
        other = by_label[f"{PROTOCOL} ({args.against})"]
        print(f"this / {args.against}: wall {_ratio(protocol, other, 'wall'):.2f}, start "
              f"{_ratio(protocol, other, 'start'):.2f}, read {_ratio(protocol, other, 'read'):.2f}, CPU "
              f"{_ratio(protocol, other, 'cpu'):.2f}; {args.against} / bare over the wall time "
              f"{_ratio(other, bare, 'per_second_wall'):.2f}")
    cdk = by_label.get(CDK)
    if cdk is not None:
        print(f"cdk / bare:      {_ratio(cdk, bare, 'per_second_read'):.2f} over the read, "
              f"{_ratio(cdk, bare, 'per_second_wall'):.2f} over the wall time; "
              f"protocol / cdk: {_ratio(protocol, cdk, 'per_second_read'):.1f}x over the read, "
              f"{_ratio(protocol, cdk, 'per_second_wall'):.1f}x over the wall time")
    doubled = by_label.get(PROTOCOL_DOUBLE)
    if doubled is not None and protocol.rss_mib:
        print(f"peak RSS at 2x records: {doubled.rss_mib:.1f} MiB vs {protocol.rss_mib:.1f} MiB "
              f"({doubled.rss_mib / protocol.rss_mib:.2f}x; flat means close to 1.00x)")
    failed = [label for label, run in rows if run.error or run.exit_code]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
