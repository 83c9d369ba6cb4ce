"""bench/plan_scale.py runs end to end at a small size: both modes plan every partition, fold every unit and
find every partition again from the state (the numbers themselves are bench/README.md's)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # the bench scripts import their neighbours by name

import plan_scale  # noqa: E402 - after the path above


def test_both_modes_plan_fold_and_resume_every_partition():
    rows = [plan_scale.measure(2500, 2, 120, profile=False, mode=mode) for mode in ("eager", "lazy")]
    for row in rows:
        assert row.result is not None, row.note
        assert row.result["units"] == 2500 and row.result["resumed"] == 2500
        assert row.result["states_kept"] == 2500
    lazy = rows[1].result
    assert lazy["groups"] == 2 and lazy["saves"] == 2  # 2,500 units fit the look-ahead: one group a lane
    table = plan_scale.table(rows, markdown=True)
    assert table.count("\n") == 3 and "| 2,500 | lazy |" in table


def test_a_sharded_parent_gives_the_same_partitions():
    row = plan_scale.measure(1200, 2, 120, profile=False, mode="lazy", shards=3)
    assert row.result is not None, row.note
    assert row.result["units"] == 1200 and row.result["resumed"] == 1200
