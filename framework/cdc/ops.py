"""One change of a row, derived and rendered: pure functions, no Spark.

:func:`derive` compares the new values of a key (or None when the key is gone
from a full snapshot) with its previous image (or None for a new key) and
gives the :class:`Change`: ``I`` for a new key, ``U`` for changed values, ``D``
for a deleted record or a key gone; None when nothing changed. Values are the
Replicant texts of :func:`framework.formats.replicant.render_column`, so
"changed" means "renders differently".

A change carries one triplet per field, ``(new, old, exists)``:

========  ==============================================  =========================
image     changes (default, as the seed's examples)       full
========  ==============================================  =========================
``I``     every field new (1)                             every field new (1)
``U``     changed fields new (1), key fields old (2),     every field new and
          the others absent (0)                           old (3)
``D``     key fields old (2), the others absent (0)       every field old (2)
========  ==============================================  =========================

:func:`csv_line` and :func:`json_line` render a change with its cursor and
running operation counts (:class:`OpCounts`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

import orjson
from msgspec import Struct

from framework.formats.replicant import csv_cell

Text = str | None
OpType = Literal["I", "U", "D"]


class Change(Struct, frozen=True):
    """One DML operation: its type and a ``(new, old, exists)`` triplet per field."""

    op: OpType
    triplets: tuple[tuple[Text, Text, int], ...]


def derive(new: Sequence[Text] | None, old: Sequence[Text] | None, *, deleted: bool, keys: Collection[int],
           image: str = "changes") -> Change | None:
    """The change from ``old`` (the image, None for a new key) to ``new`` (None for a key gone).

    ``deleted`` says the new record is marked deleted. ``keys`` are the
    positions of the primary key fields.
    """
    if new is None or deleted:
        if old is None:
            return None
        if image == "full":
            return Change("D", tuple((None, value, 2) for value in old))
        return Change("D", tuple((None, value, 2) if i in keys else (None, None, 0) for i, value in enumerate(old)))
    if old is None:
        return Change("I", tuple((value, None, 1) for value in new))
    if tuple(new) == tuple(old):
        return None
    if image == "full":
        return Change("U", tuple((n, o, 3) for n, o in zip(new, old)))
    return Change("U", tuple((None, o, 2) if i in keys else (n, None, 1) if n != o else (None, None, 0)
                             for i, (n, o) in enumerate(zip(new, old))))


class OpCounts(Struct):
    """Operations so far, by type (``replaceCount`` is always 0: an API has no replace)."""

    inserts: int = 0
    updates: int = 0
    deletes: int = 0

    def add(self, op: str) -> None:
        if op == "I":
            self.inserts += 1
        elif op == "U":
            self.updates += 1
        else:
            self.deletes += 1

    @property
    def total(self) -> int:
        return self.inserts + self.updates + self.deletes

    def plus(self, other: OpCounts) -> OpCounts:
        return OpCounts(self.inserts + other.inserts, self.updates + other.updates, self.deletes + other.deletes)

    def as_json(self) -> str:
        return (f'{{"insertCount":{self.inserts},"updateCount":{self.updates},'
                f'"deleteCount":{self.deletes},"replaceCount":0}}')


class CursorInfo(Struct, frozen=True):
    """What every change's cursor shares within one apply; ``mut_id`` and ``part`` vary per change."""

    timestamp_ms: int
    extraction_ms: int
    sync_id: int
    extractor_id: int = 0
    node_id: str = "node1"
    version: int = 2

    def as_json(self, mut_id: int, part: int) -> str:
        return orjson.dumps({
            "extractorId": self.extractor_id, "nodeID": self.node_id, "timestamp": self.timestamp_ms,
            "extractionTimestamp": self.extraction_ms, "dscId": self.sync_id, "mutId": mut_id, "partNum": part,
            "v": self.version,
        }).decode()


def csv_header(fields: Sequence[str]) -> str:
    """The header line of a realtime CSV file."""
    names = [f"{f}_{part}" for f in fields for part in ("New_Val", "Old_Val", "Exists_Val")]
    return ",".join(map(csv_cell, names + ["opType", "cursor", "operationcount"])) + "\n"


def csv_line(change: Change, cursor: str, counts: str) -> str:
    """A realtime CSV line: the triplets, the operation type, the cursor and the counts."""
    cells = []
    for new, old, exists in change.triplets:
        cells.append(csv_cell(new))
        cells.append(csv_cell(old))
        cells.append(str(exists))
    cells.append(change.op)
    cells.append(csv_cell(cursor))
    cells.append(csv_cell(counts))
    return ",".join(cells) + "\n"


def json_line(change: Change, fields: Sequence[str], table: dict[str, Any], cursor: str, counts: str) -> bytes:
    """A realtime JSON line: one object, values as strings, ``"null"`` where there is none."""
    before, after, exists = {}, {}, {}
    for name, (new, old, flag) in zip(fields, change.triplets):
        before[name] = "null" if old is None else old
        after[name] = "null" if new is None else new
        exists[name] = str(flag)
    return orjson.dumps({"tableName": table, "opType": change.op, "cursor": cursor, "before": before,
                         "after": after, "exists": exists, "operationcount": counts}) + b"\n"


__all__ = ["Change", "CursorInfo", "OpCounts", "csv_header", "csv_line", "derive", "json_line"]
