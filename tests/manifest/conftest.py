"""Every manifest the tests of this folder check is also put to the quick check (framework.manifest.vouch):
where it vouches, pydantic must accept. Hundreds of manifests, valid and broken, written for other tests."""

from __future__ import annotations

import pytest

import framework.manifest as manifest
from framework.manifest.vouch import vouches


@pytest.fixture(autouse=True)
def _vouch_never_accepts_what_pydantic_refuses(monkeypatch):
    full = manifest.build_source

    def both(data, place, claimed):
        source, problems = full(data, place, claimed)
        assert source is not None or not vouches(data), f"the quick check vouches for a manifest pydantic refuses: " \
                                                        f"{[p.format() for p in problems]}"
        return source, problems

    monkeypatch.setattr(manifest, "build_source", both)
