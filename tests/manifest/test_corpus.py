"""Compatibility with real Airbyte manifests (the corpus named by MANIFEST_CORPUS).

A manifest that uses only supported components (custom ones included) and
that Airbyte's schema accepts (INDEX.md) must validate with no error other
than ``file-not-found`` for schema files not shipped with it, and
``custom-module-not-found`` for the Python modules of its custom components
(the corpus has the manifests alone; tests/manifest/test_pypi_corpus.py checks
manifests with their modules); one that uses an unsupported component must get an error
naming that component, never a crash.
"""

from __future__ import annotations

import glob
import os

import pytest
from conftest import corpus_dir

from framework.manifest import check_manifest
from framework.models import UNSUPPORTED

CORPUS = corpus_dir()
pytestmark = pytest.mark.skipif(CORPUS is None, reason="MANIFEST_CORPUS is not set to the Airbyte manifest corpus")
FILES = sorted(glob.glob(os.path.join(CORPUS or ".", "*.yaml")))


def _airbyte_accepts() -> dict[str, bool]:
    """File name -> whether it validates against Airbyte's current schema (the INDEX.md's last column)."""
    accepts: dict[str, bool] = {}
    index = os.path.join(CORPUS or ".", "INDEX.md")
    if os.path.isfile(index):
        with open(index) as handle:
            for line in handle:
                cells = line.rstrip("\n").split("\t")
                if len(cells) >= 2 and cells[0].endswith(".yaml"):
                    accepts[cells[0]] = cells[-1] == "yes"
    return accepts


def _types(node, found):
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.add(node["type"])
        elif isinstance(node.get("class_name"), str):
            found.add(node["class_name"])
        for value in node.values():
            _types(value, found)
    elif isinstance(node, list):
        for value in node:
            _types(value, found)
    return found


@pytest.mark.corpus
def test_corpus(capsys):
    import yaml

    accepts = _airbyte_accepts()
    clean, custom, unsupported, rejected, failures = [], [], [], [], []
    for path in FILES:
        checked = check_manifest(path)
        with open(path) as handle:
            used = _types(yaml.safe_load(handle), set())
        # the corpus holds the manifests without their Python modules: a custom component's module is missing
        uses_custom = any("." in name or name.startswith("Custom") for name in used)
        errors = [d for d in checked.errors
                  if d.code != "file-not-found" and not (uses_custom and d.code == "custom-module-not-found")]
        if used & set(UNSUPPORTED):
            named = {d.message for d in errors if d.code == "unsupported-component"}
            for component in used & set(UNSUPPORTED):
                assert any(component in message for message in named), (path, component, named)
            unsupported.append(os.path.basename(path))
        elif errors and not accepts.get(os.path.basename(path), True):
            rejected.append(os.path.basename(path))  # Airbyte's schema rejects it too
        elif errors:
            failures.append((os.path.basename(path), [e.format() for e in errors]))
        elif uses_custom:
            custom.append(os.path.basename(path))
        else:
            clean.append(os.path.basename(path))
    with capsys.disabled():
        print(f"\ncorpus: {len(clean) + len(custom)} of {len(FILES)} manifests validate "
              f"({len(custom)} of them with custom components, their modules not in the corpus); "
              f"{len(unsupported)} use unsupported components; {len(rejected)} that Airbyte's schema rejects "
              f"have errors; {len(failures)} fail")
    assert not failures, "\n".join(f"{name}:\n  " + "\n  ".join(errors) for name, errors in failures)
    assert clean and custom
