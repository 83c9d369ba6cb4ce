"""A stand-in for manifest-builder's server, following its JSON API (docs/builder.md), for the page's tests.

It serves framework/builder/static/ and answers the API with the framework's own pieces (validate-manifest's
checks, the test read, schema inference and the inline schema edit), in the shape the contract gives. It
is the fake the browser tests fall back to when ``framework.builder.server`` (the real one) is not there.
What it does not do that the real server does: mask secrets beyond the spec's ``airbyte_secret`` fields at
the top level, choose a partition, stop a read mid-page, per-page state.

    with BuilderServer(manifest_path, config_path) as server:
        ...  # open server.url in a browser
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parents[2] / "framework" / "builder" / "static"
MASK = "********"
_CUT = 64 * 1024
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8"}


def _version(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def _diagnostic(d: Any) -> dict:
    return {"line": d.line, "column": d.column, "severity": str(d.severity.value if hasattr(d.severity, "value")
                                                                  else d.severity),
            "code": d.code, "message": d.message, "fix": getattr(d, "fix", "") or "", "path": d.path}


def _body(value: Any) -> tuple[str, bool]:
    text = "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)
    return (text[:_CUT], True) if len(text) > _CUT else (text, False)


class BuilderServer:
    def __init__(self, manifest: Path, config: Path | None) -> None:
        self.manifest = Path(manifest)
        self.config_data: dict = json.loads(Path(config).read_text()) if config else {}
        self.runs: dict[str, dict] = {}
        self.records: dict[str, list[dict]] = {}
        self.version = _version(self.manifest)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> BuilderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- the API ----

    def _secret_keys(self, text: str) -> set[str]:
        import yaml

        try:
            spec = (yaml.safe_load(text) or {}).get("spec", {}).get("connection_specification", {})
            return {k for k, v in (spec.get("properties") or {}).items() if v.get("airbyte_secret")}
        except Exception:  # noqa: BLE001 - no spec yet
            return {"api_key"}

    def session(self) -> dict:
        text = self.manifest.read_text() if self.manifest.exists() else ""
        masked = {k: (MASK if k in (self._secret_keys(text) | {"api_key"}) else v) for k, v in self.config_data.items()}
        return {"manifest_path": str(self.manifest), "manifest_text": text,
                "config_text": json.dumps(masked, indent=2), "version": self.version, "secret_paths": ["api_key"]}

    def _config(self, text: str) -> dict:
        if not text:  # accept-schema sends none: the config as opened
            return dict(self.config_data)
        data = json.loads(text)
        return {k: (self.config_data.get(k) if v == MASK else v) for k, v in data.items()}

    def validate(self, body: dict) -> dict:
        from framework.manifest import check_manifest_text

        checked = check_manifest_text(body["manifest_text"], str(self.manifest), str(self.manifest.parent))
        streams = []
        if checked.source is not None:
            for stream in checked.source.streams or ():
                router = getattr(getattr(stream, "retriever", None), "partition_router", None)
                streams.append({"name": stream.name, "partitioned": router is not None})
        return {"diagnostics": [_diagnostic(d) for d in checked.diagnostics], "config_diagnostics": [],
                "streams": streams}

    def _connector(self, body: dict, transport: Any = None) -> Any:
        from framework.engine.connector import open_connector_text

        return open_connector_text(body["manifest_text"], self._config(body.get("config_text", "")),
                                   file=str(self.manifest), base_dir=str(self.manifest.parent), transport=transport)

    def test_read(self, body: dict) -> dict:
        run_id = uuid.uuid4().hex
        run = {"status": "running", "unit": "", "partitions": 0, "pages": [], "warnings": [], "error": None}
        self.runs[run_id] = run

        def work() -> None:
            from framework.components.http.transport import RequestsTransport
            from framework.engine.selection import Selection
            from framework.engine.test_read import RecordingTransport, test_read_stream

            try:
                recorder = RecordingTransport(RequestsTransport())
                connector = self._connector(body, recorder)
                recorder.mask = connector.mask
                seen = test_read_stream(connector, recorder, Selection(body["stream"], True),
                                        pages=int(body.get("pages") or 1))
                pages = []
                for page in seen.pages:
                    exchanges = []
                    for exchange in page.exchanges:
                        method, _, url = exchange.request.partition(" ")
                        text, cut = _body(exchange.body)
                        exchanges.append({"request": {"method": method, "url": url, "headers": {}, "body": ""},
                                          "response": {"status": exchange.status,
                                                       "headers": {"content-type": exchange.content_type},
                                                       "body": text, "truncated": cut}})
                    pages.append({"number": page.number, "exchanges": exchanges, "records": page.records,
                                  "state": None})
                self.records[run_id] = seen.records
                if run["status"] == "running":
                    run.update(unit=seen.unit, partitions=seen.units, pages=pages, error=seen.error,
                               warnings=[{"message": s.message, "fix": s.fix} for s in seen.signals],
                               status="failed" if seen.error else "done")
            except Exception as exc:  # noqa: BLE001 - shown to the page
                run.update(status="failed", error=str(exc))

        threading.Thread(target=work, daemon=True).start()
        return {"run_id": run_id}

    def infer(self, body: dict) -> dict:
        from framework.cli.schema_writing import _diff, schema_target
        from framework.components.records.schemas import PERMISSIVE_SCHEMA
        from framework.engine.schema_inference import infer_schema, merge_schema

        connector = self._connector(body)
        declared = dict(connector.stream(body["stream"]).json_schema)
        declared = {} if declared == dict(PERMISSIVE_SCHEMA) else declared
        merged, added = merge_schema(declared, infer_schema(self.records.get(body["run_id"], [])))
        target = schema_target(connector, str(self.manifest), body["stream"])
        return {"declared": declared, "merged": merged, "added": added,
                "diff": _diff(declared, merged, body["stream"]) if added else "",
                "target": {"kind": target.kind, "file": target.file, "note": target.note}}

    def accept(self, body: dict) -> dict:
        from framework.cli.schema_writing import _write_inline, schema_target

        connector = self._connector(body)
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / self.manifest.name
            copy.write_text(body["manifest_text"])
            target = schema_target(connector, str(copy), body["stream"])
            if target.kind == "file":
                return {"manifest_text": body["manifest_text"], "schema_file": target.file, "pending": True}
            if target.kind != "inline":
                raise ValueError(target.note)
            _write_inline(str(copy), [(target, body["schema"])])
            return {"manifest_text": copy.read_text()}

    def save(self, body: dict) -> tuple[int, dict]:
        if _version(self.manifest) != body.get("version"):
            return 409, {"error": f"{self.manifest} changed on disk since it was opened; nothing was written."}
        if self.manifest.exists():
            shutil.copy2(self.manifest, str(self.manifest) + ".bak")
        for path, schema in (body.get("schema_files") or {}).items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            Path(path).write_text(json.dumps(schema, indent=2) + "\n")
        self.manifest.write_text(body["manifest_text"])
        self.version = _version(self.manifest)
        return 200, {"version": self.version}

    # ---- HTTP ----

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any, kind: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                if path in ("/", "/index.html"):
                    self._send(200, (STATIC / "index.html").read_bytes(), _TYPES[".html"])
                elif path.startswith("/static/") and (STATIC / path[8:]).is_file() and "/" not in path[8:]:
                    file = STATIC / path[8:]
                    self._send(200, file.read_bytes(), _TYPES.get(file.suffix, "application/octet-stream"))
                elif path == "/api/session":
                    self._send(200, owner.session())
                elif path.startswith("/api/test-read/") and path[15:] in owner.runs:
                    self._send(200, owner.runs[path[15:]])
                else:
                    self._send(404, {"error": f"no {path}"})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self.path
                try:
                    if path == "/api/validate":
                        self._send(200, owner.validate(body))
                    elif path == "/api/test-read":
                        self._send(200, owner.test_read(body))
                    elif path.startswith("/api/test-read/") and path.endswith("/stop"):
                        run = owner.runs[path[15:-5]]
                        if run["status"] == "running":
                            run["status"] = "stopped"
                        self._send(200, {"status": run["status"]})
                    elif path == "/api/infer":
                        self._send(200, owner.infer(body))
                    elif path == "/api/accept-schema":
                        self._send(200, owner.accept(body))
                    elif path == "/api/save":
                        self._send(*owner.save(body))
                    else:
                        self._send(404, {"error": f"no {path}"})
                except Exception as exc:  # noqa: BLE001 - the page shows it
                    self._send(400, {"error": str(exc)})

        return Handler
