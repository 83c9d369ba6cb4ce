"""The recipes of a docs page, read from the page itself so that the page and the tests that run it cannot drift.

A recipe's blocks are the ```bash blocks right after a marker line (``<!-- NAME: settings -->``,
``<!-- NAME: run -->``...; blank lines between are allowed). A test runs the ``run`` blocks in order, in one
bash, after settings of its own in place of the page's ``settings`` block.
"""

from __future__ import annotations

from pathlib import Path


def recipe_blocks(doc: Path, marker: str) -> list[str]:
    """The bash blocks of ``doc`` right after ``marker``."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        if lines[index].strip() == marker:
            start = index + 1
            while not lines[start].strip():
                start += 1
            assert lines[start].strip() == "```bash", f"{doc.name}:{start + 1}: a recipe block must be ```bash"
            end = start + 1
            while lines[end].strip() != "```":
                end += 1
            found.append("\n".join(lines[start + 1:end]) + "\n")
            index = end
        index += 1
    return found


def setting_names(block: str) -> set[str]:
    """The variables a settings block sets (``NAME=value`` lines)."""
    return {line.split("=", 1)[0] for line in block.splitlines() if "=" in line and not line.startswith("#")}


def recipe_script(settings: dict[str, str], blocks: list[str]) -> str:
    """One bash script: ``set -euo pipefail``, the settings, then each block after a ``::: step N`` line on
    stderr (so a failure's output says which block failed)."""
    import shlex

    lines = "".join(f"{name}={shlex.quote(value)}\n" for name, value in settings.items())
    steps = "".join(f"echo '::: step {number}' >&2\n{block}" for number, block in enumerate(blocks, 1))
    return "set -euo pipefail\n" + lines + steps
