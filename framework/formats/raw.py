"""Raw batches: the input of the JSONL and CSV writers, records as JSON text with the envelope columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pyarrow as pa

from framework.typed.envelope import DATA, EXTRACTED_AT, GENERATION_ID, META, RAW_ID

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
    texts = [d if isinstance(d, (str, bytes, bytearray)) or d is None else orjson.dumps(d) for d in data]
    at = pa.array([extracted_at_ms] * n if isinstance(extracted_at_ms, int) else list(extracted_at_ms), pa.int64())
    if metas is None:
        metas = [f'{{"sync_id":{int(sync_id)},"changes":[]}}'] * n
    ids = raw_ids if isinstance(raw_ids, pa.Array) else pa.array(list(raw_ids), pa.string())
    return pa.RecordBatch.from_arrays(
        [ids, at.cast(RAW_SCHEMA.field(EXTRACTED_AT).type), pa.array(list(metas), pa.string()),
         pa.repeat(pa.scalar(generation_id, pa.int64()), n), pa.array(texts, pa.string())],
        schema=RAW_SCHEMA,
    )
