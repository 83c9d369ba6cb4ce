"""Spark's Python worker daemon, with the framework imported once, before it forks the workers.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``)
and forks a Python worker from it for each task slot. With PySpark's own
daemon every worker imports the framework (pydantic models, jinja2, pyarrow,
the typing code) on its first task: about a second of CPU per worker, paid by
every worker at once when a sync starts. This daemon imports what a task
needs first, then runs PySpark's: each forked worker starts with it
imported. :func:`framework.spark.session.spark_session` names it in
``spark.python.daemon.module``; the executors need the framework installed
(they do anyway, to run a task).
"""

from __future__ import annotations

import gc


def _preload() -> None:
    import pyarrow.parquet  # noqa: F401 - what the writers of most formats load on their first file
    import pyspark.worker  # noqa: F401 - the worker's own imports (the daemon imports it per task otherwise)

    import framework.spark.tasks  # noqa: F401 - what every task of a sync imports
    from framework.models.destination import DestinationSettings

    # Its validator waits for the models its fields name: built here once (with pydantic's plugin scan), not
    # by every forked worker's first task.
    DestinationSettings.model_rebuild()
    # pyarrow's first conversion imports pandas to ask whether its input is a pandas object: asked here once,
    # not by every forked worker on its first page (a task may run a manifest's own code, which may use pandas)
    from framework.typed.pandas_lookup import settle_with_pandas

    settle_with_pandas()

    gc.collect()
    gc.freeze()  # what is loaded now stays out of the workers' garbage collections


if __name__ == "__main__":
    try:
        _preload()
    except Exception:  # noqa: BLE001 - a worker that cannot import it says why on its first task
        pass
    from pyspark.daemon import manager

    manager()
