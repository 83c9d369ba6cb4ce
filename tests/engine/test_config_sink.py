"""Spark mode's config sink: the config file rewritten atomically with a backup, one save per change."""

from __future__ import annotations

import json
import os

import pytest

from framework.engine import config_sink
from framework.engine.config_sink import config_file_sink, replace_config_file


def write(path, config) -> None:
    path.write_text(json.dumps(config))


def test_replace_keeps_the_previous_file_as_backup_and_the_permissions(tmp_path):
    path = tmp_path / "config.json"
    write(path, {"v": 1})
    os.chmod(path, 0o600)
    backup = replace_config_file(str(path), {"v": 2})
    assert backup == f"{path}.bak"
    assert json.loads(path.read_text()) == {"v": 2} and json.loads((tmp_path / "config.json.bak").read_text()) == {
        "v": 1}
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(backup).st_mode & 0o777 == 0o600
    replace_config_file(str(path), {"v": 3})  # the backup is the config before this save
    assert json.loads((tmp_path / "config.json.bak").read_text()) == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "config.json.bak"]  # no temporary left


@pytest.mark.parametrize("failing", [1, 2])
def test_a_crash_at_either_rename_leaves_whole_files(tmp_path, monkeypatch, failing):
    path = tmp_path / "config.json"
    write(path, {"v": 1})
    write(tmp_path / "config.json.bak", {"v": 0})
    real = os.replace
    calls = []

    def crash(src, dst):
        calls.append(dst)
        if len(calls) == failing:
            raise OSError("the machine died")
        real(src, dst)

    monkeypatch.setattr(config_sink.os, "replace", crash)
    with pytest.raises(OSError):
        replace_config_file(str(path), {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}  # the old config, whole
    assert json.loads((tmp_path / "config.json.bak").read_text()) == ({"v": 0} if failing == 1 else {"v": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "config.json.bak"]


def test_the_file_sink_applies_changes_to_the_last_saved_config_and_says_so(tmp_path):
    path = tmp_path / "config.json"
    write(path, {"key": "k", "credentials": {"refresh_token": "rt-0"}})
    said: list[str] = []
    sink = config_file_sink(json.loads(path.read_text()), str(path), said.append)
    sink.update({("credentials", "refresh_token"): "rt-1", ("credentials", "access_token"): "at-1"})
    sink.update({("credentials", "refresh_token"): "rt-2"})
    assert json.loads(path.read_text()) == {"key": "k", "credentials": {"refresh_token": "rt-2",
                                                                        "access_token": "at-1"}}
    assert json.loads((tmp_path / "config.json.bak").read_text())["credentials"]["refresh_token"] == "rt-1"
    assert len(said) == 2 and str(path) in said[0] and "rt-" not in said[0] and sink.saves == 2


def test_a_file_that_cannot_be_rewritten_is_a_warning_not_a_failure(tmp_path):
    said: list[str] = []
    sink = config_file_sink({"a": 1}, str(tmp_path / "missing" / "config.json"), said.append)
    sink.update({("a",): 2})
    assert said and said[0].startswith("warning:") and sink.config == {"a": 2}
