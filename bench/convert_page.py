"""Typing one page of records: the column path against one ``pyarrow.array`` over the page (issue 21).

    python bench/convert_page.py [--records 1000] [--rounds 7] [--calls 200]
    valgrind --tool=callgrind python bench/convert_page.py --way N --calls 20   # instructions: way N only

The benchmark's records (``bench/api_server.py``, :data:`harness.RECORD_SCHEMA`), parsed by orjson as
the pipeline parses a page, typed four ways; each round runs every way ``--calls`` times in turn
(warm), and the best round's microseconds per page are printed:

* **column path**: ``RecordConverter.convert``, what the pipeline runs;
* **one conversion, unchecked**: ``pa.array(records, struct)`` over the data fields, dates and
  timestamps as text: no checks, no casts, no envelope (the 0.68 ms the issue's brief started from);
* **one conversion, exact**: the least a single conversion must add to give the column path's batch
  for every input: the Python type of every value at every depth (``set(map(type, ...))`` over the
  values ``dict.get`` and ``chain`` pull out, as the column path does), because pyarrow takes values
  the column path nulls or converts otherwise (see :func:`leniencies`); then the conversion, the casts
  of the timestamp texts as ``Parsed`` plans them, the finite check on doubles and the envelope;
* **one conversion, plain JSON only**: what it would cost if the caller promised that every value
  is a ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or ``None`` of exactly that type
  (what ``orjson.loads`` gives; transformations and custom components may give more): the census
  only of the fields with integers (``int64`` takes ``1.5`` as 1; ``decimal128(19, 0)``, which
  refuses floats, costs more than the census) or arrays (a string goes into a list of strings as
  its characters); a number column holding 0.0 or 1.0 (a boolean reads so) goes the column path.

``--way N`` (0 to 3, in the order above) runs only that way ``--calls`` times and prints nothing
else: under callgrind, its count less that of ``--calls 0`` is the instructions of that many pages,
which the load does not move.

Then the leniencies, each as what pyarrow made of a value the column path would null or convert
otherwise. See bench/README.md ("Sixth pass: one conversion per page").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from api_server import make_record
from harness import RECORD_SCHEMA

from framework.typed import RecordConverter
from framework.typed import arrow as a
from framework.typed import types as t
from framework.typed.columns import _plan_timestamps_utc
from framework.typed.converter import _meta
from framework.typed.raw_ids import random_uuids

NoneType = type(None)
_LEAF_KINDS: dict[type, set[type]] = {
    t.String: {str, NoneType}, t.Boolean: {bool, NoneType}, t.Integer: {int, NoneType},
    t.Number: {float, int, NoneType}, t.Date: {str, NoneType}, t.TimestampWithTz: {str, NoneType},
    t.TimestampWithoutTz: {str, NoneType},
}
_TEXT_KINDS = (t.Date, t.TimestampWithTz, t.TimestampWithoutTz)


def census(kind: t.FieldType, values: list) -> bool:
    """Whether every value, at every depth, has a Python type the column path takes as it is."""
    kinds = set(map(type, values))
    if isinstance(kind, t.Object):
        if not kinds <= {dict, NoneType}:
            return False
        rows = [value for value in values if value is not None] if NoneType in kinds else values
        return all(census(child, list(map(dict.get, rows, repeat(name)))) for name, child in kind.properties)
    if isinstance(kind, t.Array):
        if not kinds <= {list, NoneType}:
            return False
        lists = [value for value in values if value is not None] if NoneType in kinds else values
        return census(kind.items, list(chain.from_iterable(lists)))
    allowed = _LEAF_KINDS.get(type(kind))
    return allowed is not None and kinds <= allowed


def plain_census(kind: t.FieldType) -> bool:
    """Whether a field needs the census even when its values are plain JSON (integers, arrays)."""
    if isinstance(kind, t.Object):
        return any(plain_census(child) for _, child in kind.properties)
    return isinstance(kind, (t.Integer, t.Array))


def text_type(kind: t.FieldType) -> pa.DataType:
    """The Arrow type one conversion builds: dates and timestamps as text."""
    if isinstance(kind, t.Object):
        return pa.struct([pa.field(name, text_type(child)) for name, child in kind.properties])
    if isinstance(kind, t.Array):
        return pa.list_(pa.field("item", text_type(kind.items)))
    if isinstance(kind, _TEXT_KINDS):
        return pa.string()
    return a.arrow_type(kind)


class OneConversion:
    """A prototype of the single conversion (top-level scalars and containers of the benchmark's schema)."""

    def __init__(self, record_type: t.Object, stream: str, *, exact: bool):
        self.record_type, self.exact = record_type, exact
        self.schema = a.arrow_schema(record_type, stream)
        self.struct = pa.struct([pa.field(name, text_type(kind)) for name, kind in record_type.properties])
        self.fields = record_type.properties

    def convert(self, records: list[dict]) -> pa.RecordBatch | None:
        count = len(records)
        if set(map(type, records)) != {dict}:
            return None
        for name, kind in self.fields:
            if self.exact or plain_census(kind):
                if not census(kind, list(map(dict.get, records, repeat(name)))):
                    return None
        built = pa.array(records, self.struct)
        data = []
        for (_, kind), column in zip(self.fields, built.flatten()):
            if isinstance(kind, t.TimestampWithTz):
                if pc.any(pc.starts_with(column, "0000")).as_py():
                    return None
                plan = _plan_timestamps_utc(column)
                if plan is None:
                    return None
                for target in plan:
                    column = column.cast(target)
            elif isinstance(kind, t.Number):
                if pc.any(pc.invert(pc.is_finite(column))).as_py():
                    return None
                if not self.exact and pc.any(pc.is_in(column, pa.array([0.0, 1.0]))).as_py():
                    return None  # a boolean would read 0.0 or 1.0: look at the types
            data.append(column)
        envelope = [random_uuids(count), pa.repeat(pa.scalar(1, a.EXTRACTED_AT_TYPE), count),
                    pa.repeat(pa.scalar(1, pa.int64()), count), _meta(count, 1, {}, None)]
        return pa.RecordBatch.from_arrays(envelope + data, schema=self.schema)


def leniencies() -> list[tuple[str, str, str]]:
    """What ``pa.array`` makes of values the column path nulls or converts otherwise: (type, value, result)."""
    cases: list[tuple[pa.DataType, Any]] = [
        (pa.int64(), 1.5), (pa.float64(), True), (pa.list_(pa.string()), "ab"), (pa.list_(pa.string()), ("a",)),
        (pa.struct([pa.field("a", pa.string())]), ("x",)), (pa.string(), b"x"), (pa.string(), Text("x")),
        (pa.float64(), float("nan")),
    ]
    out = []
    for arrow_type, value in cases:
        try:
            result = repr(pa.array([value], arrow_type).to_pylist()[0])
        except (pa.ArrowException, TypeError, ValueError) as error:
            result = f"refused ({type(error).__name__})"
        out.append((str(arrow_type), repr(value), result))
    return out


class Text(str):
    """A subclass of ``str`` (the column path writes it as JSON text, quotes and all)."""


def best_microseconds(ways: dict[str, Callable[[], Any]], rounds: int, calls: int) -> dict[str, float]:
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(rounds):
        for name, way in ways.items():
            start = time.perf_counter()
            for _ in range(calls):
                way()
            best[name] = min(best[name], (time.perf_counter() - start) / calls * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Typing one page: the column path against one conversion.")
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--way", type=int, default=None, help="run only this way (0 to 3), --calls times")
    args = parser.parse_args(argv)
    records = orjson.loads(orjson.dumps([make_record(number) for number in range(1, args.records + 1)]))
    record_type = t.parse_schema(RECORD_SCHEMA, stream="records")
    assert isinstance(record_type, t.Object)
    converter = RecordConverter(record_type, stream="records")
    exact = OneConversion(record_type, "records", exact=True)
    plain = OneConversion(record_type, "records", exact=False)
    reference = converter.convert(records, extracted_at_ms=1, generation_id=1, sync_id=1)
    for prototype in (exact, plain):
        batch = prototype.convert(records)
        assert batch is not None
        for name in converter.schema.names[3:]:  # the raw ids are random
            assert batch.column(name).equals(reference.column(name)), name
    ways: dict[str, Callable[[], Any]] = {
        "column path (RecordConverter.convert)":
            lambda: converter.convert(records, extracted_at_ms=1, generation_id=1, sync_id=1),
        "one conversion, unchecked": lambda: pa.array(records, exact.struct),
        "one conversion, exact": lambda: exact.convert(records),
        "one conversion, plain JSON only": lambda: plain.convert(records),
    }
    if args.way is not None:
        way = list(ways.values())[args.way]
        for _ in range(args.calls):
            way()
        return 0
    best = best_microseconds(ways, args.rounds, args.calls)
    print(f"{args.records} records a page, best of {args.rounds} rounds of {args.calls} calls; "
          f"load {os.getloadavg()[0]:.2f}")
    base = best["column path (RecordConverter.convert)"]
    for name, micros in best.items():
        print(f"  {name:40} {micros:8.0f} us  {micros / base:5.2f}x")
    print("pyarrow takes (the column path nulls or converts otherwise):")
    for arrow_type, value, result in leniencies():
        print(f"  {value:12} into {arrow_type:28} -> {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
