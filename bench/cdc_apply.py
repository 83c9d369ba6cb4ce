"""How fast is the change-data apply of realtime Replicant files, and how does it grow with the changes?

    python bench/cdc_apply.py [--keys 1000000] [--changes 100,1000,10000,100000,1000000 | 10000,10000r]
                              [--before DIR] [--format replicant_csv] [--image changes] [--keep DIR]

No HTTP and no tasks: the script writes staged Parquet files itself (the
typed batches a sync's tasks would land: ``_airbyte_extracted_at`` and six
data fields, ``id`` the primary key, ``updated_at`` the cursor,
``_ab_cdc_deleted_at`` the delete mark) under a temp output folder and calls
:func:`framework.cdc.apply.apply_changes` on a ``local[2]`` session:

* **first**: N new keys, so N inserts and the first image;
* then one apply per entry of ``--changes`` (C), in order, on the same image:
  C staged records spread evenly over the key range (every N/C-th key):
  80 % updated, 10 % marked deleted, 10 % new keys. An entry ending in ``r``
  (``10000r``) is the same apply run as a full rewrite (``compact=True``: every
  bucket read whole and written anew, newest row per key resolved where a bucket
  holds deltas): what every apply cost before the image was bucketed, side by
  side with the small apply it is compared with.

With ``--changes`` left empty it runs the older pair of applies instead: the
first, then N staged records (40 % unchanged, 40 % updated, 10 % deleted,
10 % new: 0.6 N operations).

Each key count runs in its own child process (so peak memory is its own).
``--before DIR`` runs the same applies a second time with the ``framework``
package found in ``DIR`` (e.g. ``git archive <commit> framework | tar -x -C
DIR``), one after the other in the same run, and prints the ratio: the
"before/after" of a change, side by side on the same machine and load.
Before the applies, one tiny Python job starts the session's Python workers
and imports the framework in them, as a sync's tasks have done before its
apply (``--cold`` leaves that to the first apply: about 8 s more here).
For each apply it prints the operations, seconds, operations per second, the
image's buckets touched and rewritten, and the driver's step times
(``ApplyResult.phases``); then the peak RSS (``VmHWM``) of the driver's
Python, the JVM and the largest Python worker. ``--keep DIR`` leaves the
output folders there (``DIR/<keys>``). The clock is fixed, so two runs of the
same code write the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "--root" not in sys.argv:
    sys.path.insert(0, str(HERE.parent))

MARK = "bench-result "
NOW = datetime(2021, 5, 12, 2, 50, 41, 959000, tzinfo=timezone.utc)
FIELDS = ("id", "name", "amount", "qty", "updated_at", "_ab_cdc_deleted_at")
ROWS_PER_FILE = 250_000


def _staged_table(ids, names, amounts, qtys, days, deleted, extracted_ms):
    import pyarrow as pa

    rows = len(ids)
    return pa.table({
        "_airbyte_extracted_at": pa.array([extracted_ms] * rows, pa.timestamp("ms", tz="UTC")),
        "id": pa.array(ids, pa.int64()),
        "name": pa.array(names, pa.string()),
        "amount": pa.array(amounts, pa.float64()),
        "qty": pa.array(qtys, pa.int64()),
        "updated_at": pa.array([1_609_459_200_000_000 + d * 86_400_000_000 for d in days],
                               pa.timestamp("us", tz="UTC")),
        "_ab_cdc_deleted_at": pa.array(deleted, pa.string()),
    })


def _stage(root: Path, change, sync_id: int, table) -> None:
    import pyarrow.parquet as pq

    folder = root / change.staging_prefix(sync_id)
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, table.num_rows, ROWS_PER_FILE)):
        pq.write_table(table.slice(start, ROWS_PER_FILE), folder / f"1620787841959_{number:05d}.parquet",
                       compression="snappy")


def _first(keys: int):
    ids = list(range(keys))
    names = [f"name {i}" if i % 97 else f'odd, "name"\n{i}' for i in ids]
    return _staged_table(ids, names, [i * 0.5 for i in ids], ids, [1] * keys, [None] * keys, 1_620_000_000_000)


def _second(keys: int):
    ids, names, amounts, qtys, deleted, days = [], [], [], [], [], []
    for i in range(keys):
        bucket = i % 10
        key = i if bucket < 9 else keys + i  # the last tenth: new keys
        ids.append(key)
        names.append((f"name {i}" if i % 97 else f'odd, "name"\n{i}') if bucket < 4 else f"renamed {key}")
        amounts.append(i * 0.5 if bucket < 4 else i * 0.25)
        qtys.append(i if bucket < 4 else i + 1)
        deleted.append("2021-01-03T00:00:00Z" if bucket == 8 else None)
        days.append(1 if bucket < 4 else 2)
    return _staged_table(ids, names, amounts, qtys, days, deleted, 1_620_100_000_000)


def _changed(keys: int, changes: int, round_: int):
    """``changes`` records spread over the key range: 80 % updated, 10 % marked deleted, 10 % new keys."""
    step = max(1, keys // changes)
    ids, names, amounts, qtys, deleted, days = [], [], [], [], [], []
    for j in range(changes):
        kind = j % 10
        key = (j * step) % keys if kind < 9 else keys * (round_ + 1) + j
        ids.append(key)
        names.append(f"round {round_} {key}")
        amounts.append(key * 0.25 + round_)
        qtys.append(key + round_)
        deleted.append("2021-01-03T00:00:00Z" if kind == 8 else None)
        days.append(round_ + 2)
    return _staged_table(ids, names, amounts, qtys, days, deleted, 1_620_100_000_000 + round_ * 1000)


def _peaks() -> dict[str, float]:
    """VmHWM (MiB) of this process, the JVM and the largest Python worker (descendants of this process)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except OSError:
                continue
    peaks = {"driver": _hwm(os.getpid()), "jvm": 0.0, "worker": 0.0}
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        kind = "jvm" if b"java" in command.split(b"\0")[0] else "worker" if b"python" in command else None
        if kind:
            peaks[kind] = max(peaks[kind], _hwm(pid))
    return peaks


def _hwm(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _warm(batches):
    import framework.cdc.apply  # noqa: F401 - what the workers of a sync have imported

    yield from batches


def child(keys: int, changes: list[str], fmt: str, image: str, keep: str | None, cold: bool) -> None:
    from framework.cdc.apply import apply_changes
    from framework.cdc.plan import ChangeStream
    from framework.models.destination import DestinationSettings
    from framework.spark.session import spark_session
    from framework.storage import storage_for
    from framework.temporal.clock import FixedClock

    out = Path(keep) / str(keys) if keep else Path(tempfile.mkdtemp(prefix="cdc-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    settings = DestinationSettings.model_validate({"output": str(out), "format": {
        "format_type": fmt, "mode": "realtime", "image": image, "schema": "bench"}})
    storage = storage_for(settings)
    spark = spark_session(master="local[2]", app_name="cdc-bench", **{"spark.sql.shuffle.partitions": "2"})
    if not cold:  # a sync's tasks have started the Python workers and imported the framework before its apply
        spark.range(4, numPartitions=2).mapInArrow(_warm, "id long").collect()
    plans = [("first", lambda: _first(keys))]
    if changes:
        plans += [(c, lambda c=c, r=r: _changed(keys, int(c.rstrip("r")), r)) for r, c in enumerate(changes, start=1)]
    else:
        plans.append(("second", lambda: _second(keys)))
    results = []
    for sync_id, (name, table) in enumerate(plans, start=1):
        change = ChangeStream(
            stream="bench", namespace="", fields=FIELDS, keys=(0,), cursor="updated_at",
            deleted_field="_ab_cdc_deleted_at", incremental=True, sync_id=sync_id, format_type=fmt, image=image,
            include_header=fmt == "replicant_csv", catalog=None, schema="bench", root="_airbyte_cdc/bench/",
            op_prefix="bench/")
        _stage(out, change, sync_id, table())
        options = {"compact": True} if name.endswith("r") else {}
        started = time.perf_counter()
        applied = apply_changes(spark, storage, settings, change, completed=True, clock=FixedClock(NOW), cores=2,
                                **options)
        seconds = time.perf_counter() - started
        ops = applied.counts.total
        results.append({"apply": name, "ops": ops, "seconds": seconds, "ops_per_s": ops / seconds,
                        "image_rows": applied.image_rows, "buckets": getattr(applied, "buckets", 0),
                        "touched": getattr(applied, "touched", 0), "rewritten": getattr(applied, "rewritten", 0),
                        "phases": [list(p) for p in getattr(applied, "phases", ())]})
    print(MARK + json.dumps({"keys": keys, "results": results, "peaks": _peaks()}), flush=True)
    spark.stop()
    if not keep:
        shutil.rmtree(out, ignore_errors=True)


def _run_child(root: Path, keys: int, args: argparse.Namespace) -> dict | None:
    command = [sys.executable, __file__, "--child", str(keys), "--changes", args.changes, "--format", args.format,
               "--image", args.image, "--root", str(root)]
    if args.keep:
        command += ["--keep", str(Path(args.keep) / root.name)]
    if args.cold:
        command.append("--cold")
    env = dict(os.environ, PYTHONPATH=str(root))  # the Python workers import the same framework
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode or not lines:
        causes = [line for line in done.stderr.splitlines() if "Error" in line or "Exception" in line][:8]
        print(f"{keys:>9} failed with {root} (exit {done.returncode}):\n" + "\n".join(causes)
              + f"\n...\n{done.stderr[-3000:]}")
        return None
    return json.loads(lines[-1][len(MARK):])


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", default="1000000", help="comma-separated key counts")
    parser.add_argument("--changes", default="100,1000,10000,100000,1000000",
                        help="comma-separated changed records, one apply each after the first ('' for the old pair); "
                        "an entry ending in r runs as a full rewrite")
    parser.add_argument("--before", help="a folder holding another version's `framework` package to compare with")
    parser.add_argument("--format", default="replicant_csv", choices=["replicant_csv", "replicant_json"])
    parser.add_argument("--image", default="changes", choices=["changes", "full"])
    parser.add_argument("--keep", help="leave the output folders under this folder")
    parser.add_argument("--cold", action="store_true",
                        help="no warm-up: the first apply also starts the Python workers (about 8 s here)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    changes = [c.strip() for c in args.changes.split(",") if c.strip()]
    if any(not c.rstrip("r").isdigit() for c in changes):
        parser.error(f"--changes: {args.changes!r} is not a list of numbers (each may end in r: a full rewrite)")
    if args.child:
        if args.root:
            sys.path.insert(0, args.root)
        child(args.child, changes, args.format, args.image, args.keep, args.cold)
        return 0
    roots = [("after", HERE.parent)] + ([("before", Path(args.before).resolve())] if args.before else [])
    failed = False
    print(f"load average before: {_load()}")
    print(f"{'keys':>9} {'code':>6} {'apply':>8} {'ops':>9} {'seconds':>8} {'ops/s':>9} {'buckets':>13} "
          f"{'after/before':>12}  steps")
    for keys in [int(k) for k in args.keys.split(",")]:
        reports = {}
        for label, root in roots:
            report = _run_child(root, keys, args)
            failed = failed or report is None
            if report is not None:
                reports[label] = report
        for label, report in reports.items():
            for index, result in enumerate(report["results"]):
                steps = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in result["phases"])
                buckets = (f"{result['touched']}/{result['buckets']} r{result['rewritten']}"
                           if result["buckets"] else "-")
                ratio = ""
                if label == "after" and "before" in reports:
                    ratio = f"{result['seconds'] / reports['before']['results'][index]['seconds']:.2f}"
                print(f"{keys:>9} {label:>6} {result['apply']:>8} {result['ops']:>9} {result['seconds']:>8.2f} "
                      f"{result['ops_per_s']:>9.0f} {buckets:>13} {ratio:>12}  {steps}")
            runs = report["results"]
            for rewrite in [r for r in runs if r["apply"].endswith("r")]:
                for small in [r for r in runs if r["apply"] == rewrite["apply"][:-1]]:
                    print(f"{'':>9} {label:>6} apply of {small['apply']} / full rewrite: "
                          f"{small['seconds']:.2f} / {rewrite['seconds']:.2f} s = "
                          f"{small['seconds'] / rewrite['seconds']:.3f}")
            peaks = report["peaks"]
            print(f"{'':>9} {label:>6} peak RSS MiB: driver {peaks['driver']:.0f}, JVM {peaks['jvm']:.0f}, "
                  f"largest Python worker {peaks['worker']:.0f}")
    print(f"load average after: {_load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
