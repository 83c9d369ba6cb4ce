"""bench/convert_page.py runs, small: the prototypes give the column path's columns; the census refuses what pyarrow
would take otherwise than the column path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))

import convert_page  # noqa: E402 - after the path above

from framework.typed import types as t  # noqa: E402

ITEMS = t.Array(t.STRING)
CUSTOMER = t.Object((("name", t.STRING), ("address", t.Object((("city", t.STRING),)))))


def test_the_bench_runs_and_its_prototypes_match_the_column_path(capsys):
    assert convert_page.main(["--records", "50", "--rounds", "1", "--calls", "1"]) == 0
    out = capsys.readouterr().out
    for way in ("column path", "one conversion, unchecked", "one conversion, exact", "plain JSON only"):
        assert way in out
    assert "'ab'" in out and "['a', 'b']" in out  # a leniency pyarrow shows


@pytest.mark.parametrize("kind, values, fits", [
    (t.INTEGER, [1, None, 2], True),
    (t.INTEGER, [1, 1.5], False),
    (t.INTEGER, [True], False),
    (t.NUMBER, [1, 2.5, None], True),
    (t.NUMBER, [False], False),
    (ITEMS, [["a"], None, []], True),
    (ITEMS, ["ab"], False),
    (ITEMS, [("a",)], False),
    (ITEMS, [["a", 1]], False),
    (CUSTOMER, [{"name": "a", "address": {"city": "b"}}, None, {}], True),
    (CUSTOMER, [{"name": "a", "address": ("b",)}], False),
    (CUSTOMER, [{"name": b"a"}], False),
    (t.UNKNOWN, [1], False),
])
def test_the_census_takes_only_what_the_column_path_takes_as_it_is(kind, values, fits):
    assert convert_page.census(kind, values) is fits
