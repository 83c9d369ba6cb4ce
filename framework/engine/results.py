"""What reading a unit came to, and folding that into the stream's sync.

A unit read elsewhere (a Spark task) answers with a :class:`UnitResult`: how
many records and pages it read, how many values typing nulled, the latest
cursor value, why it failed, what its first pages showed that looks wrong
(:mod:`framework.engine.signals`), and (on its task's first result) the files
its task wrote. :func:`to_arrow` and :func:`from_arrow` are its one Arrow form
(:data:`RESULT_SCHEMA`, what ``mapInArrow`` answers with);
:func:`failed_group` is the answer for a group that failed as a whole; and
:func:`fold_results` takes a group's results into the :class:`StreamSync`
(``observe`` and ``done`` of every unit that succeeded).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
from msgspec import Struct
from msgspec.structs import asdict

from framework.engine.signals import Signal
from framework.typed.drift import merge_evolved

if TYPE_CHECKING:
    from framework.engine.plan import Sync

__all__ = ["RESULT_SCHEMA", "GroupTotals", "UnitResult", "failed_group", "fold_results", "from_arrow", "to_arrow"]

RESULT_SCHEMA = pa.schema([
    ("unit", pa.int64()),
    ("records", pa.int64()),
    ("latest", pa.string()),  # the latest cursor value read in the unit: an ISO instant, or an integer's digits
    ("error", pa.string()),
    ("files", pa.string()),  # JSON list of written files (a task's first row), else null
    ("nulled", pa.int64()),
    ("pages", pa.int64()),
    ("latest_record", pa.string()),  # JSON of the unit's most recent record (a stream airbyte-cdk reads)
    ("warnings", pa.string()),  # JSON list of the signals its first pages showed (engine/signals.py), else null
    ("empty_pages", pa.int64()),  # responses that gave no record
    # JSON {"records", "fields", "evolved"} of the fields its records had that the schema does not declare
    # (typed/drift.py), else null
    ("drift", pa.string()),
])


class UnitResult(Struct, frozen=True):
    """One unit read: ``unit`` is its index in the plan; ``error`` (masked) says it is not done.

    ``latest`` is the latest cursor value read in the unit, or for a stream
    airbyte-cdk reads, the unit's most recent record (which Airbyte's cursor reads).
    """

    unit: int
    records: int = 0
    pages: int = 0
    nulled: int = 0
    latest: datetime | int | Mapping[str, Any] | None = None
    error: str | None = None
    files: tuple[dict[str, Any], ...] = ()
    warnings: tuple[Signal, ...] = ()  # what its first pages showed that looks wrong (engine/signals.py)
    empty_pages: int = 0  # responses that gave no record (not counted in ``pages``)
    #: schema drift: how many records had fields the schema does not declare, how many values each field
    #: had (by path), and the columns the ``evolve`` policy typed them as so far (name, kind; in order)
    drifted: int = 0
    undeclared: Mapping[str, int] = {}
    evolved: tuple[tuple[str, str], ...] = ()


def to_arrow(results: Sequence[UnitResult]) -> pa.RecordBatch:
    """``results`` as one batch of :data:`RESULT_SCHEMA`."""
    return pa.RecordBatch.from_pydict({
        "unit": [r.unit for r in results],
        "records": [r.records for r in results],
        "latest": [_latest_text(r.latest) for r in results],
        "error": [r.error for r in results],
        "files": [orjson.dumps(r.files).decode() if r.files else None for r in results],
        "nulled": [r.nulled for r in results],
        "pages": [r.pages for r in results],
        "latest_record": [orjson.dumps(r.latest).decode() if isinstance(r.latest, Mapping) else None
                          for r in results],
        "warnings": [orjson.dumps([asdict(w) for w in r.warnings]).decode() if r.warnings else None
                     for r in results],
        "empty_pages": [r.empty_pages for r in results],
        "drift": [_drift_text(r) for r in results],
    }, schema=RESULT_SCHEMA)


def _drift_text(result: UnitResult) -> str | None:
    if not result.drifted and not result.undeclared and not result.evolved:
        return None
    return orjson.dumps({"records": result.drifted, "fields": result.undeclared,
                         "evolved": result.evolved}).decode()


def _drift_fields(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    data = orjson.loads(text)
    return {"drifted": int(data.get("records") or 0), "undeclared": dict(data.get("fields") or {}),
            "evolved": tuple((str(name), str(kind)) for name, kind in data.get("evolved") or ())}


def from_arrow(data: pa.Table | pa.RecordBatch) -> list[UnitResult]:
    """The results in ``data`` (rows of :data:`RESULT_SCHEMA`), in its order."""
    return [UnitResult(unit=row["unit"], records=row["records"], pages=row["pages"], nulled=row["nulled"],
                       latest=_latest_value(row["latest"]) if row["latest"] else
                       orjson.loads(row["latest_record"]) if row["latest_record"] else None,
                       error=row["error"], files=tuple(orjson.loads(row["files"])) if row["files"] else (),
                       warnings=tuple(Signal(**w) for w in orjson.loads(row["warnings"])) if row.get("warnings")
                       else (), empty_pages=row.get("empty_pages") or 0, **_drift_fields(row.get("drift")))
            for row in data.to_pylist()]


def _latest_text(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):  # an IncrementingCountCursor's value
        return str(value)
    return None


def _latest_value(text: str) -> datetime | int:
    """The value :func:`_latest_text` wrote: an ISO instant always holds a ``-`` after its year, digits never."""
    return int(text) if text.lstrip("-").isdigit() else datetime.fromisoformat(text)


def failed_group(units: Iterable[Any], message: str) -> list[UnitResult]:
    """The results of a group that failed as a whole (its task raised, its executor died): ``message`` for each."""
    return [UnitResult(unit.index, error=message) for unit in units]


class GroupTotals(Struct, frozen=True):
    """What a group's results added up to: the units that finished, their counts, every file, the first error."""

    units_done: int = 0
    records: int = 0
    pages: int = 0
    nulled: int = 0
    files: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    warnings: tuple[Signal, ...] = ()  # the first signal of each kind, in unit order
    empty_pages: int = 0
    drifted: int = 0  # records with fields the schema does not declare
    undeclared: Mapping[str, int] = {}  # values by undeclared field's path
    evolved: tuple[tuple[str, str], ...] = ()  # the columns the evolve policy typed, merged (typed/drift.py)


def fold_results(sync: Sync, results: Iterable[UnitResult]) -> GroupTotals:
    """Take a finished group's ``results`` into ``sync`` (its units handed out already): each unit that
    succeeded is observed and done.

    In unit order, so state moves as the units were planned. A failed unit is
    left unfinished; the first error (in unit order) is in the totals. A unit
    done already (a result given twice) counts once.
    """
    done = records = pages = nulled = empty = drifted = 0
    undeclared: dict[str, int] = {}
    evolved: tuple[tuple[str, str], ...] = ()
    files: list[dict[str, Any]] = []
    error: str | None = None
    warnings: dict[str, Signal] = {}
    for result in sorted(results, key=lambda r: r.unit):
        files.extend(result.files)
        for signal in result.warnings:
            warnings.setdefault(signal.kind, signal)
        empty += result.empty_pages
        if result.error:
            error = error or result.error
            continue
        unit = sync.unit(result.unit)
        if unit is None:
            continue
        sync.observe(unit, result.latest, result.records)
        sync.done(unit)
        done += 1
        records += result.records
        pages += result.pages
        nulled += result.nulled
        drifted += result.drifted
        for path, count in result.undeclared.items():
            undeclared[path] = undeclared.get(path, 0) + count
        evolved = merge_evolved(evolved, result.evolved)
    return GroupTotals(done, records, pages, nulled, tuple(files), error, tuple(warnings.values()), empty,
                       drifted, undeclared, evolved)
