"""manifests/stripe.yaml against Stripe-shaped answers: charges, customers, events.

The fake answers like Stripe's "List all charges" (and customers, events):
``{"object": "list", "url", "has_more", "data"}``, newest first, the next page
asked for with ``starting_after``, ``created[gte]``/``created[lte]`` bounds in
epoch seconds, the secret key as the Basic auth user name.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply
from manifests.harness import assert_clean, run_connector

KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
DAY = 86_400
NOW = int(time.time())
START = NOW - 45 * DAY  # two 30-day windows up to now


def charge(number: int, created: int) -> dict[str, Any]:
    return {
        "id": f"ch_3MmlLrLkdIwHu7ix0snN{number:04d}", "object": "charge", "amount": 1099 + number,
        "amount_captured": 1099 + number, "amount_refunded": 0, "application": None,
        "balance_transaction": f"txn_3MmlLrLkdIwHu7ix0uke{number:04d}",
        "billing_details": {"address": {"city": None, "country": "US", "line1": None, "line2": None,
                                        "postal_code": "94103", "state": None},
                            "email": None, "name": "Jenny Rosen", "phone": None},
        "captured": True, "created": created, "currency": "usd", "customer": None, "description": None,
        "disputed": False, "failure_code": None, "failure_message": None, "livemode": False, "metadata": {},
        "outcome": {"network_status": "approved_by_network", "reason": None, "risk_level": "normal",
                    "seller_message": "Payment complete.", "type": "authorized"},
        "paid": True, "payment_intent": None, "payment_method": f"card_1MmlLrLkdIwHu7ixIJwE{number:04d}",
        "receipt_url": "https://pay.stripe.com/receipts/x", "refunded": False, "status": "succeeded",
    }


def customer(number: int, created: int) -> dict[str, Any]:
    return {"id": f"cus_NffrFeUfNV{number:04d}", "object": "customer", "address": None, "balance": 0,
            "created": created, "currency": None, "default_source": None, "delinquent": False,
            "description": None, "email": f"jenny{number}@example.com", "invoice_prefix": f"0759{number:04d}",
            "livemode": False, "metadata": {}, "name": "Jenny Rosen", "phone": None, "preferred_locales": [],
            "tax_exempt": "none"}


def event(number: int, created: int) -> dict[str, Any]:
    return {"id": f"evt_1NG8Du2eZvKYlo2CUI79{number:04d}", "object": "event", "api_version": "2022-11-15",
            "created": created, "data": {"object": customer(number, created), "previous_attributes": {}},
            "livemode": False, "pending_webhooks": 0,
            "request": {"id": f"req_{number}", "idempotency_key": None}, "type": "customer.created"}


class Stripe:
    """Lists served the way Stripe serves them."""

    def __init__(self, api: FakeApi):
        self.api = api
        self.objects: dict[str, list[dict[str, Any]]] = {"charges": [], "customers": [], "events": []}
        api.route("GET", "/v1/{resource}", self.list)

    def list(self, request: RecordedRequest) -> Reply:
        expected = "Basic " + base64.b64encode(f"{KEY}:".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return Reply(401, {"error": {"message": "Invalid API Key provided", "type": "invalid_request_error"}})
        resource = request.path_params["resource"]
        items = sorted(self.objects[resource], key=lambda o: o["created"], reverse=True)
        low, high = request.param("created[gte]"), request.param("created[lte]")
        items = [o for o in items if (low is None or o["created"] >= int(low))
                 and (high is None or o["created"] <= int(high))]
        after = request.param("starting_after")
        if after is not None:
            ids = [o["id"] for o in items]
            if after not in ids:
                raise ApiError(400, f"No such object: '{after}'")
            items = items[ids.index(after) + 1:]
        limit = int(request.param("limit", "10"))
        if not 1 <= limit <= 100:
            raise ApiError(400, "Invalid limit: must be between 1 and 100")
        return Reply(200, {"object": "list", "url": f"/v1/{resource}", "has_more": len(items) > limit,
                           "data": items[:limit]})


@pytest.fixture
def stripe(fake_api):
    shop = Stripe(fake_api)
    shop.objects["charges"] = [charge(n, START + 3_600 + n * 1_800) for n in range(250)]  # 5 days
    shop.objects["customers"] = [customer(n, START + n * 4 * DAY) for n in range(11)]  # across both windows
    shop.objects["events"] = [event(n, NOW - 40 * DAY + n * DAY) for n in range(3)]
    return shop


def config(api: FakeApi, **more: Any) -> dict[str, Any]:
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START))
    return {"secret_key": KEY, "start_date": start, "base_url": api.url, **more}


def test_charges_page_with_starting_after_until_has_more_is_false(stripe, fake_api, tmp_path):
    sync = run_connector("stripe", config(fake_api), tmp_path, streams=["charges"])
    assert_clean(sync, "charges")
    records = sync.records("charges")
    assert sorted(r["id"] for r in records) == sorted(c["id"] for c in stripe.objects["charges"])
    calls = fake_api.received("/v1/charges")
    first_window = [c for c in calls if c.param("created[gte]") == str(START)]
    assert [c.param("starting_after") for c in first_window] == [
        None, records[99]["id"], records[199]["id"]]  # 100 + 100 + 50
    assert all(c.param("limit") == "100" for c in calls)
    assert {c.param("created[lte]") for c in first_window} == {str(START + 30 * DAY - 1)}
    (second_window,) = [c for c in calls if c.param("created[gte]") == str(START + 30 * DAY)]
    assert second_window.param("starting_after") is None
    assert sync.state_of("charges") == {"created": str(START + 3_600 + 249 * 1_800)}


def test_customers_are_read_window_by_window_and_then_only_new_ones(stripe, fake_api, tmp_path):
    first = run_connector("stripe", config(fake_api), tmp_path, streams=["customers"],
                          label="first")
    assert_clean(first, "customers")
    assert sorted(r["id"] for r in first.records("customers")) == sorted(c["id"] for c in stripe.objects["customers"])
    windows = sorted(int(c.param("created[gte]")) for c in fake_api.received("/v1/customers"))
    assert windows == [START, START + 30 * DAY]
    newest = START + 40 * DAY
    assert first.state_of("customers") == {"created": str(newest)}

    stripe.objects["customers"].append(customer(99, NOW - 60))
    fake_api.requests.clear()
    second = run_connector("stripe", config(fake_api), tmp_path, streams=["customers"],
                           state=first.states(), label="second")
    assert_clean(second, "customers")
    (call,) = fake_api.received("/v1/customers")
    assert call.param("created[gte]") == str(newest)
    # The customer at the cursor's own instant comes again (created[gte] is inclusive), then the new one.
    assert [r["id"] for r in second.records("customers")] == ["cus_NffrFeUfNV0099", "cus_NffrFeUfNV0010"]
    assert second.state_of("customers") == {"created": str(NOW - 60)}


def test_events_carry_their_object_and_type(stripe, fake_api, tmp_path):
    sync = run_connector("stripe", config(fake_api), tmp_path, streams=["events"])
    assert_clean(sync, "events")
    events = sync.records("events")
    assert [e["type"] for e in events] == ["customer.created"] * 3
    assert events[0]["data"]["object"]["object"] == "customer"


def test_a_wrong_key_is_a_config_error_and_is_not_shown(stripe, fake_api, tmp_path):
    sync = run_connector("stripe", config(fake_api, secret_key="sk_test_wrong0000000000"), tmp_path,
                         streams=["charges"])
    assert sync.code == 1
    (error,) = sync.errors()
    assert error["failure_type"] == "config_error"
    assert "sk_test_wrong0000000000" not in str(sync.messages) + sync.stderr
    # the first refusal stops the sync: no more than the two windows in flight at once (airbyte-cdk's default)
    assert len(fake_api.requests) <= 2


def test_a_key_that_is_not_a_stripe_key_is_refused_before_any_request(stripe, fake_api, tmp_path):
    sync = run_connector("stripe", config(fake_api, secret_key="pk_test_publishable"), tmp_path)
    assert sync.code == 2 and "secret_key" in sync.stderr
    assert fake_api.requests == []
