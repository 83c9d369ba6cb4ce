"""The config sink components hand a changed config to: changes applied in order, one save each, none lost."""

from __future__ import annotations

import threading

from framework.components.config_sink import ConfigSink, get_path, set_path


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
