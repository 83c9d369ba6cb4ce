"""docs/templates.md is what framework.interpolation.reference makes from the code now.

Also checks that the page names every macro, filter and global once, so a
generator bug cannot drop one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.interpolation import FILTERS, MACROS
from framework.interpolation.macros import JINJA_GLOBALS
from framework.interpolation.reference import COMMAND, render, summary

PAGE = Path(__file__).resolve().parents[2] / "docs" / "templates.md"


def test_committed_page_is_up_to_date():
    assert PAGE.exists(), f"docs/templates.md is missing; make it with `{COMMAND}`"
    assert PAGE.read_text(encoding="utf-8") == render(), (
        f"docs/templates.md differs from what the code makes now; regenerate it with `{COMMAND}`")


def test_every_macro_filter_and_global_has_one_row():
    rows = [line for line in render().splitlines() if line.startswith("| `")]
    for name in MACROS:
        assert sum(row.startswith(f"| `{name}(") for row in rows) == 1, name
    for name in FILTERS:
        assert sum(row.startswith((f"| `value \\| {name}(", f"| `value \\| {name}`")) for row in rows) == 1, name
    for name in JINJA_GLOBALS:
        assert sum(row.startswith(f"| `{name}(") for row in rows) == 1, name
    assert len(rows) == len(MACROS) + len(FILTERS) + len(JINJA_GLOBALS)


def test_summary_is_the_first_paragraph_on_one_line():
    def documented() -> None:
        """First ``line``
        goes on.

        Not this."""

    assert summary(documented) == "First `line` goes on."

    def bare() -> None:
        pass

    with pytest.raises(ValueError, match="no docstring"):
        summary(bare)
