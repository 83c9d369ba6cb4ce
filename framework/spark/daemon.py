"""Spark's Python worker daemon, with the framework imported once, before it forks the workers.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``)
and forks a Python worker from it for each task slot. With PySpark's own
daemon every worker imports the framework (pydantic models, jinja2, pyarrow,
the typing code) on its first task: about a second of CPU per worker, paid by
every worker at once when a sync starts. This daemon imports what a task
needs first, then runs PySpark's: each forked worker starts with it
imported. :func:`framework.spark.session.spark_session` names it in
``spark.python.daemon.module``; the executors need the framework installed
(they do anyway, to run a task). Spark's zips of pyspark and py4j, first on the
workers' path, give way to the same versions installed with the framework
(:func:`installed_over_zips`): imported from a zip, their modules were
compiled from source by every daemon.
"""

from __future__ import annotations

import os
import sys
import zipfile
from importlib.machinery import PathFinder

from framework.collector import frozen_as_loaded


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

    frozen_as_loaded()  # what is loaded now stays out of the workers' garbage collections


#: Spark puts these before everything else on its Python workers' path (``PythonUtils.sparkPythonPath``): its
#: home's copies of pyspark and py4j, as zip files, file name -> the package in it.
_SPARK_ZIPS = {"pyspark.zip": "pyspark", "py4j-": "py4j"}


def installed_over_zips(path: list[str]) -> list[str]:
    """``path`` (``sys.path``) without Spark's zip of pyspark (of py4j) where this interpreter has the same
    version installed, so that it is imported from there: Python keeps no compiled code of a module imported
    from a zip, so every daemon compiled pyspark's and py4j's sources again (0.45 CPU-s of its start, measured
    on a 2-core machine, and again in each worker for the modules it imports later). Same version: the
    package's ``version.py`` is the same text in the zip and installed; else the zip stays, as Spark put it."""
    kept = list(path)
    others = [p for p in path if not p.endswith((".zip", ".jar"))]  # where an installed package is found
    for entry in path:
        name = os.path.basename(entry)
        package = next((p for prefix, p in _SPARK_ZIPS.items() if name.startswith(prefix) and name.endswith(".zip")),
                       None)
        if package is None:
            continue
        spec = PathFinder.find_spec(package, others)
        if spec is None or not spec.submodule_search_locations:
            continue
        try:
            with zipfile.ZipFile(entry) as archive:
                zipped = archive.read(f"{package}/version.py")
            with open(os.path.join(list(spec.submodule_search_locations)[0], "version.py"), "rb") as handle:
                installed = handle.read()
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        if zipped == installed:
            kept.remove(entry)
    return kept


if __name__ == "__main__":
    sys.path[:] = installed_over_zips(sys.path)  # before anything imports pyspark; the forked workers inherit it
    try:
        _preload()
    except Exception:  # noqa: BLE001 - a worker that cannot import it says why on its first task
        pass
    from pyspark.daemon import manager

    manager()
