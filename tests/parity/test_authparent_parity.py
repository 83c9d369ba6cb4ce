"""Parity with Airbyte for authentication and parent streams (issue 37, part authparent).

Scenario one (``manifests/authparent/manifest.yaml``): a parent stream ``docs`` (two pages) selected as a stream of its
own and used as the parent of two substreams, every request signed by a custom authenticator of our own
whose ``__call__`` fetches a token (a subclass of airbyte-cdk's ``NoAuth``, as connectors that sign their
own requests ship). Run by our ``run-manifest --protocol --allow-custom-code`` and by airbyte-cdk's
``source-declarative-manifest read`` (the code injected as the platform does), against one fake API that
refuses a request without the token. Compared: records per stream, and the requests per path:

* every data request carries the token the object fetched (airbyte-cdk calls the object's ``__call__``; so
  do we). How often the token is fetched is the object's own business: airbyte-cdk builds one object per
  stream and per parent use (7 here, each fetching its own), we at most as many;
* the parent's pages are requested once per sync, however many streams read them (airbyte-cdk caches
  the responses of streams used as parents; so do we). airbyte-cdk's streams start at once and each
  that asks before the first answer is kept sends the request too (2 to 6 requests here, by timing);
  ours sends a request once and the others wait for its answer: exactly 2.

Scenario two (``manifests/authparent/token_quotas.yaml``): RateLimitedMultipleTokenAuthenticator with two
tokens against an API counting each token's calls (tests/fakes/quota_api.py): the same records, and every
request with the same token (the first until its quota is spent, the next at once when the API answers 429
with no calls left, without a backoff).

Scenario one's authenticator subclasses airbyte-cdk's ``NoAuth``, so it needs airbyte-cdk in the python running our half too
(``make test-airbyte``); in a python without it our half is skipped with that reason, after the CDK's half ran.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply, paged
from fakes.quota_api import QuotaApi
from parity.test_airbyte_parity import ENABLE, _cdk_available, assert_same_records, catalog_for
from parity.test_custom_components_parity import _Both, run_cdk, run_ours

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "manifests" / "authparent"
TOKEN = "tok-7f3a"

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

DOCS = [{"id": f"d{i}", "title": f"doc {i}"} for i in range(1, 4)]  # pages of 2: 2, 1


def _authorized(request: RecordedRequest) -> None:
    if request.headers.get("Authorization") != f"Bearer {TOKEN}" or request.headers.get("X-Signed-By") != \
            "token-signer":
        raise ApiError(401, "unsigned request")


class Api:
    def __init__(self, api: FakeApi):
        api.route("POST", "/token", self.token)
        api.route("GET", "/docs", self.docs)
        api.route("GET", "/docs/{id}/pages", self.children("page"))
        api.route("GET", "/docs/{id}/tables", self.children("table"))

    @staticmethod
    def token(request: RecordedRequest) -> dict:
        if request.json() != {"key": "client-k3y"}:
            raise ApiError(403, "bad client key")
        return {"token": TOKEN}

    @staticmethod
    def docs(request: RecordedRequest) -> dict:
        _authorized(request)
        return paged(DOCS, request)

    @staticmethod
    def children(kind: str):  # noqa: ANN205 - a route handler
        def handler(request: RecordedRequest) -> dict:
            _authorized(request)
            doc = request.path_params["id"]
            return {"data": [{"id": f"{doc}-{kind}-{k}", "doc": doc} for k in range(int(doc[1:]))]}
        return handler


def per_path(api: FakeApi) -> Counter:
    return Counter(f"{r.method} {r.path}" for r in api.received())


def test_a_signing_authenticator_and_a_parent_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "connector"
    folder.mkdir()
    for name in ("manifest.yaml", "components.py"):
        shutil.copy(SCENARIO / name, folder / name)
    catalog = catalog_for({"docs": "full_refresh", "pages": "full_refresh", "tables": "full_refresh"})
    with FakeApi() as api:
        Api(api)
        config = {"base_url": api.url, "client_key": "client-k3y"}
        cdk = run_cdk(folder, config, catalog)
        cdk.check("source-declarative-manifest")
        cdk_paths = per_path(api)
        assert len(cdk.records["docs"]) == 3 and len(cdk.records["pages"]) == 1 + 2 + 3
        assert cdk_paths["POST /token"] >= 1  # once per authenticator object it builds (7 here)
        # airbyte-cdk keeps the parent's pages, but its streams start at once, and those that ask before the
        # first answer is kept send the request too: 2 to 6 requests for the two pages, by the threads' timing
        assert 2 <= cdk_paths["GET /docs"] <= 6, cdk_paths
        if importlib.util.find_spec("airbyte_cdk") is None:
            pytest.skip("the CDK's half ran; ours needs airbyte-cdk in this python for the NoAuth subclass "
                        "(make test-airbyte)")
        api.requests.clear()
        ours = run_ours(folder, config, catalog)
        ours.check("run-manifest --protocol")
        ours_paths = per_path(api)
    both = _Both(ours, cdk)
    for stream in ("docs", "pages", "tables"):
        assert_same_records(both, stream, partition_of=lambda record: record.get("doc", ""))
    tokens = ours_paths.pop("POST /token"), cdk_paths.pop("POST /token")
    docs = ours_paths.pop("GET /docs"), cdk_paths.pop("GET /docs")
    assert ours_paths == cdk_paths
    assert docs[0] == 2 <= docs[1], f"the parent's two pages: ours requested {docs[0]}, airbyte-cdk {docs[1]}"
    assert 1 <= tokens[0] <= tokens[1], f"ours fetched the token {tokens[0]} times, airbyte-cdk {tokens[1]}"


# -- RateLimitedMultipleTokenAuthenticator ------------------------------------------------------------------


def _token_run(runner: Any, folder: Path) -> tuple[Any, list[tuple[str, str]]]:
    """One run against a fresh API: ta has 3 calls left by the quota endpoint, tb 20; after ta's second data
    request another client spends the rest of ta, so its third is answered 429 with ``X-RateLimit-Remaining: 0``."""
    quota = QuotaApi(_Clock(), {"ta": 10, "tb": 20})
    quota.used["ta"] = 7
    quota.pages = 5

    def route(request: RecordedRequest) -> Reply:
        if request.path != "/rate_limit" and [t for p, t in quota.sent if p != "/rate_limit"].count("ta") == 2:
            quota.used["ta"] = 10
        return quota.route(request)

    with FakeApi() as api:
        api.route("GET", "/rate_limit", route)
        api.route("GET", "/issues", route)
        out = runner(folder, {"base_url": api.url, "tokens": "ta,tb"}, catalog_for({"issues": "full_refresh"}))
    return out, [(path, token) for path, token in quota.sent if path != "/rate_limit"]


class _Clock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


def test_several_tokens_each_until_its_quota_and_the_next_when_the_api_says_it_is_spent(tmp_path: Path) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir()
    shutil.copy(SCENARIO / "token_quotas.yaml", folder / "manifest.yaml")
    (folder / "components.py").write_text("")
    cdk, cdk_sent = _token_run(run_cdk, folder)
    cdk.check("source-declarative-manifest")
    assert [r["page"] for r in cdk.records["issues"]] == [1, 2, 3, 4, 5]
    assert [token for _, token in cdk_sent] == ["ta", "ta", "ta"] + ["tb"] * 4, cdk_sent  # pages 3-5, then an empty 6
    ours, ours_sent = _token_run(run_ours, folder)
    ours.check("run-manifest --protocol")
    assert_same_records(_Both(ours, cdk), "issues")
    assert ours_sent == cdk_sent
