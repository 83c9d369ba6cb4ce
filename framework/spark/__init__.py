"""Spark: the session, the pipeline that lands streams as files, its tasks, and the DataFrame reader.

pyspark is imported by these modules only, and only by the commands that run on
Spark: ``validate-manifest`` and protocol mode never load it.
"""

from __future__ import annotations

import importlib.util

from framework.errors import ConfigError

#: What Spark mode needs beyond the core install (the ``spark`` extra), by import name.
SPARK_EXTRA = ("pyspark", "pyarrow", "pandas", "fastavro", "boto3")


def require_spark_extra(command: str = "run-manifest") -> None:
    """Raise a :class:`ConfigError` naming the fix when the ``spark`` extra is not installed."""
    missing = [name for name in SPARK_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"{command} on Spark needs the `spark` extra, which is not installed (missing: "
                          f"{', '.join(missing)}); fix: pip install 'manifest-framework[spark]' (validate-manifest "
                          f"and run-manifest --protocol work without it)")


__all__ = ["SPARK_EXTRA", "require_spark_extra"]
