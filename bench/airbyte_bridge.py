"""Records/s of a custom transformation: natively, as an airbyte-built class, and through airbyte-cdk's reader.

    .venv-airbyte/bin/python bench/airbyte_bridge.py --records 200000 [--runs 3]

Needs airbyte-cdk (``make test-airbyte`` builds ``.venv-airbyte`` with the
``airbyte`` extra). Serves ``bench/api_server.py`` (pages of 1000) and reads
its one stream in this process three ways, the same transformation on every
record (``amount_cents`` and ``tenant`` added):

* ``ours + plain class``: the framework's engine reads the pages; a plain
  class's ``transform(record, config, stream_state, stream_slice)`` is called
  on each record, as the runtime's ``CustomTransformation`` adapter calls it;
* ``ours + airbyte-built class``: the same, with a subclass of airbyte-cdk's
  ``RecordTransformation`` built by airbyte-cdk's factory through the bridge
  (:func:`framework.components.custom.airbyte.build_airbyte_component`), the slice handed over as
  airbyte-cdk's ``StreamSlice`` as the adapter hands it;
* ``airbyte-cdk reader (bridge)``: the stream read by airbyte-cdk's declarative
  source a partition at a time (:class:`framework.components.custom.airbyte.AirbyteStream`),
  the transformation in the manifest: what a stream with a ``CustomRetriever``
  costs.

Prints a Markdown table (best of ``--runs``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from harness import ApiServer, bench_manifest

from framework.components.custom import airbyte as bridge
from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.models.custom import CUSTOM_KINDS

COMPONENTS = '''
from dataclasses import dataclass
from typing import Any, Mapping

from airbyte_cdk.sources.declarative.transformations import RecordTransformation


class PlainCents:
    def __init__(self, config):
        self.config = config

    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record["amount_cents"] = round(record["amount"] * 100)
        record["tenant"] = self.config["tenant"]


@dataclass
class AirbyteCents(RecordTransformation):
    config: Mapping[str, Any]

    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record["amount_cents"] = round(record["amount"] * 100)
        record["tenant"] = self.config["tenant"]
'''


def register_components(folder: Path) -> Any:
    """components.py written and registered as the module ``components`` (what the loader does)."""
    path = folder / "components.py"
    path.write_text(COMPONENTS)
    spec = importlib.util.spec_from_file_location("components", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["components"] = module
    spec.loader.exec_module(module)
    return module


def ours(manifest_path: str, config: dict, transform: Callable[..., Any]) -> int:
    """Read the stream with the framework's engine, calling ``transform`` on each record as the adapter does."""
    connector = open_connector(manifest_path, config)
    stream = connector.streams["records"]
    sync = open_sync(connector, stream, None, incremental=False)
    count = 0
    for unit in sync.plan():
        view = unit.slice.view()
        for page in sync.read(unit):
            for record in page:
                transform(record, config=config, stream_state={}, stream_slice=view)
            count += len(page)
        sync.done(unit)
    return count


def airbyte_call(transform: Callable[..., Any]) -> Callable[..., Any]:
    """``transform`` called as the adapter calls an airbyte-built object: the slice as airbyte-cdk's type."""
    to_airbyte_slice = bridge.to_airbyte_slice

    def call(record: dict, config: Any = None, stream_state: Any = None, stream_slice: Any = None) -> Any:
        return transform(record, config=config, stream_state=stream_state, stream_slice=to_airbyte_slice(stream_slice))

    return call


def through_airbyte(manifest: dict, config: dict) -> int:
    """Read the stream with airbyte-cdk's reader, a unit at a time (the transformation is in the manifest)."""
    stream = bridge.AirbyteStream(manifest, config, "records")
    count = 0
    for unit in stream.units():
        latest = None
        for page, page_latest in stream.read(unit):
            count += len(page)
            latest = page_latest
        stream.finish(unit, latest)
    return count


def best(runs: int, read: Callable[[], int]) -> tuple[int, float]:
    timings = []
    count = 0
    for _ in range(runs):
        started = time.perf_counter()
        count = read()
        timings.append(time.perf_counter() - started)
    return count, min(timings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not bridge.airbyte_available():
        print(f"needs airbyte-cdk: {bridge.AIRBYTE_EXTRA} (or make test-airbyte, then .venv-airbyte/bin/python)")
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-airbyte-"))
    module = register_components(folder)
    manifest = yaml.safe_load(bench_manifest())
    manifest_path = folder / "manifest.yaml"
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    bridged = yaml.safe_load(bench_manifest())
    bridged["streams"][0]["transformations"] = [{"type": "CustomTransformation",
                                                 "class_name": "components.AirbyteCents"}]
    rows = []
    with ApiServer(args.records) as api:
        config = {"base_url": api.url, "tenant": "acme"}
        plain = module.PlainCents(config)
        built = bridge.build_airbyte_component(
            CUSTOM_KINDS["CustomTransformation"].model_validate(
                {"type": "CustomTransformation", "class_name": "components.AirbyteCents"}), config)
        assert bridge.is_airbyte_class(type(built))
        modes: list[tuple[str, Callable[[], int]]] = [
            ("ours + plain class", lambda: ours(str(manifest_path), config, plain.transform)),
            ("ours + airbyte-built class", lambda: ours(str(manifest_path), config, airbyte_call(built.transform))),
            ("airbyte-cdk reader (bridge)", lambda: through_airbyte(bridged, config)),
        ]
        for name, read in modes:
            count, seconds = best(args.runs, read)
            if count != args.records:
                raise SystemExit(f"{name}: read {count} records, not {args.records}")
            rows.append((name, count, seconds))
    print(f"{args.records} records, pages of 1000, best of {args.runs}\n")
    print("| mode | records | seconds | records/s |")
    print("| --- | ---: | ---: | ---: |")
    for name, count, seconds in rows:
        print(f"| {name} | {count} | {seconds:.2f} | {count / seconds:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
