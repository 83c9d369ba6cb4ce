"""Saving a config changed during a run: atomic rewrite with a backup, CONTROL messages, one save per change."""

from __future__ import annotations

import io
import json
import os
import threading

import orjson
import pytest

from framework.components.config_sink import ConfigSink, get_path, set_path
from framework.engine import config_sink
from framework.engine.config_sink import config_file_sink, replace_config_file
from framework.protocol.control import control_message_sink


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


def test_the_control_sink_writes_one_connector_config_message_per_save():
    out = io.BytesIO()
    sink = control_message_sink({"a": 1}, out, now_ms=lambda: 5.0)
    sink.update({("b", "c"): "x"})
    (line,) = out.getvalue().splitlines()
    assert orjson.loads(line) == {"type": "CONTROL", "control": {
        "type": "CONNECTOR_CONFIG", "emitted_at": 5.0, "connectorConfig": {"config": {"a": 1, "b": {"c": "x"}}}}}


def test_concurrent_updates_are_saved_one_at_a_time_and_none_is_lost():
    saved: list[dict] = []
    sink = ConfigSink({}, saved.append)
    threads = [threading.Thread(target=sink.update, args=({(f"k{i}",): i},)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(saved) == 20 and saved[-1] == {f"k{i}": i for i in range(20)}


def test_paths_are_created_and_read():
    config: dict = {"credentials": "not an object"}
    set_path(config, ("credentials", "token"), "t")
    assert config == {"credentials": {"token": "t"}} and get_path(config, ("credentials", "token")) == "t"
    assert get_path(config, ("nope", "token")) is None
