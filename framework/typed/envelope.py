"""The envelope columns around every landed record (Airbyte's S3 destination 1.0): their names, once.

Plain names only (no pyarrow), so every module that reads or writes landed
files can import them: the typed batches (:mod:`framework.typed.arrow`), the
file formats, normalization and CDC.
"""

from __future__ import annotations

RAW_ID = "_airbyte_raw_id"
EXTRACTED_AT = "_airbyte_extracted_at"
GENERATION_ID = "_airbyte_generation_id"
META = "_airbyte_meta"
#: The record as JSON text: a column of raw batches, and of JSONL and CSV files without flattening.
DATA = "_airbyte_data"

#: What Airbyte's own columns start with: a field of a record never becomes a column of that name by itself
#: (the ``evolve`` schema drift policy leaves such fields out).
RESERVED_PREFIX = "_airbyte_"
#: The envelope in the order of typed batches, Parquet and Avro.
ENVELOPE_NAMES = (RAW_ID, EXTRACTED_AT, GENERATION_ID, META)
#: The envelope in the order the text formats (JSONL, CSV) write it.
TEXT_ENVELOPE = (RAW_ID, EXTRACTED_AT, META, GENERATION_ID)

__all__ = ["DATA", "ENVELOPE_NAMES", "EXTRACTED_AT", "GENERATION_ID", "META", "RAW_ID", "RESERVED_PREFIX",
           "TEXT_ENVELOPE"]
