"""Raw batches: the input of the JSONL and CSV writers, records as JSON text with the envelope columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa

from framework.typed.columns import NULLED
from framework.typed.envelope import DATA, EXTRACTED_AT, GENERATION_ID, META, RAW_ID
from framework.typed.values import SERIALIZATION_ERROR, non_finite_fields

#: The columns of a raw batch, the input of the JSONL and CSV writers.
RAW_SCHEMA = pa.schema([
    (RAW_ID, pa.string()),
    (EXTRACTED_AT, pa.timestamp("ms", tz="UTC")),
    (META, pa.string()),
    (GENERATION_ID, pa.int64()),
    (DATA, pa.string()),
])



def raw_batch(data: Sequence[Any], raw_ids: Sequence[str] | pa.Array, extracted_at_ms: int | Sequence[int],
              generation_id: int, *, sync_id: int = 0,
              metas: Sequence[str | None] | None = None) -> pa.RecordBatch:
    """A batch of :data:`RAW_SCHEMA` for the JSONL and CSV writers.

    ``data`` holds the records as JSON text (str or bytes, used as they are) or
    as JSON values (serialized here). ``raw_ids`` may be an Arrow string array.
    ``extracted_at_ms`` may be one value for all rows. ``metas`` are the
    ``_airbyte_meta`` JSON texts; by default every row gets
    ``{"sync_id": <sync_id>, "changes": []}``.
    """
    n = len(data)
    texts: list[Any] = []
    nulled: dict[int, list[str]] = {}  # rows whose NaN or Infinity JSON text writes as null
    for row, record in enumerate(data):
        if isinstance(record, (str, bytes, bytearray)) or record is None:
            texts.append(record)
            continue
        text = orjson.dumps(record)
        texts.append(text)
        if b"null" in text:
            fields = non_finite_fields(record)
            if fields:
                nulled[row] = fields
    at = pa.array([extracted_at_ms] * n if isinstance(extracted_at_ms, int) else list(extracted_at_ms), pa.int64())
    if metas is None:
        metas = [f'{{"sync_id":{int(sync_id)},"changes":[]}}'] * n
    if nulled:
        metas = _with_nulled(list(metas), nulled, sync_id)
    ids = raw_ids if isinstance(raw_ids, pa.Array) else pa.array(list(raw_ids), pa.string())
    return pa.RecordBatch.from_arrays(
        [ids, at.cast(RAW_SCHEMA.field(EXTRACTED_AT).type), pa.array(list(metas), pa.string()),
         pa.repeat(pa.scalar(generation_id, pa.int64()), n), pa.array(texts, pa.string())],
        schema=RAW_SCHEMA,
    )


def _with_nulled(metas: list[str | None], nulled: dict[int, list[str]], sync_id: int) -> list[str | None]:
    """``metas`` with a NULLED change for each NaN or Infinity (JSON has neither: the text holds null)."""
    for row, fields in nulled.items():
        given = metas[row]
        meta: dict[str, Any] = orjson.loads(given) if given else {"sync_id": int(sync_id), "changes": []}
        changes: list[Any] = meta.setdefault("changes", [])
        changes.extend({"field": field, "change": NULLED, "reason": SERIALIZATION_ERROR} for field in fields)
        metas[row] = orjson.dumps(meta).decode()
    return metas
