"""IncrementingCountCursor end to end against the fake API: one stream, and per partition under a substream."""

from __future__ import annotations

from engine.incremental_kit import option, source, stream, sync, write

from framework.engine.connector import open_connector
from framework.engine.results import UnitResult, fold_results, from_arrow, to_arrow
from framework.engine.sync import StreamSync
from framework.engine.worker import PageTyper, read_group


def count_cursor(**more) -> dict:
    return {"type": "IncrementingCountCursor", "cursor_field": "seq", "start_value": "{{ config.first }}",
            "start_value_option": option("since"), **more}


class Feed:
    """GET /events?since=N (and /accounts/{a}/events): events with seq >= since, in seq order."""

    def __init__(self) -> None:
        self.events: dict[int, list[int]] = {1: [2, 4, 7], 2: [1, 3]}

    def serve(self, account: int | None, since: str | None) -> dict:
        rows = [{"id": f"{a}-{s}", "account": a, "seq": s} for a, seqs in self.events.items()
                for s in seqs if account in (None, a)]
        rows = [r for r in rows if since is None or r["seq"] >= int(since)]
        return {"data": sorted(rows, key=lambda r: r["seq"])}

    def install(self, api) -> None:
        api.route("GET", "/events", lambda r: self.serve(None, r.param("since")))
        api.route("GET", "/accounts", {"data": [{"id": 1}, {"id": 2}]})
        api.route("GET", "/accounts/{a}/events", lambda r: self.serve(int(r.path_params["a"]), r.param("since")))


def test_a_count_cursor_reads_from_its_state_on_the_next_sync(tmp_path, fake_api):
    feed = Feed()
    feed.install(fake_api)
    path = write(tmp_path, source(stream("events", "/events", incremental=count_cursor())))
    first = sync(path, fake_api, config={"first": 2})
    assert not first.failed, first.errors()
    assert [r.param("since") for r in first.requests] == ["2"]
    assert [r["seq"] for r in first.records()] == [2, 3, 4, 7]
    assert first.state == {"seq": 7}

    feed.events[2].append(9)
    second = sync(path, fake_api, first.state, config={"first": 2})
    assert [r.param("since") for r in second.requests] == ["7"]
    assert [r["seq"] for r in second.records()] == [7, 9]
    assert second.state == {"seq": 9}


def test_a_count_cursor_keeps_one_value_per_partition_under_a_substream(tmp_path, fake_api):
    """Airbyte refuses this pairing; here each parent keeps its own value (the engine's per-partition state)."""
    feed = Feed()
    feed.install(fake_api)
    router = {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
        {"type": "ParentStreamConfig", "stream": stream("accounts", "/accounts"), "parent_key": "id",
         "partition_field": "account_id"}]}
    manifest = source(stream("events", "/accounts/{{ stream_partition.account_id }}/events",
                             incremental=count_cursor(), router=router))
    path = write(tmp_path, manifest)
    first = sync(path, fake_api, config={"first": 0})
    assert not first.failed, first.errors()
    assert first.state["states"] == [{"partition": {"account_id": 1, "parent_slice": {}}, "cursor": {"seq": 7}},
                                     {"partition": {"account_id": 2, "parent_slice": {}}, "cursor": {"seq": 3}}]
    assert first.state["use_global_cursor"] is False
    assert "lookback_window" not in first.state  # there is no time to look back by

    feed.events[2].append(5)
    second = sync(path, fake_api, first.state, config={"first": 0})
    sent = {r.path: r.param("since") for r in second.requests if r.path.endswith("/events")}
    assert sent == {"/accounts/1/events": "7", "/accounts/2/events": "3"}
    assert sorted(r["id"] for r in second.records()) == ["1-7", "2-3", "2-5"]
    assert second.state["states"][-1] == {"partition": {"account_id": 2, "parent_slice": {}}, "cursor": {"seq": 5}}


def test_count_values_travel_through_a_workers_results(tmp_path, fake_api):
    """Spark's path: units read by a worker, results through Arrow, folded on the driver."""
    feed = Feed()
    feed.install(fake_api)
    path = write(tmp_path, source(stream("events", "/events", incremental=count_cursor())))
    config = {"base_url": fake_api.url, "first": 3}
    connector = open_connector(path, config)
    events = connector.stream("events")
    driver = StreamSync(events, config, {"seq": 3})
    units = driver.plan()
    read = [item for item in read_group(connector, events, units, PageTyper(None)) if isinstance(item, UnitResult)]
    results = from_arrow(to_arrow(read))
    assert [r.latest for r in results] == [7]
    fold_results(driver, results)
    assert driver.state(final=True) == {"seq": 7}
