"""bench/spark_phases.py's own logic: the CPU timeline made from cumulative samples (no sync is run)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # the bench scripts import their neighbours by name

import spark_phases  # noqa: E402 - after the path above


def _row(line: str) -> tuple[tuple[float, float], list[float]]:
    """An interval's line: (its start, its end), the CPU seconds by role."""
    span, values = line.split(" s ", 1)
    start, end = (float(part) for part in span.split("-"))
    return (start, end), [float(word) for word in values.split()]


def test_the_timeline_gives_each_interval_the_cpu_taken_in_it():
    samples = [  # cumulative CPU seconds by role, every 0.5 s or so
        (0.1, {"driver (Python)": 0.1, "API server": 0.0}),
        (0.6, {"driver (Python)": 0.5, "API server": 0.01}),
        (1.0, {"driver (Python)": 0.9, "JVM": 0.2, "API server": 0.02}),
        (1.6, {"driver (Python)": 1.3, "JVM": 0.6, "Python daemon and workers": 0.1, "API server": 0.03}),
        (1.8, {"driver (Python)": 1.4, "JVM": 0.7, "Python daemon and workers": 0.3, "API server": 0.03}),
    ]
    lines = spark_phases._timeline(samples, 1.0)
    assert lines[0].split()[-4:] == ["driver", "JVM", "workers", "API"]  # the roles seen, in a fixed order
    assert [_row(line) for line in lines[1:]] == [
        ((0.0, 1.0), [0.9, 0.2, 0.0, 0.02]),
        ((1.0, 1.8), [0.5, 0.5, 0.3, 0.01]),  # the last interval ends with the last sample
    ]
