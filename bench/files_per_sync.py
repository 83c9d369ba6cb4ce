"""How many files does a sync leave in each stream's folder, without and with --compact?

    python bench/files_per_sync.py [--syncs 3] [--streams accounts,orders,events]

Starts the example shop API (examples/shop/api.py, its own process, no rate
limit; its data ends now, as the manifest's 60 days of history want) and runs ``run-manifest examples/shop/manifest.yaml
--output DIR`` ``--syncs`` times into one folder and ``run-manifest ...
--compact`` as often into another, asking the API for new data
(``POST /_admin/advance``) between two syncs. After each sync it counts each
stream's Parquet files and records (the records must match between the two
folders) and prints one aligned table: per stream and sync, the files in the
folder without and with ``--compact``, and the records. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from harness import REPO, aligned, run_manifest_command

SHOP = REPO / "examples" / "shop"


def start_api() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(SHOP / "api.py"), "--port", "0", "--rate-limit", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"examples/shop/api.py did not start (it printed {line!r})")
    return process, line.split("listening on ", 1)[1].split()[0]


def counts(root: Path, stream: str) -> tuple[int, int]:
    """Files and records of a stream's folder."""
    import pyarrow.parquet as pq

    files = sorted((root / stream).glob("*.parquet"))
    return len(files), sum(pq.read_metadata(f).num_rows for f in files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--syncs", type=int, default=3)
    parser.add_argument("--streams", default="accounts,orders,events")
    args = parser.parse_args()
    streams = args.streams.split(",")
    command = run_manifest_command()
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    process, url = start_api()
    rows: list[list[str]] = []
    try:
        with tempfile.TemporaryDirectory() as work:
            config = Path(work) / "config.json"
            config.write_text(json.dumps({**json.loads((SHOP / "config.json").read_text()), "base_url": url}))
            plain, compacted = Path(work) / "plain", Path(work) / "compacted"
            for number in range(1, args.syncs + 1):
                for out, more in ((plain, []), (compacted, ["--compact"])):
                    done = subprocess.run([*command, str(SHOP / "manifest.yaml"), "--config", str(config),
                                           "--output", str(out), "--streams", args.streams, "--quiet", *more],
                                          env=env, capture_output=True, text=True)
                    if done.returncode != 0:
                        print(done.stderr, file=sys.stderr)
                        return 1
                for stream in streams:
                    (files, records), (merged, same) = counts(plain, stream), counts(compacted, stream)
                    if records != same:
                        print(f"{stream}: {records} records without --compact, {same} with", file=sys.stderr)
                        return 1
                    rows.append([f"{stream}, sync {number}", str(files), str(merged), str(records)])
                urllib.request.urlopen(urllib.request.Request(f"{url}/_admin/advance", method="POST")).read()
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(aligned(["stream", "files in folder", "with --compact", "records"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
