"""Crash and resume: a sync fails after N requests, the next one starts from the last STATE it wrote.

For every N the union of both runs must hold every record, and a record may come twice only when
it lies inside the lookback of the state the second run started from, or in a partition the first
run did not finish. Also through the CLI with a state file, and with a real process killed while
the API hangs.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from engine.incremental_kit import (
    Run,
    Shop,
    accounts,
    assert_states_safe,
    at,
    claims,
    cursor,
    instant,
    iso,
    key,
    orders,
    parent,
    source,
    stream,
    substream,
    sync,
    write,
)
from fakes.api_server import FakeApi

from framework.cli.run import main as run_cli

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shop(epoch: str | None = None) -> Shop:
    data = Shop(epoch=epoch)
    for account, day in ((1, 0), (2, 3), (3, 5)):
        data.add_account(account, at(day, 1))
        data.add_order(account, f"{account}-a", at(day, 4))
        data.add_order(account, f"{account}-b", at(day + 2, 2))
        data.add_order(account, f"{account}-c", at(day + 3, 6))
    return data


def more_data(data: Shop) -> None:
    """What happens between two syncs: new orders and an updated one (parents follow their children)."""
    data.add_order(1, "1-d", at(7, 3), touch_account=True)
    data.add_order(3, "3-d", at(8), touch_account=True)
    data.update_order("2-a", at(7, 5))
    data.touch_account(2, at(7, 5))


EPOCH_MS = {"datetime_format": "%ms", "start_datetime": str(int(at(0).timestamp() * 1000)), "step": "P3D",
            "cursor_granularity": "PT0.001S"}
MODES: dict[str, tuple[dict, int]] = {  # manifest, lookback in hours
    "one partition": (source(stream("orders", "/orders", incremental=cursor(step="P2D"))), 0),
    "one partition, lookback": (source(stream("orders", "/orders",
                                               incremental=cursor(step="P2D", lookback_window="PT10H"))), 10),
    "per partition": (source(orders(substream(parent(accounts(step="P3D"))), step="P3D")), 0),
    "per partition, lookback": (source(orders(substream(parent(accounts(step="P3D"))), step="P3D",
                                              lookback_window="PT10H")), 10),
    "incremental dependency": (source(orders(substream(parent(accounts(step="P3D"), incremental_dependency=True)),
                                             step="P3D")), 0),
    "incremental dependency, epoch ms": (source(orders(substream(parent(accounts(**EPOCH_MS),
                                                                        incremental_dependency=True)),
                                                       **EPOCH_MS)), 0),
    "global cursor": (source(orders(substream(parent(accounts(step="P3D"), incremental_dependency=True)),
                                    step="P3D", global_substream_cursor=True)), 0),
}


def floors(state: dict | None, lookback: timedelta) -> tuple[dict[Any, datetime], datetime | None]:
    """Per account (and for all) the instant from which the next run reads again."""
    if not state:
        return {}, None
    found, _ = claims(state)
    extra = timedelta(seconds=state.get("lookback_window") or 0) if state.get("use_global_cursor") else timedelta(0)
    per_account = {a: upto - lookback - extra for a, upto in found if a is not None}
    overall = [upto - lookback - extra for a, upto in found if a is None]
    return per_account, overall[0] if overall else None


def check_resume(data: Shop, crashed: Run, resumed: Run, resumed_from: dict | None, lookback: timedelta,
                 before: Run | None = None, *, unfinished: int = 1) -> None:
    """Nothing lost, no state claiming what was not read, and a record read by both runs lies inside
    the lookback of the state the second run started from, or in one of the ``unfinished`` partitions
    in flight at the crash (or, with a global cursor that has not moved yet, under a parent read again)."""
    first, second = Counter(map(key, crashed.records())), Counter(map(key, resumed.records()))
    assert max(first.values(), default=1) == 1 and max(second.values(), default=1) == 1, "a run repeated a record"
    earlier = {key(r) for r in before.records()} if before is not None else set()
    missing = [o for o in data.all_orders() if key(o) not in first and key(o) not in second and key(o) not in earlier]
    assert not missing, f"lost {missing}"
    per_account, overall = floors(resumed_from, lookback)
    parent_cursor = claims(resumed_from)[1] if resumed_from else None
    parents = {a["id"]: instant(a["updated_at"]) for a in data.accounts}
    by_key = {key(o): o for o in data.all_orders()}
    repeated_partitions = set()
    for twice in set(first) & set(second):
        order = by_key[twice]
        floor = per_account.get(order["account"], overall)
        if floor is not None:
            assert instant(order["updated_at"]) >= floor, f"{twice} read twice, before the resumed state {floor}"
        elif resumed_from and resumed_from.get("use_global_cursor"):
            assert parent_cursor is None or parents[order["account"]] >= parent_cursor, \
                f"{twice} read twice though its parent was done"
        else:
            repeated_partitions.add(order["account"])
    assert len(repeated_partitions) <= unfinished, f"partitions {repeated_partitions} were read twice in full"
    assert_states_safe(crashed, data, before)
    assert_states_safe(resumed, data, before, crashed)


def same_state(one: dict | None, other: dict | None) -> bool:
    """Equal, whatever the order of the per-partition list."""
    def norm(state: dict | None) -> Any:
        if not state or "states" not in state:
            return state
        return {**state, "states": sorted(json.dumps(e, sort_keys=True) for e in state["states"])}
    return norm(one) == norm(other)


@pytest.mark.parametrize("second_sync", [False, True], ids=["first sync", "second sync"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_sync_failing_after_any_number_of_requests_resumes_without_loss(tmp_path, fake_api, mode, second_sync):
    manifest, hours = MODES[mode]
    data = shop("ms" if "epoch ms" in mode else None)
    data.install(fake_api)
    path = write(tmp_path, manifest)
    start_state, before = None, None
    if second_sync:
        before = sync(path, fake_api, now=at(6, 12))
        start_state = before.state
        more_data(data)
    clean = sync(path, fake_api, start_state)
    assert not clean.failed, clean.errors()
    for fail_at in range(len(clean.requests)):
        fake_api.fault(after=fail_at, status=500)
        crashed = sync(path, fake_api, start_state)
        assert crashed.failed and len(crashed.requests) == fail_at + 1
        if mode == "global cursor":  # the global cursor moves only at the end of a successful sync
            assert crashed.state.get("state") == (start_state or {}).get("state")
        resumed = sync(path, fake_api, crashed.state)
        assert not resumed.failed, resumed.errors()
        check_resume(data, crashed, resumed, crashed.state, timedelta(hours=hours), before)
        if mode != "global cursor":  # (a global run's lookback_window is its duration)
            assert same_state(resumed.state, clean.state)


@pytest.mark.parametrize("fault", [{"status": 500}, {"close_connection": True}], ids=["error", "dropped"])
def test_a_concurrent_sync_resumes_without_loss(tmp_path, fake_api, fault):
    data = shop()
    data.install(fake_api)
    path = write(tmp_path, MODES["per partition"][0])
    clean = sync(path, fake_api, concurrency=3)
    for fail_at in range(4, len(clean.requests), 2):
        fake_api.fault(after=fail_at, **fault)
        crashed = sync(path, fake_api, concurrency=3)
        assert crashed.failed
        resumed = sync(path, fake_api, crashed.state, concurrency=3)
        assert not resumed.failed, resumed.errors()
        check_resume(data, crashed, resumed, crashed.state, timedelta(0), unfinished=3)
        assert same_state(resumed.state, clean.state)


def test_records_newer_than_their_window_never_carry_the_state_past_an_unread_window(tmp_path, fake_api):
    data = shop()
    data.install(fake_api)  # the API ignores the end bound: each window returns everything after its start
    path = write(tmp_path, source(stream("orders", "/orders", incremental=cursor(step="P2D", end_time_option=None))))
    fake_api.fault(after=2, status=500)  # the third window fails
    crashed = sync(path, fake_api)
    assert max(instant(o["updated_at"]) for o in crashed.records()) == at(8, 6)  # seen, but not safe to keep
    assert crashed.state == {"updated_at": iso(at(4) - timedelta(seconds=1))}  # the end of the second window
    assert crashed.windows()[2] == (iso(at(4)), None)


def test_the_parent_state_stays_before_a_parent_whose_children_failed(tmp_path, fake_api):
    data = shop()
    data.install(fake_api)
    path = write(tmp_path, MODES["incremental dependency"][0])
    fake_api.fault(path="/accounts/2/orders", after=2, status=500)  # account 2's third window fails
    crashed = sync(path, fake_api)
    assert crashed.failed
    # Account 1 (parent window 1) is done; account 2 (window 2) is not: the parent stops at account 1.
    # (its last window, which has no account, is finished: kept as a finished range beyond, Airbyte's shape)
    assert crashed.state["parent_state"] == {"accounts": {"state_type": "date-range", "slices": [
        {"start": iso(at(0)), "end": iso(at(0, 1)), "most_recent_cursor_value": iso(at(0, 1))},
        {"start": iso(at(6)), "end": iso(at(9))}]}}
    assert [(e["partition"]["account_id"], e["cursor"]["updated_at"]) for e in crashed.state["states"]] == [
        (1, iso(at(3, 6))), (2, iso(at(5, 2)))]  # account 2: as far as its first two windows go
    resumed = sync(path, fake_api, crashed.state)
    assert resumed.windows("/accounts")[0][0] == iso(at(0, 1))
    check_resume(data, crashed, resumed, crashed.state, timedelta(0))
    assert resumed.state["parent_state"] == {"accounts": {"updated_at": iso(at(5, 1))}}


def test_a_failed_global_sync_moves_only_the_parent_state(tmp_path, fake_api):
    data = shop()
    data.install(fake_api)
    path = write(tmp_path, MODES["global cursor"][0])
    first = sync(path, fake_api, now=at(6, 12))
    more_data(data)
    data.touch_account(3, at(8, 12))  # accounts 1 and 2 are in the first parent window, 3 in the second
    fake_api.fault(path="/accounts/3/orders", status=500)
    crashed = sync(path, fake_api, first.state)
    assert crashed.failed
    assert crashed.state["state"] == first.state["state"]
    assert crashed.state["lookback_window"] == first.state["lookback_window"]
    assert crashed.state["parent_state"] == {"accounts": {"updated_at": iso(at(7, 5))}}  # accounts 1 and 2 done
    resumed = sync(path, fake_api, crashed.state)
    # Account 1 is not read again; account 2 is (the parent state's own instant is read inclusively).
    assert [r.path for r in resumed.requests if r.path.endswith("/orders")] == [
        "/accounts/2/orders", "/accounts/3/orders"]
    check_resume(data, crashed, resumed, crashed.state, timedelta(0), first)


# -- through the command line --------------------------------------------------------------------


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def live_shop(today: datetime) -> Shop:
    """Data dated a few days before the real now (the CLI reads with the system clock)."""
    data = Shop()
    base = _day(today) - timedelta(days=4)
    for account in (1, 2, 3):
        data.add_account(account, base)
        for day in range(4):
            data.add_order(account, f"{account}-{day}", base + timedelta(days=day, hours=account))
    return data


def live_files(tmp_path, api: FakeApi, today: datetime) -> tuple[str, str]:
    manifest = source(orders(substream(parent(accounts(start_datetime="{{ config.start }}", step=None,
                                                       cursor_granularity=None))),
                             start_datetime="{{ config.start }}", step="P1D"))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url, "start": iso(_day(today) - timedelta(days=4))}))
    return write(tmp_path, manifest), str(config)


def protocol_lines(raw: bytes) -> list[dict]:
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def cli(manifest: str, config: str, state: list | None, tmp_path) -> tuple[int, list[dict]]:
    """``run-manifest MANIFEST --config C --protocol --concurrency 1 [--state S]`` in this process (one window at a
    time: the tests name the n-th request)."""
    argv = [manifest, "--config", config, "--protocol", "--concurrency", "1"]
    if state is not None:
        state_file = tmp_path / "state.json"
        state_file.write_text(json.dumps(state))
        argv += ["--state", str(state_file)]
    out = io.BytesIO()
    code = run_cli(argv, out=out)
    return code, protocol_lines(out.getvalue())


def as_run(messages: list[dict]) -> Run:
    return Run(messages, [], False)


def test_the_cli_resumes_from_the_last_state_message_of_a_failed_run(tmp_path, fake_api):
    today = datetime.now(timezone.utc)
    data = live_shop(today)
    data.install(fake_api)
    manifest, config = live_files(tmp_path, fake_api, today)
    fake_api.fault(path="/accounts/2/orders", after=2, status=500)
    code, crashed = cli(manifest, config, None, tmp_path)
    assert code == 1
    last_state = [m for m in crashed if m["type"] == "STATE"][-1]
    asked = len(fake_api.requests)
    code, resumed = cli(manifest, config, [last_state], tmp_path)
    assert code == 0
    resumed_from = last_state["state"]["stream"]["stream_state"]
    check_resume(data, as_run(crashed), as_run(resumed), resumed_from, timedelta(0))
    # Account 1 finished before the crash: the resumed run starts it at its cursor, not at the start.
    account_1 = resumed_from["states"][0]
    assert account_1["partition"]["account_id"] == 1
    first_1 = next(r for r in fake_api.requests[asked:] if r.path == "/accounts/1/orders")
    assert first_1.param("start") == account_1["cursor"]["updated_at"]


def test_a_killed_process_resumes_from_the_last_state_line_it_printed(tmp_path, fake_api):
    today = datetime.now(timezone.utc)
    data = live_shop(today)
    hanging, release = threading.Event(), threading.Event()
    served = []

    def hang_on_the_ninth(request) -> None:
        served.append(request)
        if len(served) == 9:  # 1 parent request, 5 windows of account 1, then account 2's third window
            hanging.set()
            release.wait(60)

    data.hook = hang_on_the_ninth
    data.install(fake_api)
    # Checkpoints come at most once a second: a slow third request lets one through before the hang.
    fake_api.fault(after=2, hang=1.1)
    manifest, config = live_files(tmp_path, fake_api, today)
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "framework.cli.run", manifest, "--config", config, "--protocol",
         "--concurrency", "1"],  # one request at a time: the ninth request is the one the comment names
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
    )
    try:
        assert hanging.wait(60), "the connector never reached the hanging request"
    finally:
        process.kill()
        output, _ = process.communicate(timeout=30)
        release.set()
    crashed = protocol_lines(output)
    assert sum(m["type"] == "RECORD" for m in crashed) == 4 + 2  # account 1's orders, two of account 2's
    last_state = [m for m in crashed if m["type"] == "STATE"][-1]
    resumed_from = last_state["state"]["stream"]["stream_state"]
    assert [e["partition"]["account_id"] for e in resumed_from["states"]] == [1]  # account 1, part of the way
    code, resumed = cli(manifest, config, [last_state], tmp_path)
    assert code == 0
    check_resume(data, as_run(crashed), as_run(resumed), resumed_from, timedelta(0))
