"""Every manifest shipped in manifests/ and examples/ validates with no problem at all."""

from __future__ import annotations

import glob

import pytest
from conftest import REPO

from framework.manifest import check_manifest

SHIPPED = sorted(glob.glob(str(REPO / "manifests" / "*.yaml")) + glob.glob(str(REPO / "examples" / "*" / "manifest.yaml")))


def test_there_are_shipped_manifests():
    assert len(SHIPPED) >= 2


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1])
def test_shipped_manifest_is_clean(path):
    checked = check_manifest(path, strict=True)
    assert checked.diagnostics == (), [d.format() for d in checked.diagnostics]
