"""Lakehouse tables (Delta Lake, Apache Iceberg): a stream's Parquet files and its state in one commit.

`base.py` is the contract each table format meets; `delta.py` and `iceberg.py` meet it through
deltalake and pyiceberg (imported lazily: neither is needed unless `--format delta|iceberg` is asked for).
"""

from framework.tables.factory import open_table

__all__ = ["open_table"]
