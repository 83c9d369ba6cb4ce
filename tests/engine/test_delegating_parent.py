"""A ``StateDelegatingStream`` as the parent of a SubstreamPartitionRouter: the parent's state kept in the
child's (``incremental_dependency``) picks its definition, the full-refresh one when there is none."""

from __future__ import annotations

import pytest
from engine.incremental_kit import NOW, Shop, accounts, at, orders, parent, source, stream, substream, sync, write


def delegating_accounts() -> dict:
    full = stream("accounts", "/accounts_all")
    return {"type": "StateDelegatingStream", "name": "accounts", "full_refresh_stream": full,
            "incremental_stream": accounts()}


@pytest.fixture
def shop(fake_api):
    shop = Shop()
    shop.add_account(1, at(1))
    shop.add_account(2, at(2))
    shop.add_order(1, 10, at(1, 5))
    shop.add_order(2, 20, at(2, 5))
    shop.install(fake_api)
    fake_api.route("GET", "/accounts_all", lambda r: {"data": [dict(a) for a in shop.accounts]})
    return shop


@pytest.mark.parametrize("dependent", [True, False])
def test_the_first_sync_reads_the_parent_by_its_full_refresh_definition(tmp_path, fake_api, shop, dependent):
    child = orders(router=substream(parent(delegating_accounts(), incremental_dependency=dependent)))
    path = write(tmp_path, source(child))
    run = sync(path, fake_api)
    assert not run.failed, run.errors()
    assert sorted(run.ids()) == [10, 20]
    assert [r.path for r in run.requests if r.path.startswith("/accounts") and "orders" not in r.path] \
        == ["/accounts_all"]


def test_with_the_parent_state_in_the_child_state_the_incremental_definition_reads(tmp_path, fake_api, shop):
    child = orders(router=substream(parent(delegating_accounts(), incremental_dependency=True)))
    path = write(tmp_path, source(child))
    first = sync(path, fake_api)
    assert first.state is not None and "accounts" in first.state.get("parent_state", {})

    state = {**first.state, "parent_state": {"accounts": {"updated_at": "2024-01-02T00:00:00Z"}}}
    shop.add_account(3, at(8))
    shop.add_order(3, 30, at(8, 1))
    second = sync(path, fake_api, state)
    assert not second.failed, second.errors()
    parent_requests = [r for r in second.requests if r.path in ("/accounts", "/accounts_all")]
    assert {r.path for r in parent_requests} == {"/accounts"}  # the incremental definition, by windows
    assert min(r.param("start") for r in parent_requests) == "2024-01-02T00:00:00Z"
    assert 30 in second.ids() and NOW > at(8)


def test_without_incremental_dependency_the_parent_always_reads_in_full(tmp_path, fake_api, shop):
    child = orders(router=substream(parent(delegating_accounts())))
    path = write(tmp_path, source(child))
    first = sync(path, fake_api)
    second = sync(path, fake_api, first.state)
    assert [r.path for r in second.requests if r.path in ("/accounts", "/accounts_all")] == ["/accounts_all"]
