"""Randomized cursor configurations, run by us and by airbyte-cdk against one fake API, and compared.

A :class:`Case` is one incremental stream drawn from a seed: a DatetimeBasedCursor
with or without ``step``, a ``lookback_window`` or none, client-side filtering or
not, unpartitioned, per partition (a SubstreamPartitionRouter) or with a global
substream cursor, with or without ``incremental_dependency``, and record dates
drawn around the sync's range (on its bounds too, and outside it). Its API may
filter by the window it is asked for or ignore it. Between the two syncs records
are added (new, late, in a new partition) and the range's end moves on.

Many cases go into one manifest (a stream each, ``c000``, ``c001``...), so the
CDK starts only a few times. :func:`run_batch` runs a batch as a user would:
a first sync from no state, a second from each runner's own state, and ours
once more from the CDK's state (a connection moved from Airbyte); a case is
*identical* when records (as multisets) and final states agree in all three.

Used by ``test_state_parity.py`` (a bounded set in CI) and by
``bench/state_parity.py`` (160 cases, for the measurement in
docs/incremental.md).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from fakes.api_server import ApiError, FakeApi, RecordedRequest
from parity.test_airbyte_parity import Output, canonical, catalog_for, run_cdk, run_ours

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
MODES = ("plain", "per_partition", "global")


def iso(moment: datetime) -> str:
    return moment.strftime(FORMAT)


@dataclass
class Case:
    """One stream's cursor configuration and the records its API holds (by partition id)."""

    index: int
    mode: str  # plain, per_partition or global
    step: str | None  # with cursor_granularity PT1S, or neither
    lookback: str | None
    client_side: bool
    api_filters: bool  # the API answers only records in the window asked for; else all of them
    dependency: bool  # incremental_dependency on the parent (partitioned modes only)
    end: datetime  # end_datetime of the first sync
    end_later: datetime  # of the second
    first: dict[str, list[str]] = field(default_factory=dict)  # partition id -> record instants
    later: dict[str, list[str]] = field(default_factory=dict)  # added before the second sync

    @property
    def name(self) -> str:
        return f"c{self.index:03d}"

    @property
    def partitioned(self) -> bool:
        return self.mode != "plain"

    def knobs(self) -> str:
        parts = [self.mode, f"step={self.step}", f"lookback={self.lookback}",
                 "client_side" if self.client_side else "", "api_filters" if self.api_filters else "api_ignores",
                 "dependency" if self.dependency else "", f"end={iso(self.end)}"]
        return " ".join(p for p in parts if p)


def _instants(rng: random.Random, end: datetime, count: int, late_before: datetime | None = None) -> list[str]:
    """``count`` record instants from two days before the start to a day after ``end``, on the range's bounds
    and on midnights often (where windows meet)."""
    low = START - timedelta(days=2) if late_before is None else late_before - timedelta(days=2)
    high = end + timedelta(days=1) if late_before is None else late_before
    out = []
    for _ in range(count):
        pick = rng.random()
        if pick < 0.15:
            moment = START if late_before is None else low
        elif pick < 0.3:
            moment = end
        else:
            span_hours = max(1, int((high - low).total_seconds() // 3600))
            moment = low + timedelta(hours=rng.randrange(span_hours))
            if rng.random() < 0.4:
                moment = moment.replace(hour=0)
        out.append(iso(moment))
    return out


def draw(index: int, seed: int, *, avoid_known: bool = False) -> Case:
    """The case ``index`` of the generator seeded with ``seed`` (the same every time). ``avoid_known`` draws
    none of the configurations where the runners differ by design (:func:`known_differences`)."""
    rng = random.Random(seed * 100_003 + index)
    mode = rng.choice(MODES)
    step = rng.choice([None, "P1D", "P2D", "P3D"])
    lookback = rng.choice([None, None, "PT12H", "P1D", "P2D"])
    end = START + timedelta(days=rng.randint(3, 7), hours=rng.choice([0, 0, 12]))
    api_filters = rng.random() < 0.7 or (avoid_known and step is not None)
    case = Case(index, mode, step, lookback, client_side=rng.random() < 0.4, api_filters=api_filters,
                dependency=mode != "plain" and rng.random() < 0.3, end=end,
                end_later=end + timedelta(days=rng.randint(1, 3)))
    partitions = ["p1", "p2", "p3"][: rng.randint(2, 3)] if case.partitioned else ["all"]
    for pid in partitions:
        case.first[pid] = _instants(rng, end, rng.choice([0, 1, 2, 3, 4]))
    for pid in partitions:  # new records by the second sync: newer ones, and late ones dated before the end
        if rng.random() < 0.7:
            case.later[pid] = _instants(rng, case.end_later, rng.randint(1, 2)) + \
                (_instants(rng, end, 1, late_before=end) if rng.random() < 0.5 else [])
    if case.partitioned and rng.random() < 0.3 and not avoid_known:  # a partition that appears after the first sync
        case.later["p9"] = _instants(rng, end, rng.randint(1, 2))
    return case


def draw_many(count: int, seed: int, first: int = 0, *, avoid_known: bool = False) -> list[Case]:
    return [draw(i, seed, avoid_known=avoid_known) for i in range(first, first + count)]


#: The configurations where the two runners differ by design, each documented in docs/incremental.md
#: ("Where we differ from Airbyte"): what the difference is, and when a case may show it.
KNOWN = {
    "client-side duplicates": "is_client_side_incremental against an API that ignores the window, several "
                              "windows: airbyte-cdk keeps a record once per window that returned it, we once",
    "last window": "an API that ignores the window and a range whose end falls on a step: our last window is "
                   "[end, end] (the documented table), airbyte-cdk folds it into the one before: one request and "
                   "one copy of the records more here",
    "new partition": "a partition absent from the saved state starts at start_datetime here, at the global "
                     "cursor less the lookback in airbyte-cdk",
}


def known_differences(case: Case) -> list[str]:
    """Which of :data:`KNOWN` the case may show."""
    found = []
    if case.step and not case.api_filters:
        found.append("client-side duplicates" if case.client_side else "last window")
    if "p9" in case.later:
        found.append("new partition")
    return found


# -- the manifest -------------------------------------------------------------------------------------------


def _option(name: str) -> dict:
    return {"type": "RequestOption", "inject_into": "request_parameter", "field_name": name}


def _cursor(case: Case, parent: bool = False) -> dict:
    """The case's cursor (``parent``: its parent's, with no step); each stream's end is its own config key."""
    cursor: dict[str, Any] = {
        "type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": FORMAT,
        "start_datetime": "{{ config['start_date'] }}", "end_datetime": f"{{{{ config['end_{case.name}'] }}}}",
        "start_time_option": _option("since"), "end_time_option": _option("until")}
    if parent:
        return cursor
    if case.step:
        cursor.update(step=case.step, cursor_granularity="PT1S")
    if case.lookback:
        cursor["lookback_window"] = case.lookback
    if case.client_side:
        cursor["is_client_side_incremental"] = True
    if case.mode == "global":
        cursor["global_substream_cursor"] = True
    return cursor


def _stream(name: str, path: str, cursor: dict | None, router: dict | None = None) -> dict:
    retriever: dict[str, Any] = {
        "type": "SimpleRetriever",
        "requester": {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}", "path": path,
                      "http_method": "GET"},
        "record_selector": {"type": "RecordSelector",
                            "extractor": {"type": "DpathExtractor", "field_path": ["data"]}}}
    if router is not None:
        retriever["partition_router"] = router
    stream: dict[str, Any] = {"type": "DeclarativeStream", "name": name, "primary_key": "id",
                              "schema_loader": {"type": "InlineSchemaLoader",
                                                "schema": {"type": "object", "properties": {}}},
                              "retriever": retriever}
    if cursor is not None:
        stream["incremental_sync"] = cursor
    return stream


def stream_of(case: Case) -> dict:
    if not case.partitioned:
        return _stream(case.name, f"/{case.name}/items", _cursor(case))
    parent = _stream(f"{case.name}_accounts", f"/{case.name}/accounts", _cursor(case, parent=True) if case.dependency else None)
    config: dict[str, Any] = {"type": "ParentStreamConfig", "stream": parent, "parent_key": "id",
                              "partition_field": "account_id"}
    if case.dependency:
        config["incremental_dependency"] = True
    router = {"type": "SubstreamPartitionRouter", "parent_stream_configs": [config]}
    return _stream(case.name, f"/{case.name}/accounts/{{{{ stream_partition.account_id }}}}/items", _cursor(case),
                   router)


def manifest_of(cases: Iterable[Case]) -> dict:
    streams = [stream_of(case) for case in cases]
    return {"version": "6.7.0", "type": "DeclarativeSource",
            "check": {"type": "CheckStream", "stream_names": [streams[0]["name"]]},
            "streams": streams,
            "spec": {"type": "Spec", "connection_specification": {
                "type": "object", "required": ["base_url", "start_date"],
                "properties": {"base_url": {"type": "string"}, "start_date": {"type": "string"}}}}}


# -- the API ------------------------------------------------------------------------------------------------


class CasesApi:
    """The records of every case, served at ``/<case>/items`` or ``/<case>/accounts[/<id>/items]``."""

    def __init__(self, cases: Iterable[Case]):
        self.cases = {case.name: case for case in cases}
        self.second = False  # the records added for the second sync are there

    def install(self, api: FakeApi) -> None:
        api.route("GET", "/{case}/items", lambda r: self.items(r, "all"))
        api.route("GET", "/{case}/accounts", self.accounts)
        api.route("GET", "/{case}/accounts/{id}/items", lambda r: self.items(r, r.path_params["id"]))

    def _records(self, case: Case, pid: str) -> list[dict]:
        stamps = list(case.first.get(pid, ()))
        if self.second:
            stamps += case.later.get(pid, [])
        return [{"id": f"{case.name}-{pid}-{k}", "account": pid, "updated_at": stamp} for k, stamp in enumerate(stamps)]

    def items(self, request: RecordedRequest, pid: str) -> dict:
        case = self.cases[request.path_params["case"]]
        rows = self._records(case, pid)
        since, until = request.param("since"), request.param("until")
        if since is None or until is None:
            raise ApiError(400, "since and until are required")
        if case.api_filters:
            rows = [r for r in rows if since <= r["updated_at"] <= until]
        return {"data": rows}

    def accounts(self, request: RecordedRequest) -> dict:
        case = self.cases[request.path_params["case"]]
        pids = [pid for pid in case.first] + ([pid for pid in case.later if pid not in case.first]
                                              if self.second else [])
        rows = []
        for pid in pids:  # a parent's cursor moves when its children change (what incremental_dependency needs)
            stamps = [r["updated_at"] for r in self._records(case, pid)]  # never before the start: read at once
            rows.append({"id": pid, "updated_at": max([*stamps, iso(START)])})
        since, until = request.param("since"), request.param("until")
        if since is not None and until is not None:
            rows = [r for r in rows if since <= r["updated_at"] <= until]
        return {"data": rows}


# -- comparing ------------------------------------------------------------------------------------------------


def comparable_state(case: Case, state: Any) -> Any:
    """A final state as compared: per-partition entries as a mapping, without what is known to differ only in
    form (``lookback_window``, a sync's duration in seconds; ``parent_state`` without incremental_dependency,
    which the CDK writes empty; our ``compacted_partitions``, absent under 10,000 partitions)."""
    if not isinstance(state, Mapping) or not case.partitioned:
        return state
    out = {key: value for key, value in state.items()
           if key not in ("lookback_window", "compacted_partitions", "states")
           and (key != "parent_state" or case.dependency)}
    if "states" in state:
        out["states"] = {json.dumps(e["partition"], sort_keys=True): e["cursor"] for e in state["states"]}
    return out


@dataclass
class Verdict:
    case: Case
    differences: list[str]

    @property
    def identical(self) -> bool:
        return not self.differences


def compare(case: Case, ours: Output, cdk: Output, label: str) -> list[str]:
    """What differs for ``case`` between two runs (nothing: identical)."""
    out = []
    mine = Counter(canonical(r) for r in ours.records.get(case.name, []))
    theirs = Counter(canonical(r) for r in cdk.records.get(case.name, []))
    if mine != theirs:
        out.append(f"{label}: records only ours {sorted((mine - theirs).elements())}, "
                   f"only the CDK's {sorted((theirs - mine).elements())}")
    a, b = comparable_state(case, ours.stream_state(case.name)), comparable_state(case, cdk.stream_state(case.name))
    if a != b:
        out.append(f"{label}: state ours {json.dumps(a, sort_keys=True)} != the CDK's {json.dumps(b, sort_keys=True)}")
    return out


def _state_of(output: Output, case: Case) -> list[dict]:
    message = output.states.get(case.name)
    return [message] if message is not None else []


def _failed(output: Output, case: Case) -> list[str]:
    """The error traces of a run that name the case's stream."""
    return [error for error in output.errors if case.name in error]


def run_batch(api: FakeApi, folder: Path, cases: list[Case]) -> list[Verdict]:
    """Two syncs of every case in one manifest by both runners (see the module docs); a verdict per case."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cases.yaml"
    path.write_text(yaml.safe_dump(manifest_of(cases), sort_keys=False))
    served = CasesApi(cases)
    served.install(api)
    catalog = catalog_for({case.name: "incremental" for case in cases})
    first = {"base_url": api.url, "start_date": iso(START), **{f"end_{c.name}": iso(c.end) for c in cases}}
    second = dict(first, **{f"end_{c.name}": iso(c.end_later) for c in cases})

    def states(output: Output) -> list[dict]:
        return [m for c in cases for m in _state_of(output, c)]

    served.second = False
    ours1 = run_ours(folder, path, first, catalog)
    cdk1 = run_cdk(folder, path, first, catalog)
    served.second = True
    ours2 = run_ours(folder, path, second, catalog, states(ours1))
    cdk2 = run_cdk(folder, path, second, catalog, states(cdk1))
    ours_from_cdk = run_ours(folder, path, second, catalog, states(cdk1))
    verdicts = []
    for case in cases:
        found: list[str] = []
        for label, ours, cdk in (("first sync", ours1, cdk1), ("second sync", ours2, cdk2),
                                 ("second sync, ours from the CDK's state", ours_from_cdk, cdk2)):
            for who, output in (("ours", ours), ("the CDK", cdk)):
                if _failed(output, case):
                    found.append(f"{label}: {who} failed: {_failed(output, case)[:2]}")
            found.extend(compare(case, ours, cdk, label))
        verdicts.append(Verdict(case, found))
    return verdicts
