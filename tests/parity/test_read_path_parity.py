"""Parity with airbyte-cdk 7.39.1 in reading responses and pages (issue 37's read path).

manifests/read_path.yaml, one run of each runner over every stream against one fake API:

* `root_pages`, `empty_bodies`, `at_path`: empty bodies (``{}``, ``[]``, ``null``, empty text) and empty
  documents hold no record, at the root and at a `field_path`; a list body is a list of documents, each
  read at the path; a ``{}`` page ends a PageIncrement;
* `link_cursor`, `false_tokens`: a next-page token that is false for Python (``{}`` from a Link header's
  default, ``0``, ``false``, ``[]``, ``"0"``, ``"{}"``) ends the pages: no request carries it;
* `missing_key`: a `cursor_value` that looks up through a key the last page lacks fails the stream (the
  records of the pages before stay read), the other streams go on;
* `optional_params`: optional config values left out or null; airbyte-cdk sends the text ``None`` for
  ``config.get('lang')`` and for a null value, we leave those parameters out (the one difference allowed,
  docs/airbyte-differences.md);
* `once_*`, `later_*`: a datetime range of one instant, on a first sync (start = end) and on a later one
  (state = end): no request without a `cursor_granularity`, one ``[t, t]`` window with one or after a lookback.

The API answers 400 to a request neither runner should make (a page token that should have ended the
pages), so such a request shows as a failed stream. Skipped without AIRBYTE_CDK_PYTHON (see README.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: skipped without the CDK)
    MANIFESTS,
    Output,
    canonical,
    catalog_for,
    distinct_requests,
    pytestmark,
    run_cdk,
    run_ours,
)

MANIFEST = MANIFESTS / "read_path.yaml"
INSTANT = "2024-01-05T00:00:00Z"
FULL = ["root_pages", "empty_bodies", "at_path", "link_cursor", "false_tokens", "missing_key", "optional_params"]
ONCE = ["once_plain", "once_zero_granularity", "once_granularity", "once_lookback"]
LATER = ["later_plain", "later_granularity"]
FALSE_TOKENS = {"zero": 0, "false": False, "list": [], "text_zero": "0", "text_object": "{}"}


def root_pages(request: RecordedRequest) -> object:
    page = request.param("page") or "1"
    if page == "1":  # documents: `{}` is none, a list inside gives its items; 3 records, a full page
        return [{"id": 1}, {}, [{"id": 2}, {"id": 3}]]
    if page == "2":
        return {}  # an empty page: the last
    raise ApiError(400, f"page {page} does not exist")


BODIES = {"object": {}, "list": [], "null": b"null", "text": b"", "one": {"id": "one"}}


def bodies(request: RecordedRequest) -> object:
    body = BODIES[request.param("kind") or ""]
    return Reply(200, body) if isinstance(body, bytes) or body == {} else body


AT_PATH = {
    "empty": {"data": {}},
    "documents": [{"data": [{"id": 1}, {"id": 2}]}, {"data": {"id": 3}}, {"data": {}}, {"other": [{"id": 9}]}],
    "scalar": {"data": 0},
}


def at_path(request: RecordedRequest) -> object:
    return AT_PATH[request.param("kind") or ""]


def link_cursor(request: RecordedRequest) -> Reply:
    cursor = request.param("cursor")
    if cursor is None:
        link = f'<{request.path}?cursor=c2>; rel="next"; results="true"; cursor="c2"'
        return Reply(200, {"data": [{"id": 1}]}, {"Link": link})
    if cursor == "c2":
        return Reply(200, {"data": [{"id": 2}]})
    raise ApiError(400, f"unknown cursor {cursor!r}")


def false_tokens(request: RecordedRequest) -> dict:
    kind = request.param("kind") or ""
    if request.param("cursor") is not None:
        raise ApiError(400, f"{kind}: the token {request.param('cursor')!r} should have ended the pages")
    return {"data": [{"id": kind}], "next": FALSE_TOKENS[kind]}


def missing_key(request: RecordedRequest) -> dict:
    if request.param("cursor") is None:
        return {"data": [{"id": 1}], "meta": {"pagination": {"next": "p2"}}}
    return {"data": [{"id": 2}]}  # no `meta`: the cursor_value's lookup fails


def optional_params(request: RecordedRequest) -> dict:
    return {"data": [{"id": 1}]}


def dated(request: RecordedRequest) -> dict:
    return {"data": [{"id": request.path.strip("/"), "updated_at": INSTANT}]}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        for name, handler in (("root_pages", root_pages), ("bodies", bodies), ("at_path", at_path),
                              ("link_cursor", link_cursor), ("false_tokens", false_tokens),
                              ("missing_key", missing_key), ("optional_params", optional_params)):
            server.route("GET", f"/{name}", handler)
        for name in ONCE + LATER:
            server.route("GET", f"/{name}", dated)
        yield server


def stream_state(name: str, value: str) -> dict:
    return {"type": "STREAM", "stream": {"stream_descriptor": {"name": name}, "stream_state": {"updated_at": value}}}


def records(output: Output, stream: str) -> Counter:
    return Counter(canonical(record) for record in output.records.get(stream, []))


def by_path(requests: set) -> dict[str, set]:
    found: dict[str, set] = {}
    for _method, path, query in requests:
        found.setdefault(path, set()).add(query)
    return found


def test_responses_and_pages_are_read_as_airbyte_reads_them(api: FakeApi, tmp_path: Path) -> None:
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": INSTANT,
              "units": None, "city": "Oslo"}
    catalog = catalog_for({**dict.fromkeys(FULL, "full_refresh"), **dict.fromkeys(ONCE + LATER, "incremental")})
    state = [stream_state(name, INSTANT) for name in LATER]

    api.requests.clear()
    ours = run_ours(tmp_path, MANIFEST, config, catalog, state)
    ours_requests = by_path(distinct_requests(api))
    api.requests.clear()
    cdk = run_cdk(tmp_path, MANIFEST, config, catalog, state)
    cdk_requests = by_path(distinct_requests(api))

    # only `missing_key` fails, in both
    for who, output in (("ours", ours), ("the CDK", cdk)):
        assert output.errors and all("missing_key" in error for error in output.errors), (
            f"{who}: {output.errors}\n{output.stderr[-1500:]}")
    assert "'meta'" in " ".join(ours.errors) and "stop_condition" in " ".join(ours.errors)

    expected = {
        "root_pages": [{"id": 1}, {"id": 2}, {"id": 3}],
        "empty_bodies": [{"id": "one"}],
        "at_path": [{"id": 1}, {"id": 2}, {"id": 3}],
        "link_cursor": [{"id": 1}, {"id": 2}],
        "false_tokens": [{"id": kind} for kind in FALSE_TOKENS],
        "missing_key": [{"id": 1}, {"id": 2}],
        "optional_params": [{"id": 1}],
        "once_granularity": [{"id": "once_granularity", "updated_at": INSTANT}],
        "once_lookback": [{"id": "once_lookback", "updated_at": INSTANT}],
        "later_granularity": [{"id": "later_granularity", "updated_at": INSTANT}],
    }
    for stream in FULL + ONCE + LATER:
        want = Counter(canonical(record) for record in expected.get(stream, []))
        assert records(cdk, stream) == want, f"the CDK's `{stream}` changed: {cdk.records.get(stream)}"
        assert records(ours, stream) == want, f"`{stream}`: ours {ours.records.get(stream)}"
    for stream in expected.keys() & set(ONCE + LATER):
        assert ours.stream_state(stream) == cdk.stream_state(stream) == {"updated_at": INSTANT}

    # the same requests, but for the optional parameters airbyte-cdk sends as the text None
    only_ours = {path: ours_requests[path] - cdk_requests.get(path, set()) for path in ours_requests}
    only_cdk = {path: cdk_requests[path] - ours_requests.get(path, set()) for path in cdk_requests}
    assert {path for path, extra in only_ours.items() if extra} == {"/optional_params"}
    assert {path for path, extra in only_cdk.items() if extra} == {"/optional_params"}
    assert ours_requests["/optional_params"] == {(("city", "Oslo"),)}
    assert cdk_requests["/optional_params"] == {(("city", "Oslo"), ("lang", "None"), ("units", "None"))}
    # a range of one instant: no request without a granularity, one [t, t] window with one or a lookback
    window = {(("since", INSTANT), ("until", INSTANT))}
    for path in ("/once_granularity", "/once_lookback", "/later_granularity"):
        assert cdk_requests[path] == ours_requests[path] == window
    for path in ("/once_plain", "/once_zero_granularity", "/later_plain"):
        assert path not in cdk_requests and path not in ours_requests
    # no page token that should have ended the pages was sent
    assert cdk_requests["/link_cursor"] == ours_requests["/link_cursor"] == {(), (("cursor", "c2"),)}
    assert all(dict(query).keys() == {"kind"} for query in ours_requests["/false_tokens"])
