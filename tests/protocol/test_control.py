"""Protocol mode's CONTROL message of a changed config, and the config sink that writes one per save."""

from __future__ import annotations

import io

import orjson

from framework.protocol.control import control_message, control_message_sink


def test_control_message_is_airbytes_connector_config():
    message = control_message({"a": 1}, 1700000000000)
    assert message == {"type": "CONTROL", "control": {"type": "CONNECTOR_CONFIG", "emitted_at": 1700000000000.0,
                                                       "connectorConfig": {"config": {"a": 1}}}}


def test_the_control_sink_writes_one_connector_config_message_per_save():
    out = io.BytesIO()
    sink = control_message_sink({"a": 1}, out, now_ms=lambda: 5.0)
    sink.update({("b", "c"): "x"})
    (line,) = out.getvalue().splitlines()
    assert orjson.loads(line) == {"type": "CONTROL", "control": {
        "type": "CONNECTOR_CONFIG", "emitted_at": 5.0, "connectorConfig": {"config": {"a": 1, "b": {"c": "x"}}}}}
