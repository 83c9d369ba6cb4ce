"""The builder's JSON API over real HTTP, against the example shop API (examples/shop)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from framework.builder.secrets import PLACEHOLDER
from framework.builder.server import start
from framework.builder.session import Session, version_of
from framework.cli.validate import main as validate_manifest
from framework.components.http.transport import RequestsTransport

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "examples" / "shop"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


shop_api = _load("shop_api_builder", SHOP / "api.py")


@pytest.fixture(scope="module")
def api():
    with shop_api.ShopApi() as running:  # now: the connector reads the last 60 days by the real clock
        yield running


class Gate:
    """A transport whose requests wait until the test opens the gate (to stop a read while it runs)."""

    def __init__(self) -> None:
        self.inner = RequestsTransport()
        self.open = threading.Event()
        self.waiting = threading.Event()

    def send(self, request, timeout=30.0, limits=None):
        self.waiting.set()
        assert self.open.wait(30)
        return self.inner.send(request, timeout, limits) if limits is not None else self.inner.send(request, timeout)


class Builder:
    def __init__(self, tmp_path: Path, api, *, transport=None) -> None:
        self.folder = tmp_path / "connector"
        self.folder.mkdir()
        text = (SHOP / "manifest.yaml").read_text(encoding="utf-8")
        # the events' declared schema without `kind`: the inference adds it back
        text = text.replace("          kind: { type: string }\n", "", 1)
        self.manifest = self.folder / "manifest.yaml"
        self.manifest.write_text(text, encoding="utf-8")
        shutil.copytree(SHOP / "schemas", self.folder / "schemas")
        self.config = {"base_url": api.url, "api_key": shop_api.API_KEY, "start_date": "2024-05-01"}
        self.session = Session(str(self.manifest), dict(self.config), allow_custom_code=False, transport=transport)
        self.server, self.thread = start(self.session)
        self.url = self.server.url.rstrip("/")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def call(self, method: str, path: str, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, raw
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def json(self, method: str, path: str, body=None, headers=None, status=200):
        code, raw = self.call(method, path, body, headers)
        assert shop_api.API_KEY not in raw.decode(), f"the API key leaked in {path}"
        assert code == status, raw
        return json.loads(raw)

    def wait(self, run_id: str) -> dict:
        for _ in range(600):
            shown = self.json("GET", f"/api/test-read/{run_id}")
            if shown["status"] != "running":
                return shown
            time.sleep(0.05)
        raise AssertionError(f"test read {run_id} still running: {shown}")


@pytest.fixture
def builder(tmp_path, api):
    made = Builder(tmp_path, api)
    yield made
    made.close()


def test_the_session_gives_the_manifest_and_the_config_with_its_secrets_masked(builder):
    shown = builder.json("GET", "/api/session")
    assert shown["manifest_text"] == builder.manifest.read_text(encoding="utf-8")
    assert shown["version"] == version_of(str(builder.manifest))
    assert json.loads(shown["config_text"]) == {**builder.config, "api_key": PLACEHOLDER}
    assert shown["secret_paths"] == [["api_key"]]


def test_a_typo_is_shown_at_its_line_with_its_fix_and_the_streams_are_listed(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    good = builder.json("POST", "/api/validate", {"manifest_text": text, "config_text": ""})
    assert [d for d in good["diagnostics"] if d["severity"] == "error"] == []
    assert {s["name"]: s["partitioned"] for s in good["streams"]} == {"accounts": False, "orders": True,
                                                                       "events": False}
    lines = text.splitlines()
    line = next(i for i, row in enumerate(lines) if "type: SimpleRetriever" in row)
    lines[line] = lines[line].replace("SimpleRetriever", "SimpleRetreiver")
    bad = builder.json("POST", "/api/validate", {"manifest_text": "\n".join(lines) + "\n", "config_text": ""})
    errors = [d for d in bad["diagnostics"] if d["severity"] == "error"]
    assert errors and errors[0]["line"] == line + 1, errors
    assert "SimpleRetriever" in (errors[0]["fix"] or "") + errors[0]["message"]


def test_config_problems_are_at_the_config_s_lines(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    broken = builder.json("POST", "/api/validate", {"manifest_text": text, "config_text": '{\n  "base_url": ,\n}'})
    assert broken["config_diagnostics"][0]["line"] == 2
    config = json.dumps({**builder.config, "api_key": PLACEHOLDER, "start_date": "June"}, indent=2)
    shown = builder.json("POST", "/api/validate", {"manifest_text": text, "config_text": config})
    problems = shown["config_diagnostics"]
    assert problems and any(p["line"] == config.splitlines().index('  "start_date": "June"') + 1 for p in problems)


def test_a_test_read_shows_each_page_s_request_response_records_and_state(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    config = json.dumps({**builder.config, "api_key": PLACEHOLDER})  # the server puts the real key back
    run = builder.json("POST", "/api/test-read", {"manifest_text": text, "config_text": config,
                                                   "stream": "events", "partition": None, "pages": 2})
    shown = builder.wait(run["run_id"])
    assert shown["status"] == "done", shown
    assert [page["number"] for page in shown["pages"]] == [1, 2]
    first = shown["pages"][0]
    exchange = first["exchanges"][0]
    assert exchange["request"]["method"] == "GET" and "/events" in exchange["request"]["url"]
    assert exchange["request"]["headers"]["Authorization"] == "****"
    assert exchange["response"]["status"] == 200 and not exchange["response"]["truncated"]
    answered = json.loads(exchange["response"]["body"])["data"]
    assert first["records"] and all(record in answered for record in first["records"])
    newest = max(record["occurred_at"] for page in shown["pages"] for record in page["records"])
    epoch = datetime.strptime(newest, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    assert shown["pages"][1]["state"] == {"occurred_at": str(int(epoch))}  # the cursor's own format (%s)
    assert shown["error"] is None and isinstance(shown["warnings"], list)


def test_a_partition_of_a_substream_is_chosen_by_its_number(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    units = []
    for partition in (0, 3):
        run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "orders",
                                                       "partition": partition, "pages": 1})
        shown = builder.wait(run["run_id"])
        assert shown["status"] == "done", shown
        assert shown["partitions"] > 3
        units.append(shown["unit"])
        state = shown["pages"][0]["state"]
        assert list(state) == ["states"] and state["states"][0]["partition"]
    assert units[0] != units[1] and "partition values" in units[1]
    run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "orders", "partition": 10_000,
                                                   "pages": 1})
    shown = builder.wait(run["run_id"])
    assert shown["status"] == "failed" and "pick one of 0 to" in shown["error"]


def test_a_running_test_read_stops(tmp_path, api):
    gate = Gate()
    builder = Builder(tmp_path, api, transport=gate)
    try:
        text = builder.manifest.read_text(encoding="utf-8")
        run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "events", "pages": 50})
        assert gate.waiting.wait(30)
        assert builder.json("GET", f"/api/test-read/{run['run_id']}")["status"] == "running"
        builder.json("POST", f"/api/test-read/{run['run_id']}/stop", {})
        gate.open.set()
        shown = builder.wait(run["run_id"])
        assert shown["status"] == "stopped", shown
        assert len(shown["pages"]) <= 1 and shown["error"] is None
    finally:
        gate.open.set()
        builder.close()


def test_infer_accept_and_save_an_inline_schema_then_validate_the_file(builder, capsys):
    text = builder.manifest.read_text(encoding="utf-8")
    run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "events", "pages": 1})
    assert builder.wait(run["run_id"])["status"] == "done"
    inferred = builder.json("POST", "/api/infer", {"manifest_text": text, "stream": "events",
                                                    "run_id": run["run_id"]})
    assert "kind" in inferred["added"] and inferred["target"]["kind"] == "inline"
    assert '+    "kind": {' in inferred["diff"]
    accepted = builder.json("POST", "/api/accept-schema", {"manifest_text": text, "stream": "events",
                                                            "schema": inferred["merged"]})
    edited = accepted["manifest_text"]
    assert "kind:" in edited.split("name: events", 1)[1] and "# Connector for the example shop API" in edited  # comments kept
    version = builder.json("GET", "/api/session")["version"]
    saved = builder.json("POST", "/api/save", {"manifest_text": edited, "version": version, "schema_files": {}})
    assert saved["version"] == version_of(str(builder.manifest)) != version
    assert builder.manifest.read_text(encoding="utf-8") == edited
    assert (builder.folder / "manifest.yaml.bak").read_text(encoding="utf-8") == text
    assert validate_manifest([str(builder.manifest)]) == 0, capsys.readouterr()


def test_a_file_schema_is_written_on_save(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "extra": {"type": "string"}}}
    accepted = builder.json("POST", "/api/accept-schema", {"manifest_text": text, "stream": "orders",
                                                            "schema": schema})
    assert accepted == {"manifest_text": text, "schema_file": "schemas/orders.json", "pending": True}
    version = builder.json("GET", "/api/session")["version"]
    builder.json("POST", "/api/save", {"manifest_text": text, "version": version,
                                       "schema_files": {"schemas/orders.json": schema}})
    assert json.loads((builder.folder / "schemas" / "orders.json").read_text()) == schema
    assert (builder.folder / "schemas" / "orders.json.bak").exists()
    refused = builder.json("POST", "/api/save", {"manifest_text": text, "version": version_of(str(builder.manifest)),
                                                 "schema_files": {"../outside.json": schema}}, status=400)
    assert "manifest's folder" in refused["error"] and not (builder.folder.parent / "outside.json").exists()


def test_save_refuses_a_file_changed_on_disk(builder):
    version = builder.json("GET", "/api/session")["version"]
    builder.manifest.write_text("# changed by someone else\n", encoding="utf-8")
    refused = builder.json("POST", "/api/save", {"manifest_text": "version: 6.7.0\n", "version": version},
                           status=409)
    assert "changed on disk" in refused["error"]
    assert builder.manifest.read_text(encoding="utf-8") == "# changed by someone else\n"


def test_another_site_and_another_host_name_are_refused(builder):
    host = builder.url.split("//", 1)[1]
    assert builder.call("GET", "/api/session", headers={"Origin": "http://evil.example"})[0] == 403
    code, _ = builder.call("POST", "/api/save", {"manifest_text": "", "version": ""},
                           headers={"Origin": "http://evil.example"})
    assert code == 403
    assert builder.call("GET", "/api/session", headers={"Host": "rebound.example:80"})[0] == 403
    assert builder.call("GET", "/api/session", headers={"Origin": f"http://{host}"})[0] == 200


def test_the_page_and_assets_are_served_and_nothing_else(builder):
    code, page = builder.call("GET", "/")
    assert code == 200 and b"<" in page
    assert builder.call("GET", "/static/..%2fserver.py")[0] == 404
    assert builder.call("GET", "/static/nothing.js")[0] == 404
    assert builder.json("GET", "/api/test-read/99", status=404)["error"].startswith("no test read")
    assert builder.json("POST", "/api/nothing", {}, status=404)["error"]
    assert "pages" in builder.json("POST", "/api/test-read", {"manifest_text": "", "stream": "x", "pages": 0},
                                   status=400)["error"]


def test_only_the_newest_test_reads_are_kept(builder, monkeypatch):
    import framework.builder.session as session_module

    monkeypatch.setattr(session_module, "KEPT_RUNS", 2)
    text = builder.manifest.read_text(encoding="utf-8")
    ids = []
    for _ in range(3):
        run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "accounts", "pages": 1})
        builder.wait(run["run_id"])
        ids.append(run["run_id"])
    assert builder.call("GET", f"/api/test-read/{ids[0]}")[0] == 404
    assert builder.json("GET", f"/api/test-read/{ids[2]}")["status"] == "done"


def test_a_broken_manifest_or_an_unknown_stream_fails_the_read_with_the_reason(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    run = builder.json("POST", "/api/test-read", {"manifest_text": text.replace("type: SimpleRetriever",
                                                                                "type: SimpleRetreiver", 1),
                                                   "stream": "events", "pages": 1})
    shown = builder.wait(run["run_id"])
    assert shown["status"] == "failed" and "SimpleRetreiver" in shown["error"]
    run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "invoices", "pages": 1})
    shown = builder.wait(run["run_id"])
    assert shown["status"] == "failed" and "invoices" in shown["error"] and "events" in shown["error"]
    refused = builder.json("POST", "/api/infer", {"manifest_text": text, "stream": "events",
                                                  "run_id": run["run_id"]}, status=409)
    assert "invoices" in refused["error"]


def test_a_poll_since_a_page_gets_only_the_later_pages(builder):
    text = builder.manifest.read_text(encoding="utf-8")
    run = builder.json("POST", "/api/test-read", {"manifest_text": text, "stream": "events", "pages": 3})
    whole = builder.wait(run["run_id"])
    later = builder.json("GET", f"/api/test-read/{run['run_id']}?since=2")
    assert [p["number"] for p in whole["pages"]] == [1, 2, 3] and later["pages"] == whole["pages"][2:]
