"""An API budget held across 4 Spark tasks (``local[4]``) against an API that allows less than they could send.

The fake API counts the requests per window of its clock and answers 429 above its limit; the manifest's
``api_budget`` allows the same rate. The sync (bench/api_budget.py's :func:`measure`, run-manifest in a
subprocess) must get every record, see no 429 and no window above the limit, and use most of the rate (the
bench prints the figure; the goal is 90%, the test's floor leaves room for a busy machine).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

import api_budget  # noqa: E402 - after the path above

pytestmark = pytest.mark.spark


def test_four_tasks_share_one_budget_no_429_and_most_of_the_rate(tmp_path):
    # one partition per task, so all four run for the whole sync: a second wave of tasks would leave a gap
    # while Spark starts it, which is Spark's scheduling, not the budget (seen in CI: windows 38, 6, 40, ...)
    found = api_budget.measure(tasks=4, limit=40, period=2.0, partitions=4, pages=50, work=tmp_path)
    print(found.report())
    assert found.exit_code == 0, found.stderr
    assert found.records == 4 * (50 * 5 - 2)
    assert found.refused == 0, found.report()
    assert max(found.windows) <= 40
    assert len(found.steady) >= 3, found.report()
    # the rate itself is a measurement (bench/api_budget.py prints it: 88-98% here); on a loaded CI machine a task
    # can stall for a window (CI saw 40, 36, 4, 34, 40), so the test holds the budget to a floor that a budget
    # cut per task, or one that serialised the tasks, would miss
    assert found.fraction >= 0.6, found.report()
