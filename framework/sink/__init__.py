"""The sink: where typed records land as files (Parquet, Avro, JSONL, CSV) on a local disk or S3.

``formats`` turns Arrow batches into file bytes, ``storage`` puts bytes under
object keys atomically, ``layout`` names the objects like Airbyte's S3
destination, and ``files`` rolls a stream's output over several objects.
"""
