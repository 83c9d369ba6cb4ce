"""Spark: the session, the pipeline that lands streams as files, its tasks, and the DataFrame reader.

pyspark is imported by these modules only, and only by the commands that run on
Spark: ``validate-manifest`` and protocol mode never load it.
"""
