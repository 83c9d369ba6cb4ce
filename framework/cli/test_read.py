"""``run-manifest MANIFEST --config CONFIG.json --test-read``: the first pages of each stream, shown.

For each selected stream: the unit read (partition, window), each request
with its status, content type and size, the records of each page, a few
records in full, and every :class:`~framework.engine.signals.Signal` with its
fix. Nothing is written, no state is saved, Spark never starts. Exit 0 when
nothing looks wrong, 1 when a stream failed or a check found something.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import orjson

from framework.engine.test_read import Exchange, StreamTestRead

if TYPE_CHECKING:
    from framework.components.http.in_flight import Limit

_RECORD_WIDTH = 160


def _exchange(exchange: Exchange) -> str:
    if exchange.status is None:
        return f"    {exchange.request} -> failed: {exchange.error}"
    kind = exchange.content_type.split(";")[0].strip() or "no content type"
    return f"    {exchange.request} -> {exchange.status} {kind}, {exchange.size:,} bytes"


def _record(record: dict) -> str:
    try:
        text = orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # an integer beyond 64 bits
        text = json.dumps(record, default=str)
    return text if len(text) <= _RECORD_WIDTH else text[: _RECORD_WIDTH - 1] + "…"


def show(reads: Sequence[StreamTestRead], out: IO[str], *, records: int = 3, limit: Limit | None = None) -> int:
    """Print the test reads; the exit code (0: nothing found, 1: a failure or a signal). ``limit``: the requests
    a sync keeps in flight, said at the end (the test read itself sends one at a time)."""
    problems = 0
    for seen in reads:
        print(f"{seen.name}: {seen.unit or 'nothing to read (no units planned)'}", file=out)
        if seen.planning:
            print(f"  planning made {len(seen.planning)} request(s), first: {seen.planning[0].request}", file=out)
        for page in seen.pages:
            print(f"  page {page.number}: {len(page.records)} records", file=out)
            for exchange in page.exchanges:
                print(_exchange(exchange), file=out)
        if seen.pages:
            more = " (more pages follow)" if seen.more_pages else " (the last page)"
            print(f"  {len(seen.records)} records in {len(seen.pages)} page(s){more}", file=out)
            for record in seen.records[:records]:
                print(f"    {_record(record)}", file=out)
        if seen.error:
            problems += 1
            print(f"  ! failed: {seen.error}", file=out)
        for signal in seen.signals:
            problems += 1
            print(f"  ! {signal.message}\n    fix: {signal.fix}", file=out)
        if not seen.error and not seen.signals:
            print("  ok: nothing looks wrong in these pages", file=out)
        print(file=out)
    found = sum(1 for seen in reads if seen.error or seen.signals)
    print(f"test read: {len(reads)} stream(s), {found} with something to look at" if found
          else f"test read: {len(reads)} stream(s), nothing looks wrong", file=out)
    if limit is not None:
        print(f"requests in flight: one at a time here; a sync keeps at most {limit.describe()}", file=out)
    return 1 if problems else 0


__all__ = ["show"]
