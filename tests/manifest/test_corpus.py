"""Compatibility with real Airbyte manifests (the corpus named by MANIFEST_CORPUS).

A manifest that uses only supported components must validate with no error
other than ``file-not-found`` for schema files not shipped with it; one that
uses an unsupported component must get an error naming that component, never
a crash.
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

    clean, unsupported, failures = [], [], []
    for path in FILES:
        checked = check_manifest(path)
        errors = [d for d in checked.errors if d.code != "file-not-found"]
        with open(path) as handle:
            used = {t for t in _types(yaml.safe_load(handle), set()) if t in UNSUPPORTED or "." in t}
        if used:
            named = {d.message for d in errors if d.code == "unsupported-component"}
            assert named, (path, used)
            for component in used & set(UNSUPPORTED):
                assert any(component in message for message in named), (path, component, named)
            unsupported.append(os.path.basename(path))
        elif errors:
            failures.append((os.path.basename(path), [e.format() for e in errors]))
        else:
            clean.append(os.path.basename(path))
    with capsys.disabled():
        print(f"\ncorpus: {len(clean)} of {len(FILES)} manifests validate; "
              f"{len(unsupported)} use unsupported components; {len(failures)} fail")
    assert not failures, "\n".join(f"{name}:\n  " + "\n  ".join(errors) for name, errors in failures)
    assert clean
