"""Pure tests of the change-data pieces: Java hashes, CSV cells, op derivation and rendering (no Spark)."""

from __future__ import annotations

import csv
import io
import json

from hypothesis import given
from hypothesis import strategies as st

from framework.cdc.ops import (
    Change,
    CursorInfo,
    OpCounts,
    csv_header,
    csv_line,
    derive,
    json_line,
)
from framework.formats.replicant import (
    csv_cell,
    java_objects_hash,
    java_string_hash,
    table_name,
)

FIELDS = ("r_regionkey", "r_comment", "r_name")
KEY = {0}
texts = st.one_of(st.none(), st.text(max_size=8))


# ------------------------------------------------------------------------------------ Java hashes


def test_the_seeds_table_hashes():
    assert table_name(None, "io_blitzz", "region") == {
        "namespace": {"catalog": None, "schema": "io_blitzz", "hash": 696406511}, "name": "region",
        "hash": -821029210}


def test_java_string_hash_known_values():
    # values Java prints for "".hashCode(), "a".hashCode(), "hello".hashCode(), and with overflow
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001F600") == java_objects_hash(0xD83D, 0xDE00) - 31 * 31  # two UTF-16 units


@given(st.lists(st.one_of(st.none(), st.integers(-2 ** 31, 2 ** 31 - 1)), max_size=6))
def test_objects_hash_is_31_based_and_stays_in_32_bits(values):
    expected = 1
    for value in values:
        expected = (31 * expected + (value or 0)) % 2 ** 32
    expected = expected - 2 ** 32 if expected >= 2 ** 31 else expected
    assert java_objects_hash(*values) == expected


# ------------------------------------------------------------------------------------ CSV cells


@given(st.lists(texts, min_size=1, max_size=6))
def test_csv_cells_round_trip_through_pythons_csv_reader(cells):
    line = ",".join(map(csv_cell, cells)) + "\n"
    [row] = list(csv.reader(io.StringIO(line, newline="")))
    assert row == ["NULL" if cell is None else cell for cell in cells]


@given(st.text(max_size=8))
def test_only_a_null_value_is_written_as_bare_null(text):
    assert csv_cell(text) != "NULL"
    assert csv_cell(None) == "NULL"


# ------------------------------------------------------------------------------------ derivation


def test_insert_update_delete_as_the_seeds_examples():
    insert = derive(("10", "India", "India"), None, deleted=False, keys=KEY)
    assert insert == Change("I", (("10", None, 1), ("India", None, 1), ("India", None, 1)))
    update = derive(("10", "USA", "India"), ("10", "India", "India"), deleted=False, keys=KEY)
    assert update == Change("U", ((None, "10", 2), ("USA", None, 1), (None, None, 0)))
    delete = derive(None, ("10", "USA", "India"), deleted=False, keys=KEY)
    assert delete == Change("D", ((None, "10", 2), (None, None, 0), (None, None, 0)))
    marked = derive(("10", "USA", "India"), ("10", "USA", "India"), deleted=True, keys=KEY)
    assert marked == delete


def test_full_image():
    update = derive(("10", "USA", None), ("10", "India", None), deleted=False, keys=KEY, image="full")
    assert update == Change("U", (("10", "10", 3), ("USA", "India", 3), (None, None, 3)))
    delete = derive(None, ("10", "USA", None), deleted=False, keys=KEY, image="full")
    assert delete == Change("D", ((None, "10", 2), (None, "USA", 2), (None, None, 2)))


def test_no_change_and_nothing_to_delete_give_no_operation():
    assert derive(("1", "a", None), ("1", "a", None), deleted=False, keys=KEY) is None
    assert derive(("1", "a", None), None, deleted=True, keys=KEY) is None
    assert derive(None, None, deleted=False, keys=KEY) is None


@given(st.tuples(st.text(max_size=3), texts, texts), st.one_of(st.none(), st.tuples(st.text(max_size=3), texts, texts)),
       st.booleans(), st.sampled_from(["changes", "full"]))
def test_derived_changes_follow_the_exists_rules(new, old, deleted, image):
    if old is not None:
        old = (new[0],) + old[1:]  # same key
    change = derive(new, old, deleted=deleted, keys=KEY, image=image)
    if change is None:
        assert old is None and deleted or (not deleted and old == new)
        return
    for value_new, value_old, exists in change.triplets:
        assert exists in (0, 1, 2, 3)
        assert value_new is None or exists in (1, 3)
        assert value_old is None or exists in (2, 3)
    if change.op == "I":
        assert old is None and [t[0] for t in change.triplets] == list(new)
    elif change.op == "D":
        assert change.triplets[0] == (None, old[0], 2)
    else:
        assert not deleted and old is not None and new != old
        if image == "changes":  # the changed fields, and only them, are in New_Val
            assert [i for i, t in enumerate(change.triplets) if t[2] == 1] == [
                i for i in range(1, 3) if new[i] != old[i]]


# ------------------------------------------------------------------------------------ rendering


def test_the_seeds_csv_insert_line():
    change = derive(("India", "India", "10"), None, deleted=False, keys={2})
    cursor = CursorInfo(1620787841959, 1620787841959, 1620787053904).as_json(1048408, 1)
    line = csv_line(change, cursor, OpCounts(6, 0, 0).as_json())
    assert line == (
        'India,NULL,1,India,NULL,1,10,NULL,1,I,"{""extractorId"":0,""nodeID"":""node1"",""timestamp"":1620787841959,'
        '""extractionTimestamp"":1620787841959,""dscId"":1620787053904,""mutId"":1048408,""partNum"":1,""v"":2}",'
        '"{""insertCount"":6,""updateCount"":0,""deleteCount"":0,""replaceCount"":0}"\n')
    assert csv_header(["a"]) == "a_New_Val,a_Old_Val,a_Exists_Val,opType,cursor,operationcount\n"


def test_the_seeds_json_update_object():
    change = derive(("10", "USA", "India"), ("10", "India", "India"), deleted=False, keys=KEY)
    cursor = CursorInfo(1620788090478, 1620788090478, 1620787053905).as_json(326190, 1)
    counts = OpCounts(6, 1, 0).as_json()
    line = json_line(change, FIELDS, table_name(None, "io_blitzz", "region"), cursor, counts)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "tableName": {"namespace": {"catalog": None, "schema": "io_blitzz", "hash": 696406511}, "name": "region",
                      "hash": -821029210},
        "opType": "U",
        "cursor": '{"extractorId":0,"nodeID":"node1","timestamp":1620788090478,"extractionTimestamp":1620788090478,'
                  '"dscId":1620787053905,"mutId":326190,"partNum":1,"v":2}',
        "before": {"r_regionkey": "10", "r_comment": "null", "r_name": "null"},
        "after": {"r_regionkey": "null", "r_comment": "USA", "r_name": "null"},
        "exists": {"r_regionkey": "2", "r_comment": "1", "r_name": "0"},
        "operationcount": '{"insertCount":6,"updateCount":1,"deleteCount":0,"replaceCount":0}',
    }


def test_the_seeds_json_insert_and_delete_objects():
    table = table_name(None, "io_blitzz", "region")
    insert = json.loads(json_line(derive(("10", "India", "India"), None, deleted=False, keys=KEY), FIELDS, table,
                                  "c", "n"))
    assert (insert["before"], insert["after"], insert["exists"]) == (
        {"r_regionkey": "null", "r_comment": "null", "r_name": "null"},
        {"r_regionkey": "10", "r_comment": "India", "r_name": "India"},
        {"r_regionkey": "1", "r_comment": "1", "r_name": "1"})
    delete = json.loads(json_line(derive(None, ("10", "USA", "India"), deleted=False, keys=KEY), FIELDS, table,
                                  "c", "n"))
    assert (delete["opType"], delete["before"], delete["after"], delete["exists"]) == (
        "D", {"r_regionkey": "10", "r_comment": "null", "r_name": "null"},
        {"r_regionkey": "null", "r_comment": "null", "r_name": "null"},
        {"r_regionkey": "2", "r_comment": "0", "r_name": "0"})
    assert list(delete) == ["tableName", "opType", "cursor", "before", "after", "exists", "operationcount"]
