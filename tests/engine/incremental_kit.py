"""A dated shop API and manifest pieces for the incremental-sync tests.

:class:`Shop` holds accounts (parents) and their orders (children), each with
an ``updated_at``; :meth:`Shop.install` serves them from a
:class:`~fakes.api_server.FakeApi`, filtering by the ``start``/``end`` query
parameters the way a real API would. :func:`sync` runs one sync through the
protocol read loop and returns what came out (records, STATE messages, the
requests of that run), so a test reads like a user's day: first sync, new
data, second sync, crash, resume.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import yaml
from fakes.api_server import FakeApi, RecordedRequest, dated

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read
from framework.temporal.clock import FixedClock

ISO = "%Y-%m-%dT%H:%M:%SZ"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
NOW = datetime(2024, 1, 10, tzinfo=timezone.utc)


def at(day: float, hours: float = 0) -> datetime:
    """``T0`` plus days and hours (2024-01-01 is day 0)."""
    return T0 + timedelta(days=day, hours=hours)


def iso(moment: datetime) -> str:
    return moment.strftime(ISO)


# -- the API ------------------------------------------------------------------------------------


@dataclass
class Shop:
    """Accounts and their orders; ``updated_at`` values are ISO text unless ``epoch`` says seconds
    (``"s"``) or milliseconds (``"ms"``)."""

    epoch: str | None = None
    accounts: list[dict] = field(default_factory=list)
    orders: dict[Any, list[dict]] = field(default_factory=dict)
    newest_first: bool = False
    page_size: int | None = None  # pages of this many records (``page`` parameter) when set
    hook: Callable[[RecordedRequest], None] | None = None  # called first on every request (in the server)

    def stamp(self, moment: datetime) -> Any:
        if self.epoch == "s":
            return int(moment.timestamp())
        if self.epoch == "ms":
            return int(moment.timestamp() * 1000)
        return iso(moment)

    def add_account(self, account_id: Any, updated: datetime, **more: Any) -> dict:
        account = {"id": account_id, "updated_at": self.stamp(updated), **more}
        self.accounts.append(account)
        self.orders.setdefault(account_id, [])
        return account

    def add_order(self, account_id: Any, order_id: Any, updated: datetime, *, touch_account: bool = False) -> dict:
        order = {"id": order_id, "account": account_id, "updated_at": self.stamp(updated)}
        self.orders.setdefault(account_id, []).append(order)
        if touch_account:
            self.touch_account(account_id, updated)
        return order

    def touch_account(self, account_id: Any, updated: datetime) -> None:
        for account in self.accounts:
            if account.get("id") == account_id:
                account["updated_at"] = self.stamp(updated)

    def update_order(self, order_id: Any, updated: datetime) -> None:
        for orders in self.orders.values():
            for order in orders:
                if order["id"] == order_id:
                    order["updated_at"] = self.stamp(updated)

    def all_orders(self) -> list[dict]:
        return [order for orders in self.orders.values() for order in orders]

    # serving

    def serve(self, items: list[dict], request: RecordedRequest) -> list[dict]:
        """``items`` as the API answers ``request``: in its start..end, sorted, paged."""
        if self.hook is not None:
            self.hook(request)
        if self.epoch == "ms":
            kept = _dated_ms(items, request)
        else:
            kept = dated(items, request, "updated_at", fmt="epoch" if self.epoch == "s" else "iso")
        kept = sorted(kept, key=lambda item: item["updated_at"], reverse=self.newest_first)
        if self.page_size is not None:
            page = int(request.param("page") or 1)
            start = (page - 1) * self.page_size
            kept = kept[start:start + self.page_size]
        return [dict(item) for item in kept]

    def install(self, api: FakeApi) -> None:
        api.route("GET", "/accounts", lambda r: {"data": self.serve(self.accounts, r)})
        api.route("GET", "/accounts/{account}/orders",
                  lambda r: {"data": self.serve(self.orders.get(_key(r.path_params["account"]), []), r)})

        api.route("GET", "/orders", lambda r: {"data": self.serve(self.all_orders(), r)})


def _key(text: str) -> Any:
    return int(text) if text.isdigit() else text


def _dated_ms(items: list[dict], request: RecordedRequest) -> list[dict]:
    low, high = request.param("start"), request.param("end")
    return [item for item in items
            if (low is None or item["updated_at"] >= int(low)) and (high is None or item["updated_at"] <= int(high))]


# -- manifests ------------------------------------------------------------------------------------


def option(name: str, inject_into: str = "request_parameter") -> dict:
    return {"type": "RequestOption", "inject_into": inject_into, "field_name": name}


def cursor(**more: Any) -> dict:
    """A DatetimeBasedCursor on ``updated_at``: ISO seconds, from day 0, one-day windows sent as start/end."""
    base = {
        "type": "DatetimeBasedCursor",
        "cursor_field": "updated_at",
        "datetime_format": ISO,
        "start_datetime": iso(T0),
        "step": "P1D",
        "cursor_granularity": "PT1S",
        "start_time_option": option("start"),
        "end_time_option": option("end"),
    }
    base.update(more)
    return {k: v for k, v in base.items() if v is not None}


def stream(name: str, path: str, *, incremental: dict | None = None, router: Any = None,
           paginate: bool = False, **more: Any) -> dict:
    retriever: dict = {
        "type": "SimpleRetriever",
        "requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}", "path": path,
                      "error_handler": {"type": "DefaultErrorHandler", "max_retries": 0}},
        "record_selector": {"type": "RecordSelector",
                            "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
    }
    if router is not None:
        retriever["partition_router"] = router
    if paginate:
        retriever["paginator"] = {
            "type": "DefaultPaginator",
            "pagination_strategy": {"type": "PageIncrement", "start_from_page": 1, "page_size": 2},
            "page_token_option": option("page"),
        }
    out = {
        "type": "DeclarativeStream",
        "name": name,
        "primary_key": "id",
        "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
        "retriever": retriever,
        **more,
    }
    if incremental is not None:
        out["incremental_sync"] = incremental
    return out


def accounts(**cursor_more: Any) -> dict:
    return stream("accounts", "/accounts", incremental=cursor(**cursor_more))


def parent(stream_: dict | None = None, **more: Any) -> dict:
    base = {"type": "ParentStreamConfig", "stream": stream_ or accounts(), "parent_key": "id",
            "partition_field": "account_id"}
    base.update(more)
    return base


def substream(*parents: dict) -> dict:
    return {"type": "SubstreamPartitionRouter", "parent_stream_configs": list(parents) or [parent()]}


def orders(router: Any = None, **cursor_more: Any) -> dict:
    return stream("orders", "/accounts/{{ stream_partition.account_id }}/orders",
                  incremental=cursor(**cursor_more), router=router or substream())


def source(*streams: dict, concurrency: int | None = None) -> dict:
    out = {
        "version": "6.7.0",
        "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": [streams[0]["name"]]},
        "streams": [copy.deepcopy(s) for s in streams],
    }
    if concurrency is not None:
        out["concurrency_level"] = {"type": "ConcurrencyLevel", "default_concurrency": concurrency}
    return out


def write(tmp_path: Any, manifest: Mapping[str, Any], name: str = "manifest.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(dict(manifest), sort_keys=False))
    return str(path)


# -- running -------------------------------------------------------------------------------------


@dataclass
class Run:
    messages: list[dict]
    requests: list[RecordedRequest]
    failed: bool

    def records(self, stream: str | None = None) -> list[dict]:
        return [m["record"]["data"] for m in self.messages
                if m["type"] == "RECORD" and (stream is None or m["record"]["stream"] == stream)]

    def states(self, stream: str | None = None) -> list[dict]:
        return [m["state"]["stream"]["stream_state"] for m in self.messages
                if m["type"] == "STATE"
                and (stream is None or m["state"]["stream"]["stream_descriptor"]["name"] == stream)]

    @property
    def state(self) -> dict | None:
        """The last STATE of the run (what the next run starts from)."""
        found = self.states()
        return found[-1] if found else None

    def errors(self) -> list[str]:
        return [m["trace"]["error"]["message"] for m in self.messages
                if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]

    def windows(self, path: str | None = None) -> list[tuple[str | None, str | None]]:
        """``(start, end)`` of each request (to ``path`` when given), in the order sent."""
        return [(r.param("start"), r.param("end")) for r in self.requests if path is None or r.path == path]

    def ids(self, stream: str | None = None) -> list[Any]:
        return [r["id"] for r in self.records(stream)]


def sync(manifest_path: str, api: FakeApi, state: Mapping[str, Any] | None = None, *, stream: str | None = None,
         now: datetime = NOW, clock: FixedClock | None = None, concurrency: int | str | None = 1,
         checkpoint_seconds: float = 0.0, config: Mapping[str, Any] | None = None,
         on_clock: Callable[[FixedClock], None] | None = None) -> Run:
    """One sync of ``stream`` (default: the manifest's last) from ``state`` (that stream's state).

    ``concurrency`` defaults to 1: units in plan order, so a test can name the n-th request (None: what the
    manifest or the default says, as a user's sync)."""
    clock = clock or FixedClock(now)
    connector = open_connector(manifest_path, {"base_url": api.url, **(config or {})},
                               sleep=lambda seconds: None, clock=clock)
    name = stream or list(connector.streams)[-1]
    before = len(api.requests)
    out = io.BytesIO()
    report = read(connector, select_streams(connector.streams, None, [name]), {name: dict(state)} if state else {},
                  out, io.StringIO(), concurrency=concurrency, checkpoint_seconds=checkpoint_seconds)
    messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return Run(messages, list(api.requests[before:]), report.failed)


def window_pairs(days: range, last_end: datetime | None = None) -> list[tuple[str, str]]:
    """The one-day windows of ``days`` (each ending one second before the next starts)."""
    pairs = [(iso(at(d)), iso(at(d + 1) - timedelta(seconds=1))) for d in days]
    if last_end is not None:
        pairs[-1] = (pairs[-1][0], iso(last_end))
    return pairs


# -- checking ------------------------------------------------------------------------------------


def key(record: Mapping[str, Any]) -> tuple:
    """A record's identity across syncs: an updated record is a new version."""
    return (record["id"], record["updated_at"])


def instant(value: Any) -> datetime:
    """An ``updated_at`` of the shop (ISO text, epoch seconds or milliseconds) as a datetime."""
    if isinstance(value, str) and not value.isdigit():
        return datetime.strptime(value, ISO).replace(tzinfo=timezone.utc)
    value = int(value)  # epoch state is text, as Airbyte writes it
    return datetime.fromtimestamp(value / 1000 if value > 10**11 else value, timezone.utc)


def finished_ranges(cursor_state: Mapping[str, Any]) -> list[tuple[datetime, datetime]]:
    """The finished intervals (both ends inclusive) a ``date-range`` cursor state keeps beyond its first slice."""
    if cursor_state.get("state_type") != "date-range":
        return []
    return [(instant(s["start"]), instant(s["end"])) for s in cursor_state["slices"][1:]]


def resume_value(cursor_state: Mapping[str, Any]) -> datetime:
    """Where a cursor state resumes from: its ``updated_at``, or a ``date-range`` state's first slice's value."""
    if cursor_state.get("state_type") == "date-range":
        first = cursor_state["slices"][0]
        return instant(first.get("most_recent_cursor_value") or first["end"])
    return instant(cursor_state["updated_at"])


def claims(state: Mapping[str, Any]) -> tuple[list[tuple[Any, datetime]], datetime | None]:
    """What a state says is synced: ``([(account or None for all, up to), ...], parent cursor)``."""
    found = []
    for entry in state.get("states") or []:
        found.append((entry["partition"].get("account_id"), resume_value(entry["cursor"])))
    if isinstance(state.get("state"), Mapping) and "updated_at" in state["state"]:
        found.append((None, instant(state["state"]["updated_at"])))
    if "updated_at" in state:
        found.append((None, instant(state["updated_at"])))
    parent = (state.get("parent_state") or {}).get("accounts") or {}
    return found, instant(parent["updated_at"]) if "updated_at" in parent else None


def assert_states_safe(run: Run, shop: Shop, *before: Run | None) -> None:
    """Every STATE claims only what was emitted before it (in this run or the runs ``before``): each
    order older than its partition's cursor, and every order of each account older than the parent's cursor."""
    emitted: set = {key(r) for earlier in before if earlier is not None for r in earlier.records()}
    for message in run.messages:
        if message["type"] == "RECORD":
            emitted.add(key(message["record"]["data"]))
        elif message["type"] == "STATE":
            state = message["state"]["stream"]["stream_state"]
            partitions, parent_cursor = claims(state)
            for account, upto in partitions:
                missing = [o for o in shop.all_orders() if (account is None or o["account"] == account)
                           and instant(o["updated_at"]) < upto and key(o) not in emitted]
                assert not missing, f"state {state} claims {missing} which were not read"
            ranges = [(e["partition"].get("account_id"), r) for e in state.get("states") or []
                      for r in finished_ranges(e["cursor"])] + [(None, r) for r in finished_ranges(state)]
            for account, (low, high) in ranges:
                missing = [o for o in shop.all_orders() if (account is None or o["account"] == account)
                           and low <= instant(o["updated_at"]) <= high and key(o) not in emitted]
                assert not missing, f"state {state} claims the finished range {low} .. {high}: {missing} unread"
            if parent_cursor is not None:
                done = {a["id"] for a in shop.accounts if "id" in a and instant(a["updated_at"]) < parent_cursor}
                missing = [o for o in shop.all_orders() if o["account"] in done and key(o) not in emitted]
                assert not missing, f"parent state {state['parent_state']} moved past unread children {missing}"
