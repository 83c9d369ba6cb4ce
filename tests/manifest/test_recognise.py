"""framework/manifest/recognise.py: which YAML files `validate-manifest --manifests-only` checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.manifest.recognise import file_looks_like_manifest, looks_like_manifest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", [
    "version: 6.7.0\nstreams: []\n",
    "version: 1\ndynamic_streams:\n  - type: DynamicDeclarativeStream\n",
    "type: DeclarativeSource\ncheck: {}\n",
    'type: "DeclarativeSource"  # a comment\n',
    '"version": "6.7.0"\n"streams": []\n',
    "streams:\n  - name: a\n\tbroken: tab\nversion: 1\n",  # broken YAML is still a manifest, so its errors are shown
])
def test_manifests_are_recognised(text):
    assert looks_like_manifest(text)


@pytest.mark.parametrize("text", [
    "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n",  # a GitHub workflow
    "repos:\n  - repo: local\n    hooks: []\n",  # .pre-commit-config.yaml
    "version: '3.8'\nservices:\n  db: {image: postgres}\n",  # docker-compose: a version, no streams
    "spec:\n  version: 1\n  streams: []\n",  # the keys nested, not at the top
    "type: DeclarativeStream\nname: a\n",
    "",
])
def test_other_yaml_is_not(text):
    assert not looks_like_manifest(text)


@given(st.dictionaries(st.sampled_from(["name", "jobs", "on", "services", "repos", "spec", "definitions"]),
                       st.text(alphabet="abc: -", max_size=8), max_size=5))
def test_yaml_without_the_top_level_keys_is_never_a_manifest(keys):
    text = "".join(f"{key}: {value}\n  version: 1\n  streams: []\n" for key, value in keys.items())
    assert not looks_like_manifest(text)


def test_every_manifest_of_the_repo_is_recognised():
    manifests = [REPO / "examples" / "shop" / "manifest.yaml", *sorted((REPO / "manifests").glob("*.yaml"))]
    assert len(manifests) > 3
    assert [p.name for p in manifests if not file_looks_like_manifest(str(p))] == []
