"""Basic normalization: landed raw records into typed, un-nested tables, on Spark.

* :mod:`.naming`: table and column names by dialect (pure);
* :mod:`.plan`: the catalog as a plan of tables and typed columns (pure);
* :mod:`.raw`, :mod:`.files`: landed files as raw DataFrames, read on the executors;
* :mod:`.transform`: typing, un-nesting and hashids as Spark expressions;
* :mod:`.tables`: every table of a stream from one pass over its records;
* :mod:`.history`: SCD history and deduplication;
* :mod:`.targets`: where tables go (Parquet folders, PostgreSQL);
* :mod:`.runner`: :func:`normalize`, stream by stream, incremental or full.

Nothing here imports pyspark at module import time.
"""
