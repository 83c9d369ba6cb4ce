"""framework.components.context: builders found through the catalog, each module imported on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from builder_modules import OPTIONAL as _OPTIONAL

REPO = Path(__file__).resolve().parents[2]


_PLAIN = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://api.example.com", path: /items%s}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
check: {type: CheckStream, stream_names: [items]}
"""
_BEARER = ", authenticator: {type: BearerAuthenticator, api_token: \"{{ config.token }}\"}"


def _modules_after_building(tmp_path: Path, manifest: str) -> list[str]:
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    program = ("import json, sys\n"
               "from framework.engine.connector import open_connector\n"
               f"connector = open_connector({str(path)!r}, {{'token': 't'}})\n"
               "assert list(connector.streams) == ['items']\n"
               "print(json.dumps(sorted(set(sys.modules) & set(sys.argv[1:]))))\n")
    done = subprocess.run([sys.executable, "-c", program, *_OPTIONAL],
                          capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_plain_stream_loads_none_of_them_and_an_authenticator_loads_its_own(tmp_path):
    assert _modules_after_building(tmp_path, _PLAIN % "") == []
    # the bearer token's family and the module it builds on, not the OAuth, JWT or session-token ones
    assert _modules_after_building(tmp_path, _PLAIN % _BEARER) == ["framework.components.http.auth.base",
                                                                   "framework.components.http.auth.static"]
