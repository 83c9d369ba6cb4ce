"""Manifests of Airbyte's PyPI connector packages, with their Python modules (the corpus named by PYPI_MANIFEST_CORPUS).

Among the manifests Airbyte builds (INDEX.md says ``yes`` or ``valid-schema``),
each that uses custom components and no unsupported component must validate
with no error but missing schema files and packages that are not installed
here (the ``airbyte`` extra's airbyte-cdk, or others such as ``pendulum``);
custom checks never report anything else on them. The summary counts how many
are clean, how many stop only at the airbyte extra, how many at other packages.
"""

from __future__ import annotations

import os

import pytest

from framework.manifest import check_manifest
from framework.models import UNSUPPORTED

CORPUS = os.environ.get("PYPI_MANIFEST_CORPUS")
CORPUS = CORPUS if CORPUS and os.path.isdir(CORPUS) else None
pytestmark = pytest.mark.skipif(CORPUS is None, reason="PYPI_MANIFEST_CORPUS is not set to the PyPI manifest corpus "
                                                       "(../shared/corpus/pypi-manifests)")

ALLOWED = {"file-not-found", "airbyte-extra-missing", "package-missing"}
CUSTOM_CODES = {"custom-module-not-found", "custom-class-not-found", "custom-method-missing", "custom-syntax-error",
                "bad-class-name", "custom-unknown-option"}


def _index() -> list[tuple[str, str]]:
    """(manifest path relative to the corpus, airbyte-valid) for each package of INDEX.md."""
    rows = []
    with open(os.path.join(CORPUS or ".", "INDEX.md")) as handle:
        for line in handle:
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) > 5 and cells[3].endswith("manifest.yaml"):
                rows.append((cells[3], cells[4]))
    return rows


def _uses(node, found: set) -> set:
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.add(node["type"])
        if isinstance(node.get("class_name"), str):
            found.add("class_name")
        for value in node.values():
            _uses(value, found)
    elif isinstance(node, list):
        for value in node:
            _uses(value, found)
    return found


@pytest.mark.corpus
def test_pypi_corpus(capsys):
    import yaml

    clean, clean_custom, extra_only, other_packages, unsupported, other, failures = [], [], [], [], [], [], []
    for relative, valid in _index():
        if valid not in ("yes", "valid-schema"):
            continue
        path = os.path.join(CORPUS or ".", relative)
        name = relative.split("/", 1)[0]
        checked = check_manifest(path)
        errors = [d for d in checked.errors if d.code != "file-not-found"]
        for problem in checked.diagnostics:  # custom checks find nothing wrong in code that Airbyte runs
            assert problem.code not in CUSTOM_CODES, problem.format()
        with open(path) as handle:
            used = _uses(yaml.safe_load(handle), set())
        if used & set(UNSUPPORTED):
            unsupported.append(name)
            continue
        if "class_name" not in used:
            if errors:
                other.append(name)  # errors that are not about custom components
            else:
                clean.append(name)
            continue
        codes = {d.code for d in errors}
        if codes - ALLOWED:
            failures.append((name, [e.format() for e in errors if e.code not in ALLOWED]))
        elif "package-missing" in codes:
            other_packages.append(name)
        elif codes:
            extra_only.append(name)
        else:
            clean_custom.append(name)
    with capsys.disabled():
        print(f"\npypi corpus: {len(clean) + len(clean_custom)} clean ({len(clean_custom)} with custom components); "
              f"with custom components, {len(extra_only)} stop only at the airbyte extra "
              f"({', '.join(extra_only)}); {len(other_packages)} at other packages ({', '.join(other_packages)}); "
              f"{len(unsupported)} use unsupported components; {len(other)} without custom components have "
              f"other errors ({', '.join(other)}); {len(failures)} fail")
    assert not failures, "\n".join(f"{name}:\n  " + "\n  ".join(errors) for name, errors in failures)
    assert clean and (clean_custom or extra_only or other_packages)
