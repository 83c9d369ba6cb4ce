"""manifests/zendesk_support.yaml against Zendesk-shaped cursor-based incremental exports.

The fake answers like "Incremental Ticket Export, Cursor Based" and
"Incremental User Export, Cursor Based": ``{"tickets"|"users": [...],
"after_url", "after_cursor", "before_url", "before_cursor", "end_of_stream"}``;
``start_time`` (epoch seconds) on the first request, ``cursor`` after it (and
winning over start_time), Basic auth with ``<email>/token``.
"""

from __future__ import annotations

import base64
import calendar
import io
import time
from typing import Any

import orjson
import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply
from manifests.harness import MANIFESTS, assert_clean, run_connector

from framework.components.http.transport import FunctionTransport
from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

EMAIL = "agent@example.com"
TOKEN = "6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv"
T0 = 1_704_067_200  # 2024-01-01T00:00:00Z


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def ticket(ident: int, changed: int) -> dict[str, Any]:
    return {
        "id": ident, "url": f"https://acme.zendesk.com/api/v2/tickets/{ident}.json", "external_id": None,
        "type": "incident", "subject": "Help, my printer is on fire!", "raw_subject": "Help, my printer is on fire!",
        "description": "The fire is very colorful.", "priority": "high", "status": "open", "recipient": None,
        "requester_id": 20978392, "submitter_id": 76872, "assignee_id": 235323, "organization_id": 509974,
        "group_id": 98738, "brand_id": None, "problem_id": None, "collaborator_ids": [35334, 234],
        "follower_ids": [35334], "email_cc_ids": [], "has_incidents": False, "is_public": True, "due_at": None,
        "tags": ["enterprise", "other_tag"], "custom_fields": [{"id": 27642, "value": "745"}],
        "satisfaction_rating": None, "via": {"channel": "web", "source": {"from": {}, "to": {}, "rel": None}},
        "created_at": iso(T0), "updated_at": iso(changed), "generated_timestamp": changed,
    }


def user(ident: int, changed: int) -> dict[str, Any]:
    return {"id": ident, "url": f"https://acme.zendesk.com/api/v2/users/{ident}.json", "name": f"User {ident}",
            "email": f"user{ident}@example.com", "phone": None, "role": "end-user", "role_type": None,
            "active": True, "verified": True, "suspended": False, "locale": "en-US", "time_zone": "Copenhagen",
            "iana_time_zone": "Europe/Copenhagen", "organization_id": None, "default_group_id": None,
            "external_id": None, "tags": [], "user_fields": {}, "last_login_at": None,
            "created_at": iso(T0), "updated_at": iso(changed)}


class Zendesk:
    """The cursor-based exports of one account."""

    def __init__(self, api: FakeApi):
        self.api = api
        self.items: dict[str, list[dict[str, Any]]] = {"tickets": [], "users": []}
        self.pages_served = 0
        api.route("GET", "/api/v2/incremental/{resource}/cursor.json", self.export)

    @staticmethod
    def changed(resource: str, item: dict[str, Any]) -> int:
        if resource == "tickets":
            return item["generated_timestamp"]
        return calendar.timegm(time.strptime(item["updated_at"], "%Y-%m-%dT%H:%M:%SZ"))

    def export(self, request: RecordedRequest) -> Reply:
        expected = "Basic " + base64.b64encode(f"{EMAIL}/token:{TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return Reply(401, {"error": "Couldn't authenticate you"})
        resource = request.path_params["resource"]
        ordered = sorted(self.items[resource], key=lambda i: (self.changed(resource, i), i["id"]))
        cursor = request.param("cursor")
        if cursor:  # the cursor wins over start_time
            start, offset = (int(p) for p in base64.b64decode(cursor).decode().split("|"))
        elif request.param("start_time") is None:
            raise ApiError(400, "start_time or cursor is required")
        else:
            start, offset = int(request.param("start_time")), 0
        kept = [i for i in ordered if self.changed(resource, i) >= start]
        size = min(int(request.param("per_page", "1000")), 1000)
        page = kept[offset:offset + size]
        after = base64.b64encode(f"{start}|{offset + len(page)}".encode()).decode()
        self.pages_served += 1
        return Reply(200, {
            resource: page,
            "after_url": f"{self.api.url}/api/v2/incremental/{resource}/cursor.json?cursor={after}",
            "after_cursor": after, "before_url": None, "before_cursor": None,
            "end_of_stream": offset + len(page) >= len(kept),
        })


@pytest.fixture
def zendesk(fake_api):
    account = Zendesk(fake_api)
    account.items["tickets"] = [ticket(n, T0 + 60 * n) for n in range(1, 1_301)]
    account.items["users"] = [user(n, T0 + 3_600 * n) for n in range(1, 6)]
    return account


def config(api: FakeApi, **more: Any) -> dict[str, Any]:
    return {"subdomain": "acme", "email": EMAIL, "api_token": TOKEN, "start_date": iso(T0), "base_url": api.url,
            **more}


def test_tickets_start_at_start_time_and_follow_after_cursor_to_the_end_of_stream(zendesk, fake_api, tmp_path):
    sync = run_connector("zendesk_support", config(fake_api), tmp_path, streams=["tickets"])
    assert_clean(sync, "tickets")
    assert [t["id"] for t in sync.records("tickets")] == list(range(1, 1_301))
    first, second = fake_api.received("/api/v2/incremental/tickets/cursor.json")
    assert first.param("start_time") == str(T0) and first.param("cursor") is None
    assert first.param("per_page") == "1000"
    assert second.param("cursor") == base64.b64encode(f"{T0}|1000".encode()).decode()
    assert sync.state_of("tickets") == {"generated_timestamp": str(T0 + 60 * 1_300)}
    assert TOKEN not in sync.stderr


def test_users_resume_from_their_updated_at_as_epoch_seconds(zendesk, fake_api, tmp_path):
    first = run_connector("zendesk_support", config(fake_api), tmp_path, streams=["users"], label="first")
    assert_clean(first, "users")
    assert [u["id"] for u in first.records("users")] == [1, 2, 3, 4, 5]
    last = T0 + 5 * 3_600
    assert first.state_of("users") == {"updated_at": str(last)}

    zendesk.items["users"][1] = user(2, last + 600)  # user 2 changed
    fake_api.requests.clear()
    second = run_connector("zendesk_support", config(fake_api), tmp_path, streams=["users"],
                           state=first.states(), label="second")
    assert_clean(second, "users")
    (call,) = fake_api.requests
    assert call.param("start_time") == str(last)
    assert [u["id"] for u in second.records("users")] == [5, 2]  # 5 sits at the cursor's own instant
    assert second.state_of("users") == {"updated_at": str(last + 600)}


def test_the_export_rate_limit_is_waited_out(zendesk, fake_api, tmp_path):
    fake_api.fault(status=429, headers={"Retry-After": "0"}, body={"error": "APIRateLimitExceeded"})
    sync = run_connector("zendesk_support", config(fake_api), tmp_path, streams=["users"])
    assert_clean(sync, "users")
    assert len(sync.records("users")) == 5 and len(fake_api.requests) == 2


def test_without_base_url_the_account_host_comes_from_the_subdomain():
    seen = []

    def answer(request):
        seen.append(request)
        return 200, {"Content-Type": "application/json"}, {"users": [], "after_cursor": "x", "end_of_stream": True}

    cfg = {"subdomain": "acme", "email": EMAIL, "api_token": TOKEN, "start_date": iso(T0)}
    connector = open_connector(str(MANIFESTS / "zendesk_support.yaml"), cfg, transport=FunctionTransport(answer))
    out = io.BytesIO()
    report = read(connector, select_streams(connector.streams, None, ["users"]), {}, out, io.StringIO())
    assert not report.failed
    (request,) = seen
    assert request.url == "https://acme.zendesk.com/api/v2/incremental/users/cursor.json"
    messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
    statuses = [m["trace"]["stream_status"]["status"] for m in messages if m["type"] == "TRACE"]
    assert statuses[-1] == "COMPLETE"
