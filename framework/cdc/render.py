"""Operations rendered a whole Arrow batch at a time: the vectorised twin of :mod:`.ops`.

The apply's Spark plan tells each joined row's operation (``I``, ``U``, ``D``)
and hands the rows to :class:`OpWriter` as Arrow batches: the operation, the
new values ``v0``... and the old values ``w0``.... Everything per row happens
in ``pyarrow.compute`` kernels: the triplets of :func:`.ops.derive`, the CSV
cells of :func:`~framework.formats.replicant.csv_cell`, JSON strings as
orjson writes them, the running ``mutId`` and operation counts. The bytes are
those of :func:`.ops.csv_line` and :func:`.ops.json_line` (the tests compare
them on random values); no Python code runs per row.

The parts of a line that do not change (the cursor around its ``mutId``, the
counts around their numbers, the table name, the field names) are rendered
once by the pure functions and split around sentinel numbers, so they cannot
drift from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from framework.cdc.ops import CursorInfo, OpCounts, csv_header
from framework.formats.replicant import csv_cell

# A null text, cut from an array: ``pa.scalar(None, ...)`` at import time would make pyarrow import pandas.
_NULL = pa.nulls(1, pa.string())[0]
_SENTINELS = (918273645546372819, 827364554637281918, 736455463728191827)
# orjson's escapes of the control characters (lower-case hex; the short forms where JSON has them)
_CONTROL = [(chr(c), orjson.dumps(chr(c)).decode()[1:-1]) for c in range(32)]
_CONTROL_CLASS = "[\x00-\x1f]"
_CSV_SPECIAL = '[,"\r\n]'


# ----------------------------------------------------------------- cells


def csv_cells(values: pa.Array) -> pa.Array:
    """:func:`csv_cell` of every value: ``NULL`` for null, quoted with doubled quotes when needed."""
    if values.null_count == len(values):
        return pa.repeat(pa.scalar("NULL"), len(values))
    quote = pc.or_(pc.or_(pc.equal(pc.binary_length(values), 0), pc.equal(values, "NULL")),
                   pc.match_substring_regex(values, _CSV_SPECIAL))
    if pc.any(quote).as_py():
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(values, '"', '""'), '"', "")
        values = pc.if_else(quote, quoted, values)
    return pc.fill_null(values, "NULL")


def json_strings(values: pa.Array, null: str = "null") -> pa.Array:
    """Every value as a JSON string literal, escaped as orjson escapes it; a null as the string ``null``."""
    if values.null_count == len(values):
        return pa.repeat(pa.scalar(orjson.dumps(null).decode()), len(values))
    escaped = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    if pc.any(pc.match_substring_regex(values, _CONTROL_CLASS)).as_py():
        for char, escape in _CONTROL:
            escaped = pc.replace_substring(escaped, char, escape)
    return pc.fill_null(pc.binary_join_element_wise('"', escaped, '"', ""), orjson.dumps(null).decode())


def json_key_texts(columns: Sequence[pa.Array], rows: int) -> pa.Array:
    """Each row's values as a JSON array of texts (``["10","a"]``, ``null`` for a null), as orjson writes it;
    ``""`` for every row when there are no columns."""
    if not columns:
        return pa.repeat(pa.scalar(""), rows)
    cells = [pc.if_else(pc.is_null(c), "null", json_strings(c)) for c in columns]
    return pc.binary_join_element_wise("[", *cells, "]", "") if len(cells) == 1 else pc.binary_join_element_wise(
        "[", pc.binary_join_element_wise(*cells, ","), "]", "")


def _split(text: str, count: int) -> list[str]:
    """``text`` cut around the first ``count`` sentinels, in order."""
    parts = []
    for sentinel in _SENTINELS[:count]:
        head, text = text.split(str(sentinel), 1)
        parts.append(head)
    parts.append(text)
    return parts


def _numbers(prefix_parts: list[str], numbers: Sequence[pa.Array]) -> pa.Array:
    """``parts[0] + n0 + parts[1] + n1 + ...`` per row."""
    pieces: list[Any] = [prefix_parts[0]]
    for part, number in zip(prefix_parts[1:], numbers):
        pieces.append(number.cast(pa.string()))
        pieces.append(part)
    return pc.binary_join_element_wise(*pieces, "")


def _joined_bytes(lines: pa.Array) -> bytes:
    """The values of a string array, one after the other."""
    if lines.offset == 0:
        end = pc.sum(pc.binary_length(lines)).as_py() or 0
        return lines.buffers()[2].to_pybytes()[:end] if end else b""
    return "".join(lines.to_pylist()).encode("utf-8")


# ----------------------------------------------------------------- triplets


def triplets(op: pa.Array, news: Sequence[pa.Array], olds: Sequence[pa.Array], keys: set[int],
             image: str) -> list[tuple[pa.Array, pa.Array, pa.Array]]:
    """The ``(new, old, exists)`` columns of every field, as :func:`.ops.derive` makes them (exists as text)."""
    is_i, is_u, is_d = pc.equal(op, "I"), pc.equal(op, "U"), pc.equal(op, "D")
    out = []
    for index, (new, old) in enumerate(zip(news, olds)):
        if image == "full":
            exists = pc.if_else(is_i, "1", pc.if_else(is_u, "3", "2"))
            out.append((pc.if_else(is_d, _NULL, new), pc.if_else(is_i, _NULL, old), exists))
        elif index in keys:
            out.append((pc.if_else(is_i, new, _NULL), pc.if_else(is_i, _NULL, old),
                        pc.if_else(is_i, "1", "2")))
        else:
            same = pc.if_else(pc.or_(pc.is_null(new), pc.is_null(old)),
                              pc.and_(pc.is_null(new), pc.is_null(old)), pc.equal(new, old))
            shown = pc.or_(is_i, pc.and_(is_u, pc.invert(same)))
            out.append((pc.if_else(shown, new, _NULL), pa.nulls(len(op), pa.string()), pc.if_else(shown, "1", "0")))
    return out


# ----------------------------------------------------------------- the writer's lines


class OpLines:
    """Renders one partition's operations, batch after batch, with running ``mutId`` and counts.

    ``start`` is the counts of the partitions before this one; ``mut_id`` the
    last ``mutId`` given out before this partition's first operation.
    """

    def __init__(self, *, fields: Sequence[str], keys: set[int], image: str, as_csv: bool, table: dict[str, Any],
                 cursor: CursorInfo, part: int, start: OpCounts, mut_id: int):
        self.fields, self.keys, self.image, self.as_csv = tuple(fields), keys, image, as_csv
        self.counts = OpCounts(start.inserts, start.updates, start.deletes)
        self.mut_id = mut_id
        cursor_text = cursor.as_json(_SENTINELS[0], part)
        counts_text = OpCounts(*_SENTINELS).as_json()
        if as_csv:
            self._cursor = _split(csv_cell(cursor_text), 1)
            self._counts = _split(csv_cell(counts_text), 3)
        else:
            self._cursor = _split(orjson.dumps(cursor_text).decode(), 1)
            self._counts = _split(orjson.dumps(counts_text).decode(), 3)
            self._head = '{"tableName":' + orjson.dumps(table).decode() + ',"opType":"'
            self._keys = [orjson.dumps(name).decode() + ":" for name in self.fields]

    def header(self) -> bytes:
        return csv_header(self.fields).encode("utf-8")

    def render(self, op: pa.Array, news: Sequence[pa.Array], olds: Sequence[pa.Array]) -> bytes:
        """The lines of a batch of operations (``op`` never null), each ending with a line break."""
        rows = len(op)
        if not rows:
            return b""
        ones = pa.repeat(pa.scalar(1, pa.int64()), rows)
        mut = pc.cumulative_sum(ones, start=self.mut_id)
        counted = []
        for kind, before in (("I", self.counts.inserts), ("U", self.counts.updates), ("D", self.counts.deletes)):
            counted.append(pc.cumulative_sum(pc.equal(op, kind).cast(pa.int64()), start=before))
        cursor = _numbers(self._cursor, [mut])
        counts = _numbers(self._counts, counted)
        found = triplets(op, news, olds, self.keys, self.image)
        if self.as_csv:
            cells: list[Any] = []
            for new, old, exists in found:
                cells += [csv_cells(new), csv_cells(old), exists]
            lines = pc.binary_join_element_wise(*cells, op, cursor, counts, ",")
            lines = pc.binary_join_element_wise(lines, "\n", "")
        else:
            pieces: list[Any] = [self._head, op, '","cursor":', cursor, ',"before":{']
            for section, column in (("before", 1), ("after", 0)):
                for index, (name, values) in enumerate(zip(self._keys, found)):
                    pieces += [("," if index else "") + name, json_strings(values[column])]
                pieces.append('},"after":{' if section == "before" else '},"exists":{')
            for index, (name, values) in enumerate(zip(self._keys, found)):
                pieces += [("," if index else "") + name + '"', values[2], '"']
            pieces += ['},"operationcount":', counts, "}\n"]
            lines = pc.binary_join_element_wise(*pieces, "")
        self.mut_id += rows
        self.counts = OpCounts(*(c[-1].as_py() for c in counted))
        return _joined_bytes(lines)


__all__ = ["OpLines", "csv_cells", "json_key_texts", "json_strings", "triplets"]
