"""One builder session: the manifest file it edits, the config's real values, the test reads; the JSON API's
operations without HTTP (:mod:`.server` routes requests to them).

Every operation takes and returns JSON-ready values; a problem of the request is an :class:`ApiError` with
the HTTP status to answer. What goes back to the page passes through the config's mask: a secret never
leaves the server, not in a diagnostic, a request's header or a response body.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from framework.builder.runs import Run
from framework.builder.secrets import PLACEHOLDER, masked_config_text, restore, secret_paths
from framework.components.http.transport import RequestsTransport
from framework.engine.connector import open_connector_text
from framework.engine.schema_edits import edit_inline, schema_change, schema_diff, schema_target, write_schema_file
from framework.engine.signals import dig
from framework.errors import FrameworkError
from framework.manifest import check_manifest_text
from framework.manifest.config_check import ConfigFile, secret_values
from framework.manifest.yaml_source import parse_text
from framework.masking import Masker

#: the most pages one test read may ask for
MAX_PAGES = 100
#: the test reads a session keeps (their pages and records) for the page to show and infer from
KEPT_RUNS = 20


class ApiError(Exception):
    """A request the API refuses: ``status`` (4xx/5xx) and a message saying what to fix."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def version_of(path: str) -> str:
    """The hash of the file's bytes (a missing file hashes as empty: a new manifest)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        data = b""
    return hashlib.sha256(data).hexdigest()


def _text(body: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ApiError(400, f"`{name}` must be a string (the {name.replace('_', ' ')})")
    return value


def _diagnostic(d: Any, mask: Masker) -> dict[str, Any]:
    return {"line": d.line, "column": d.column, "severity": d.severity, "code": d.code,
            "message": mask(d.message), "fix": mask(d.fix) if d.fix else None, "path": d.path}


@dataclass
class Session:
    """See the module docs. ``config`` is the config with its real values (the last one the page sent)."""

    manifest_path: str
    config: dict[str, Any] = field(default_factory=dict)
    config_path: str = "config.json"
    allow_custom_code: bool = False
    transport: Any = None  # the transport test reads send through (None: HTTP)
    version: str = ""
    runs: dict[str, Run] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.manifest_path = os.path.abspath(self.manifest_path)
        self.version = version_of(self.manifest_path)

    @property
    def base_dir(self) -> str:
        return os.path.dirname(self.manifest_path)

    # -- the manifest and the config ----------------------------------------------------------------

    def _read_manifest(self) -> str:
        try:
            with open(self.manifest_path, encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            return ""

    def _spec(self, text: str) -> Any:
        checked = check_manifest_text(text, self.manifest_path, self.base_dir)
        return dig(checked.data, "spec", "connection_specification")

    def mask(self, config: Mapping[str, Any] | None = None, spec: Any = None) -> Masker:
        """The mask of the config's secrets (by the spec of the manifest on disk when ``spec`` is None)."""
        spec = spec if spec is not None else self._spec(self._read_manifest())
        config = self.config if config is None else config
        return Masker.of(secret_values(spec, config)) if isinstance(spec, Mapping) else Masker()

    def _config(self, config_text: str) -> tuple[ConfigFile | None, list[dict[str, Any]]]:
        """The config the page sent, its placeholders restored (and kept as the session's config), or its
        problem as a diagnostic at its line."""
        if not config_text.strip():
            return None, []
        try:
            data = orjson.loads(config_text)
        except orjson.JSONDecodeError as exc:
            return None, [{"line": exc.lineno, "column": exc.colno, "severity": "error", "code": "config-json",
                           "message": f"not valid JSON ({exc.msg})",
                           "fix": "the config must be a JSON object: check quotes, commas and braces", "path": ""}]
        if not isinstance(data, dict):
            return None, [{"line": 1, "column": 1, "severity": "error", "code": "config-json",
                           "message": f"the config must be a JSON object, not {type(data).__name__}",
                           "fix": "write the config as {\"key\": value, ...}", "path": ""}]
        data = restore(data, self.config)
        with self._lock:
            self.config = data
        return ConfigFile(self.config_path, data, parse_text(config_text, self.config_path)), []

    def _config_from(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if body.get("config_text") is None:
            return dict(self.config)
        config, problems = self._config(_text(body, "config_text"))
        if problems:
            raise ApiError(400, f"the config is not valid: {problems[0]['message']}; {problems[0]['fix']}")
        return dict(config.data) if config is not None else {}

    # -- the API ------------------------------------------------------------------------------------

    def session(self) -> dict[str, Any]:
        text = self._read_manifest()
        spec = self._spec(text) if text.strip() else None
        paths = secret_paths(spec, self.config) if isinstance(spec, Mapping) else []
        with self._lock:
            self.version = version_of(self.manifest_path)
        return {"manifest_path": self.manifest_path, "manifest_text": text,
                "config_text": masked_config_text(self.config, paths) if self.config or paths else "{}\n",
                "version": self.version, "secret_paths": [list(path) for path in paths]}

    def validate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body, "manifest_text")
        config, config_problems = self._config(_text(body, "config_text", required=False))
        checked = check_manifest_text(text, self.manifest_path, self.base_dir, config=config)
        spec = dig(checked.data, "spec", "connection_specification")
        mask = self.mask(config.data if config is not None else self.config, spec if spec is not None else {})
        manifest = [_diagnostic(d, mask) for d in checked.diagnostics if d.file != self.config_path]
        config_diagnostics = config_problems + [_diagnostic(d, mask) for d in checked.diagnostics
                                                if d.file == self.config_path]
        streams = []
        for stream in dig(checked.data, "streams") or []:
            if isinstance(stream, Mapping) and isinstance(stream.get("name"), str):
                router = dig(stream, "retriever", "partition_router")
                streams.append({"name": stream["name"], "partitioned": bool(router)})
        return {"diagnostics": manifest, "config_diagnostics": config_diagnostics, "streams": streams}

    def _open(self, text: str, config: Mapping[str, Any], transport: Any = None, sleep: Any = None) -> Any:
        return open_connector_text(text, config, file=self.manifest_path, base_dir=self.base_dir,
                                   transport=transport, sleep=sleep or time.sleep,
                                   allow_custom_code=True if self.allow_custom_code else None)

    def test_read(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body, "manifest_text")
        config = self._config_from(body)
        stream = _text(body, "stream")
        partition = body.get("partition")
        pages = body.get("pages", 3)
        if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool) or partition < 0):
            raise ApiError(400, f"`partition` is {partition!r}; give a partition's number (0 is the first) or null")
        if not isinstance(pages, int) or isinstance(pages, bool) or not 1 <= pages <= MAX_PAGES:
            raise ApiError(400, f"`pages` is {pages!r}; give a number of pages from 1 to {MAX_PAGES}")
        if self.transport is None:
            inner: Any = RequestsTransport()
        else:
            inner = self.transport
        with self._lock:
            run_id = str(next(self._ids))
        run = Run(run_id, lambda recorder, sleep: self._open(text, config, recorder, sleep), stream,
                  partition=partition, pages=pages, mask=self.mask(config), inner_transport=inner)
        with self._lock:
            self.runs[run_id] = run
            finished = [key for key, kept in self.runs.items() if kept.status != "running"]
            for key in finished[:max(0, len(self.runs) - KEPT_RUNS)]:  # the oldest finished reads go
                del self.runs[key]
        run.start()
        return {"run_id": run_id}

    def run(self, run_id: str) -> Run:
        with self._lock:
            found = self.runs.get(run_id)
        if found is None:
            raise ApiError(404, f"no test read `{run_id}` in this session; start one with POST /api/test-read")
        return found

    def infer(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body, "manifest_text")
        config = self._config_from(body)
        stream = _text(body, "stream")
        run = self.run(str(body.get("run_id")))
        if run.stream != stream:
            raise ApiError(409, f"test read {run.id} read `{run.stream}`, not `{stream}`; infer `{stream}`'s schema "
                                "from a test read of it")
        records = run.records_read()
        if not records:
            raise ApiError(409, f"test read {run.id} has no records of `{stream}` yet; infer after a test read "
                                "that returned records")
        connector = self._connector(text, config)
        declared, merged, added = schema_change(connector, stream, records)
        target = schema_target(connector, self.manifest_path, stream)
        where = self._relative(target.file) if target.kind == "file" else \
            f"{self._relative(target.file)}:{target.line}:{target.column}" if target.kind == "inline" else stream
        return {"declared": declared, "merged": merged, "added": added,
                "diff": schema_diff(declared, merged, where) if added else "",
                "target": {"kind": target.kind, "file": self._relative(target.file) if target.file else "",
                           "note": target.note}}

    def _connector(self, text: str, config: Mapping[str, Any]) -> Any:
        try:
            return self._open(text, config)
        except FrameworkError as exc:
            raise ApiError(422, self.mask(config)(str(exc))) from None

    def _relative(self, path: str) -> str:
        return os.path.relpath(path, self.base_dir) if path else ""

    def accept_schema(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body, "manifest_text")
        stream = _text(body, "stream")
        schema = body.get("schema")
        if not isinstance(schema, dict):
            raise ApiError(400, "`schema` must be a JSON Schema object (the `merged` schema /api/infer gave)")
        config = self._config_from(body)
        target = schema_target(self._connector(text, config), self.manifest_path, stream)
        if target.kind == "inline":
            try:
                return {"manifest_text": edit_inline(text, [(target, schema)], self.manifest_path)}
            except LookupError as exc:
                raise ApiError(409, str(exc)) from None
        if target.kind == "file":
            return {"manifest_text": text, "schema_file": self._relative(target.file), "pending": True}
        raise ApiError(409, f"the schema of `{stream}` cannot be written: {target.note}")

    def _inside(self, relative: str) -> str:
        path = os.path.abspath(os.path.join(self.base_dir, relative))
        if os.path.commonpath([path, self.base_dir]) != self.base_dir or not path.endswith(".json"):
            raise ApiError(400, f"schema file {relative!r} is not a .json file in the manifest's folder "
                                f"({self.base_dir}); schema files are written beside the manifest only")
        return path

    def save(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body, "manifest_text")
        version = _text(body, "version")
        files = body.get("schema_files") or {}
        if not isinstance(files, dict) or not all(isinstance(s, dict) for s in files.values()):
            raise ApiError(400, "`schema_files` must map a schema file's path to its JSON Schema object")
        targets = {self._inside(str(name)): schema for name, schema in files.items()}
        with self._lock:
            on_disk = version_of(self.manifest_path)
            if on_disk != version:
                raise ApiError(409, f"{self.manifest_path} changed on disk since it was opened; nothing was "
                                    "saved: reload it (your edits are lost) or copy your text, reload and paste it")
            for path, schema in targets.items():
                write_schema_file(path, schema)
            os.makedirs(self.base_dir, exist_ok=True)
            if os.path.exists(self.manifest_path):
                shutil.copy2(self.manifest_path, self.manifest_path + ".bak")
            temporary = f"{self.manifest_path}.tmp-{os.getpid()}"
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.manifest_path)
            self.version = version_of(self.manifest_path)
            return {"version": self.version}


__all__ = ["KEPT_RUNS", "MAX_PAGES", "PLACEHOLDER", "ApiError", "Session", "version_of"]
