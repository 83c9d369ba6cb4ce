"""The vectorised renderer writes the bytes of the pure per-change functions (no Spark)."""

from __future__ import annotations

import orjson
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.cdc.ops import CursorInfo, OpCounts, csv_line, derive, json_line
from framework.cdc.render import OpLines, csv_cells, json_key_texts, json_strings
from framework.formats.replicant import csv_cell, table_name

FIELDS = ("r_regionkey", "r_comment", "na\"me")
# texts with everything that needs escaping or quoting: commas, quotes, backslashes, control characters, NULL
texts = st.one_of(st.none(), st.sampled_from(["", "NULL", "null", "a,b", 'say "hi"', "x\r\ny", "\\", "\x01\x1f"]),
                  st.text(max_size=6))
rows_of = st.lists(st.tuples(st.sampled_from("IUD"), st.tuples(texts, texts, texts), st.tuples(texts, texts, texts)),
                   max_size=12)


@given(st.lists(texts, max_size=20))
def test_cells_and_json_strings_match_the_per_value_functions(values):
    array = pa.array(values, pa.string())
    assert csv_cells(array).to_pylist() == [csv_cell(v) for v in values]
    assert json_strings(array).to_pylist() == [orjson.dumps("null" if v is None else v).decode() for v in values]
    assert json_key_texts([array, array], len(values)).to_pylist() == [orjson.dumps([v, v]).decode()
                                                                        for v in values]


def _expected(rows, keys, image, as_csv, table, cursor, start, mut_id, part):
    counts = OpCounts(start.inserts, start.updates, start.deletes)
    out = []
    for op, new, old in rows:
        if op == "I":
            change = derive(new, None, deleted=False, keys=keys, image=image)
        elif op == "D":
            change = derive(None, old, deleted=False, keys=keys, image=image)
        else:
            change = derive(new, old, deleted=False, keys=keys, image=image)
            if change is None:  # the plan never sends an unchanged row; render it as the derivation would
                continue
        counts.add(op)
        mut_id += 1
        text = cursor.as_json(mut_id, part)
        out.append(csv_line(change, text, counts.as_json()).encode() if as_csv
                   else json_line(change, FIELDS, table, text, counts.as_json()))
    return b"".join(out)


@settings(max_examples=150)
@given(rows_of, rows_of, st.sampled_from(["changes", "full"]), st.booleans(), st.sampled_from([{0}, {0, 2}]))
def test_batches_render_the_bytes_of_csv_line_and_json_line(first, second, image, as_csv, keys):
    table = table_name(None, "io_blitzz", "region")
    cursor = CursorInfo(1620787841959, 1620787841959, 7)
    start = OpCounts(3, 2, 1)
    lines = OpLines(fields=FIELDS, keys=keys, image=image, as_csv=as_csv, table=table, cursor=cursor, part=1,
                    start=start, mut_id=40)
    got = b""
    rows_in = []
    for rows in (first, second):
        rows = [(op, new, old) for op, new, old in rows
                if op != "U" or derive(new, old, deleted=False, keys=keys, image=image) is not None]
        rows_in += rows
        op = pa.array([r[0] for r in rows], pa.string())
        news = [pa.array([r[1][i] for r in rows], pa.string()) for i in range(3)]
        olds = [pa.array([r[2][i] for r in rows], pa.string()) for i in range(3)]
        got += lines.render(op, news, olds)
    assert got == _expected(rows_in, keys, image, as_csv, table, cursor, start, 40, 1)
    assert lines.mut_id == 40 + len(rows_in)


def test_the_seeds_update_line_in_csv():
    lines = OpLines(fields=("r_comment", "r_name", "r_regionkey"), keys={2}, image="changes", as_csv=True,
                    table={}, cursor=CursorInfo(1620787852116, 1620787852116, 2), part=0, start=OpCounts(),
                    mut_id=2)
    text = lines.render(pa.array(["U"]), [pa.array(["USA"]), pa.array(["India"]), pa.array(["10"])],
                        [pa.array(["India"]), pa.array(["India"]), pa.array(["10"])])
    assert text == (b'USA,NULL,1,NULL,NULL,0,NULL,10,2,U,"{""extractorId"":0,""nodeID"":""node1"",""timestamp"":'
                    b'1620787852116,""extractionTimestamp"":1620787852116,""dscId"":2,""mutId"":3,""partNum"":0,'
                    b'""v"":2}","{""insertCount"":0,""updateCount"":1,""deleteCount"":0,""replaceCount"":0}"\n')
