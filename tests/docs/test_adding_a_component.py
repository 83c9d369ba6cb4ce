"""docs/architecture.md's "How to add a component", followed on a toy pagination strategy.

A copy of the package gets exactly the three edits the page names (the model in
its models module, the runtime and its ``@builds`` builder in its components
module, one catalog line) and nothing else; then, in a fresh interpreter on that
copy, a manifest using the new type validates and reads its pages through the
new strategy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"

MODEL = '''

class StepIncrement(Component):
    """Pages numbered 0, step, 2*step, ...; an empty page is the last."""

    type: Literal["StepIncrement"] = spec("Component type.", "StepIncrement", "StepIncrement")
    step: int = spec("How far apart the page numbers are.", 2, 1)


'''

RUNTIME = '''

class StepStrategy(Struct, frozen=True):
    """Page numbers ``step`` apart, from 0; an empty page is the last."""

    step: int
    checks_loops = False

    def first(self) -> tuple[Any, Any]:
        return 0, 0

    def request_page_size(self, state: Any) -> int | None:
        return None

    def following(self, state: int, response: HttpResponse, records: list, variables: Mapping[str, Any],
                  token: Any) -> tuple[Any, Any] | None:
        if not records:
            return None
        return state + self.step, state + self.step


@builds("StepIncrement")
def build_step_strategy(model: Any, ctx: BuildContext, path: tuple) -> StepStrategy:
    return StepStrategy(model.step)
'''

CATALOG_LINE = '    "StepIncrement": built("pagination:StepIncrement", "pagination:build_step_strategy"),\n'

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [items]}
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://api.example.test", path: /items}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: StepIncrement, step: 3}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
"""

PROGRAM = """
import io, json, sys
from framework.components.http.transport import FunctionTransport
from framework.engine.connector import open_connector
from framework.manifest import check_manifest
from framework.engine.selection import select_streams
from framework.protocol.read import read

checked = check_manifest(sys.argv[1])
assert checked.source is not None and not checked.diagnostics, checked.diagnostics
pages = {"0": [{"id": 1}], "3": [{"id": 2}, {"id": 3}], "6": []}
transport = FunctionTransport(lambda request: (200, {}, {"data": pages[dict(request.params)["page"]]}))
connector = open_connector(sys.argv[1], {}, transport=transport)
out = io.BytesIO()
read(connector, select_streams(connector.streams, None), {}, out, io.StringIO())
records = [json.loads(line)["record"]["data"] for line in out.getvalue().splitlines() if b'"RECORD"' in line]
print(json.dumps({"pages": [dict(request.params)["page"] for request in transport.requests], "records": records}))
"""


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split("## How to add a component", 1)[1].split("\n## ", 1)[0]


def _insert_before(path: Path, marker: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(marker) == 1, f"{path}: {marker!r} is not there once"
    path.write_text(source.replace(marker, text.lstrip("\n") + marker), encoding="utf-8")


def test_the_page_names_three_places_to_touch():
    section = _section()
    for place in ("framework/models/", "framework/components/", "framework/catalog.py"):
        assert place in section, f"'How to add a component' does not say to touch {place}"


def test_a_new_pagination_strategy_takes_the_model_the_component_and_one_catalog_line(tmp_path):
    copy = tmp_path / "framework"
    shutil.copytree(REPO / "framework", copy, ignore=shutil.ignore_patterns("__pycache__"))
    models = copy / "models" / "pagination.py"
    _insert_before(models, "PaginationStrategy = Annotated[", MODEL)
    source = models.read_text(encoding="utf-8")
    union = re.search(r"PaginationStrategy = Annotated\[\s*([^,\]]+?)(?=,\s*Field)", source, re.S)
    assert union is not None
    models.write_text(source.replace(union.group(1), union.group(1).rstrip() + " | StepIncrement", 1),
                      encoding="utf-8")
    components = copy / "components" / "pagination.py"
    components.write_text(components.read_text(encoding="utf-8") + RUNTIME, encoding="utf-8")
    _insert_before(copy / "catalog.py", "    # partitions\n", CATALOG_LINE)

    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), str(manifest)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"pages": ["0", "3", "6"], "records": [{"id": 1}, {"id": 2}, {"id": 3}]}


def test_the_copy_is_what_runs(tmp_path):
    """Without the catalog line, the copied package refuses the toy type: the test above reads the copy."""
    copy = tmp_path / "framework"
    shutil.copytree(REPO / "framework", copy, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), str(manifest)], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode != 0
