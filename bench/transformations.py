"""What record transformations cost per record, next to typing the same page as Arrow (the Spark path).

Pages of records with camelCase keys, a nested object and an object to lift
go through each transformation page by page (``apply_page``, as the record
selector runs them), record by record (``apply``), and KeysToSnakeCase also
without its per-key cache; then ``RecordConverter.convert`` types the
snake-cased page as the Spark task does. Prints microseconds per record (the
fastest of several rounds)::

    .venv/bin/python bench/transformations.py [--records 2000] [--pages 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from framework.components.records.reshaping import (  # noqa: E402
    DpathFlattenFields,
    FlattenFields,
    KeysToLower,
    KeysToSnakeCase,
    snake_case,
)
from framework.typed import RecordConverter  # noqa: E402

VARIABLES: dict[str, Any] = {"config": {}, "parameters": {}}


def record(i: int) -> dict:
    found: dict[str, Any] = {f"fieldName{k}": (i * k if k % 3 else f"text {i} {k}") for k in range(16)}
    found["customerInfo"] = {"firstName": "A", "lastName": "B", "zipCode": str(i)}
    found["attributes"] = {"colorCode": "red", "sizeValue": i % 5}
    found["updatedAt"] = "2024-01-01T00:00:00Z"
    return found


def measure(label: str, body: bytes, records: int, pages: int, work: Callable[[list], Any],
            prepare: Callable[[bytes], list] = orjson.loads) -> None:
    best = float("inf")
    for _ in range(5):
        ready = [prepare(body) for _ in range(pages)]
        start = time.perf_counter()
        for page in ready:
            work(page)
        best = min(best, time.perf_counter() - start)
    print(f"{label:58s} {best / (pages * records) * 1e6:7.2f} us/record")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000, help="records per page")
    parser.add_argument("--pages", type=int, default=20, help="pages per round")
    args = parser.parse_args()
    body = orjson.dumps([record(i) for i in range(args.records)])
    n, p = args.records, args.pages

    def run(label: str, work: Callable[[list], Any], prepare: Callable[[bytes], list] = orjson.loads) -> None:
        measure(label, body, n, p, work, prepare)

    run("decoding the page (orjson), for scale", orjson.loads, prepare=lambda raw: raw)  # type: ignore[arg-type,return-value]
    snake, lower, flat = KeysToSnakeCase(), KeysToLower(), FlattenFields()
    lift = DpathFlattenFields(("attributes",), delete_origin_value=True, prefix="attr_")
    run("KeysToSnakeCase, per page (key cache)", lambda page: snake.apply_page(page, VARIABLES))
    uncached = snake_case.__wrapped__

    def rename(value: dict) -> dict:
        return {uncached(key): rename(inner) if type(inner) is dict else inner for key, inner in value.items()}

    run("KeysToSnakeCase, without the key cache", lambda page: [rename(r) for r in page])
    run("KeysToLower, per page", lambda page: lower.apply_page(page, VARIABLES))
    run("KeysToLower, record by record (apply)", lambda page: [lower.apply(r, VARIABLES) for r in page])
    run("FlattenFields, per page", lambda page: flat.apply_page(page, VARIABLES))
    run("DpathFlattenFields, per page", lambda page: lift.apply_page(page, VARIABLES))
    properties: dict[str, Any] = {snake_case(f"fieldName{k}"): {"type": ["null", "integer" if k % 3 else "string"]}
                                  for k in range(16)}
    properties["customer_info"] = {"type": "object", "properties": {
        "first_name": {"type": "string"}, "last_name": {"type": "string"}, "zip_code": {"type": "string"}}}
    properties["attributes"] = {"type": "object", "properties": {
        "color_code": {"type": "string"}, "size_value": {"type": "integer"}}}
    properties["updated_at"] = {"type": "string", "format": "date-time"}
    converter = RecordConverter.from_json_schema({"type": "object", "properties": properties}, stream="bench")
    run("RecordConverter.convert of the snake-cased page (Arrow)",
        lambda page: converter.convert(page, extracted_at_ms=0, generation_id=0, sync_id=0),
        prepare=lambda raw: snake.apply_page(orjson.loads(raw), VARIABLES))


if __name__ == "__main__":
    main()
