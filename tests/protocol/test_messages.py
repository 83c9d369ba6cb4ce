import orjson

from framework.protocol import messages


def test_record_lines_are_airbyte_record_messages():
    encoder = messages.RecordEncoder("orders")
    data = encoder.encode_page([{"id": 1, "n": {"a": [1, 2]}}, {"id": 2}], 1700000000000)
    lines = data.splitlines()
    assert len(lines) == 2
    first = orjson.loads(lines[0])
    assert first == {"type": "RECORD",
                     "record": {"stream": "orders", "data": {"id": 1, "n": {"a": [1, 2]}}, "emitted_at": 1700000000000}}


def test_stream_names_are_escaped():
    encoder = messages.RecordEncoder('we"ird')
    line = orjson.loads(encoder.encode_page([{}], 1))
    assert line["record"]["stream"] == 'we"ird'


def test_state_and_traces():
    state = orjson.loads(messages.encode(messages.state("orders", {"updated_at": "x"}, 3)))
    assert state["state"]["stream"] == {"stream_descriptor": {"name": "orders"}, "stream_state": {"updated_at": "x"}}
    assert state["state"]["sourceStats"] == {"recordCount": 3.0}
    trace = messages.error_trace("boom", 1.0, failure_type="config_error", stream="orders")
    assert trace["trace"]["error"] == {"message": "boom", "failure_type": "config_error",
                                       "stream_descriptor": {"name": "orders"}}
    status = messages.stream_status("orders", "COMPLETE", 2.0)
    assert status["trace"]["stream_status"]["status"] == "COMPLETE"


def test_a_page_with_values_orjson_does_not_know_is_encoded_as_text():
    from decimal import Decimal

    encoder = messages.RecordEncoder("orders")
    plain = encoder.encode_page([{"id": 1}, {"id": 2}], 5)
    odd = encoder.encode_page([{"id": 1}, {1: "a", "amount": Decimal("1.50")}], 5)
    assert [orjson.loads(line)["record"]["data"] for line in plain.splitlines()] == [{"id": 1}, {"id": 2}]
    assert [orjson.loads(line)["record"]["data"] for line in odd.splitlines()] == [{"id": 1},
                                                                                  {"1": "a", "amount": "1.50"}]
    assert encoder.encode_page([], 5) == b""
