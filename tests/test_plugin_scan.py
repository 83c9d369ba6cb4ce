"""framework.plugin_scan: the scan off for a block, the user's own choice kept."""

from __future__ import annotations

import os

import pytest

from framework.plugin_scan import VARIABLE, plugin_scan_off


def test_off_for_the_block_and_unset_again_after_it(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with plugin_scan_off():
        assert os.environ[VARIABLE] == "__all__"
    assert VARIABLE not in os.environ


def test_unset_again_when_the_block_raises(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with pytest.raises(RuntimeError), plugin_scan_off():
        raise RuntimeError("boom")
    assert VARIABLE not in os.environ


def test_the_users_own_setting_stays(monkeypatch):
    monkeypatch.setenv(VARIABLE, "logfire")
    with plugin_scan_off():
        assert os.environ[VARIABLE] == "logfire"
    assert os.environ[VARIABLE] == "logfire"
