"""docs/architecture.md matches the tree: every layer is on the page, and every path the page names exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "framework"

_PATH = re.compile(r"`([A-Za-z_][\w./-]*/[\w./-]*|[\w-]+\.py)`")


def _named_paths(text: str) -> set[str]:
    # keys of the output (``_airbyte_state/state.json``) are not paths of the repo
    return {match.group(1) for match in _PATH.finditer(text) if not match.group(1).startswith("_airbyte")}


def _exists(name: str) -> bool:
    """A path named on the page, looked up from the repo, from framework/, or from one of its packages."""
    name = name.rstrip("/")
    bases = [REPO, PACKAGE, *(p for p in PACKAGE.iterdir() if p.is_dir())]
    return any((base / name).exists() for base in bases)


def test_every_layer_of_the_package_is_on_the_page():
    text = PAGE.read_text(encoding="utf-8")
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    missing = [f"framework/{name}/" for name in packages if f"`framework/{name}/`" not in text]
    missing += [f"framework/{name}" for name in modules if f"`framework/{name}`" not in text]
    assert not missing, f"docs/architecture.md does not describe {missing}: add a row to its table of layers"


def test_every_path_on_the_page_exists():
    names = _named_paths(PAGE.read_text(encoding="utf-8"))
    assert len(names) > 20, names  # the page names the places it describes
    missing = sorted(name for name in names if not _exists(name))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_a_moved_module_is_caught(tmp_path):
    assert _exists("engine/sync.py") and _exists("framework/components/") and _exists("components/http/")
    assert not _exists("sink/pipeline.py") and not _exists("streams/")
    assert _named_paths("see `spark/tasks.py` and `framework/cdc/`, not `x`") == {"spark/tasks.py", "framework/cdc/"}
