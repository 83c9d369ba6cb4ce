"""Every manifest the tests of this folder check is also held to the quick build's promise
(framework/manifest/vouch.py): where it builds the models, pydantic builds equal ones. Hundreds of manifests,
valid and broken, written for other tests."""

from __future__ import annotations

import pytest
from quick_build_twin import assert_same_as_pydantic

import framework.manifest as manifest


@pytest.fixture(autouse=True)
def _quick_build_is_pydantic_s(monkeypatch):
    quick = manifest.quick_build
    monkeypatch.setattr(manifest, "quick_build", lambda data: assert_same_as_pydantic(data, quick))
