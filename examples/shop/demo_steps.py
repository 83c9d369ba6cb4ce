"""The demo's small steps that are easier in Python than in bash (examples/demo.sh runs them).

``python examples/shop/demo_steps.py advance URL --save FILE``
    asks the shop API for new data (``POST /_admin/advance``), says what it
    added and keeps its answer in FILE for ``compare``.
``python examples/shop/demo_steps.py stats URL``
    how many requests the API served and how many it throttled with ``429``.
``python examples/shop/demo_steps.py files DIR``
    the files of each stream under the output DIR, and a line that reads them.
``python examples/shop/demo_steps.py compare DIR [--expected FILE]``
    rows per sync in each stream's files, and what the last sync read: new
    records, changed ones, and ones read again unchanged; with ``--expected``
    (the ``advance`` answer), whether that is what the API added.
"""

from __future__ import annotations

import argparse
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

#: The streams of the shop connector and the field each is synced incrementally on.
CURSORS = {"accounts": "updated_at", "orders": "updated_at", "events": "occurred_at"}


def _call(url: str, method: str = "GET") -> Any:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        return orjson.loads(response.read())


def advance(url: str, save: str | None) -> int:
    added = _call(f"{url.rstrip('/')}/_admin/advance", "POST")
    if save:
        Path(save).write_bytes(orjson.dumps(added))
    accounts, orders, events = added["accounts"], added["orders"], added["events"]
    print(f"The API now has, dated up to {added['now']}: {accounts['new']} new accounts "
          f"({accounts['changed']} existing ones changed), {orders['new']} new orders "
          f"({orders['changed']} existing ones changed status), {events['new']} new events "
          f"({events['heartbeats']} of them heartbeats, which the connector skips).")
    return 0


def stats(url: str) -> int:
    found = _call(f"{url.rstrip('/')}/_admin/stats")
    throttled = found["throttled"]
    print(f"The API served {found['requests']} requests; "
          + (f"{throttled} got 429 (rate limited) and were retried after the Retry-After the API asked for."
             if throttled else "none went over the rate limit (429)."))
    return 0


def _parquet_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))


def files(output: str) -> int:
    root = Path(output)
    for stream in CURSORS:
        found = _parquet_files(root / stream)
        size = sum(p.stat().st_size for p in found)
        print(f"  {root / stream}/  {len(found)} Parquet file(s), {size:,} bytes")
    print(f"  {root / '_airbyte_state' / 'state.json'}  the state the next sync starts from")
    return 0


@dataclass(frozen=True)
class Counts:
    """What the last sync of a stream read, compared with the syncs before it."""

    per_sync: dict[int, int]
    new: int
    changed: int
    again: int


def count(output: str, stream: str) -> Counts:
    """Rows per sync id in a stream's files, and the last sync's rows split into records not seen
    before (new), seen with another cursor value (changed) and seen with the same one (again)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(Path(output) / stream, columns=["_airbyte_meta", "id", CURSORS[stream]])
    syncs = pc.struct_field(table["_airbyte_meta"], "sync_id").to_pylist()
    ids = table["id"].to_pylist()
    values = table[CURSORS[stream]].to_pylist()
    per_sync: dict[int, int] = {}
    for sync in syncs:
        per_sync[sync] = per_sync.get(sync, 0) + 1
    last = max(per_sync) if per_sync else 0
    seen: dict[Any, set] = {}
    for sync, key, value in zip(syncs, ids, values):
        if sync != last:
            seen.setdefault(key, set()).add(value)
    new = changed = again = 0
    for sync, key, value in zip(syncs, ids, values):
        if sync != last:
            continue
        if key not in seen:
            new += 1
        elif value in seen[key]:
            again += 1
        else:
            changed += 1
    return Counts(dict(sorted(per_sync.items())), new, changed, again)


def compare(output: str, expected_file: str | None) -> int:
    expected = orjson.loads(Path(expected_file).read_bytes()) if expected_file else None
    counted = {stream: count(output, stream) for stream in CURSORS}
    syncs = sorted({s for c in counted.values() for s in c.per_sync})
    header = ["stream", *(f"sync {s}" for s in syncs), "new", "changed", "read again"]
    rows = [header]
    for stream, c in counted.items():
        rows.append([stream, *(str(c.per_sync.get(s, 0)) for s in syncs), str(c.new), str(c.changed),
                     str(c.again)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"  (the last three columns describe sync {syncs[-1] if syncs else '-'}; \"read again\" counts records "
          "whose cursor equals the saved state:\n   a window starts at the saved value, inclusive, so records "
          "written in the same second are not missed)")
    if expected is None:
        return 0
    wanted = {"accounts": (expected["accounts"]["new"], expected["accounts"]["changed"]),
              "orders": (expected["orders"]["new"], expected["orders"]["changed"]),
              "events": (expected["events"]["new"] - expected["events"]["heartbeats"], 0)}
    wrong = [f"{stream}: read {c.new} new and {c.changed} changed, the API added {wanted[stream][0]} and changed "
             f"{wanted[stream][1]}" for stream, c in counted.items() if (c.new, c.changed) != wanted[stream]]
    if wrong:
        print("The incremental sync did not read exactly what the API added:\n  " + "\n  ".join(wrong))
        return 1
    print("The incremental sync read exactly the records the API added or changed (plus the re-read boundary).")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Steps of the shop demo (examples/demo.sh).")
    commands = parser.add_subparsers(dest="command", required=True)
    step = commands.add_parser("advance", help="ask the API for new data")
    step.add_argument("url")
    step.add_argument("--save", metavar="FILE", help="keep the API's answer here (for compare --expected)")
    commands.add_parser("stats", help="requests served and throttled").add_argument("url")
    commands.add_parser("files", help="the files of each stream").add_argument("output")
    step = commands.add_parser("compare", help="rows per sync, and what the last sync read")
    step.add_argument("output")
    step.add_argument("--expected", metavar="FILE", help="the answer `advance --save` kept")
    args = parser.parse_args(argv)
    if args.command == "advance":
        return advance(args.url, args.save)
    if args.command == "stats":
        return stats(args.url)
    if args.command == "files":
        return files(args.output)
    return compare(args.output, args.expected)


if __name__ == "__main__":
    sys.exit(main())
