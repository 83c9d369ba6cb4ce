"""README.md stays a page a new user reads: the two commands first, under 1,200 words, one benchmark table
that says when, on what and under what load it was taken (the history lives in bench/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_fits_on_a_few_screens():
    words = len(README.split())
    assert words < 1200, f"README.md has {words} words: move detail to docs/commands.md or bench/README.md"


def test_the_two_commands_come_first():
    first_screen = "\n".join(README.splitlines()[:12])
    assert "make demo" in first_screen and "make test" in first_screen


def test_one_benchmark_table_with_its_date_machine_and_load():
    section = README.split("## Benchmark", 1)[1].split("\n## ", 1)[0]
    tables = re.findall(r"^\| mode \|", section, flags=re.MULTILINE)
    assert len(tables) == 1
    assert re.search(r"\d{1,2} \w+ 20\d\d", section) and "vCPU" in section and "load average" in section
    assert "bench/README.md" in section
    assert "pass" not in section.lower(), "the benchmark history belongs in bench/README.md"
