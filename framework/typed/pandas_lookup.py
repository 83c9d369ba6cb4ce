"""When pyarrow looks for pandas: settled once per process, before the first batch is built.

The first ``pa.array`` of a Python list in a process asks whether the list
is a pandas object, and to answer it pyarrow imports pandas (0.1 to 0.15 s of
CPU on a 2-core machine; pyspark's extras install it). The answer is then
kept for the process. The framework gives pyarrow Python lists with a type,
Arrow arrays and tables, never a pandas object, so for its own work the
import buys nothing, and it was paid on the critical path of every sync: by
the driver on its first page, and by every Python worker Spark forks, on its
first task.

* :func:`settle_without_pandas` makes that first lookup with pandas hidden:
  pyarrow notes that there is no pandas and does not import it for typed
  conversions. pandas stays importable, and pyarrow's own pandas functions
  (``Table.to_pandas``, ``Table.from_pandas``) import it when called. What
  changes is ``pa.array(a_pandas_series)`` before any of those: the series is
  read as a plain sequence (a float NaN stays NaN instead of becoming null).
  So it is for a process that runs the framework's code only: run-manifest's
  driver when the manifest loads no Python code of its own.
* :func:`settle_with_pandas` makes the lookup now, pandas imported: for the
  Python worker daemon (``framework.spark.daemon``), before it forks the
  workers, which may run a manifest's own Python code; each forked worker
  then starts with the answer instead of importing pandas itself.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _HiddenPandas:
    """A finder, first on ``sys.meta_path`` for a moment, for which pandas does not exist."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name == "pandas":
            raise ImportError("pandas is hidden while pyarrow settles its pandas lookup",
                              name=name)
        return None


def _first_conversion() -> None:
    import pyarrow as pa

    pa.array([0], pa.int64())  # a typed list: where pyarrow looks (pyarrow/array.pxi, _is_array_like)


def settle_without_pandas() -> bool:
    """Settle pyarrow's lookup with pandas hidden, unless pandas is already imported (then it is too late to
    matter and pyarrow may already use it); whether it did."""
    if "pandas" in sys.modules:
        return False
    finder = _HiddenPandas()
    sys.meta_path.insert(0, finder)
    try:
        _first_conversion()
    finally:
        sys.meta_path.remove(finder)
    return True


def settle_with_pandas() -> None:
    """Settle pyarrow's lookup now, importing pandas if it is installed."""
    _first_conversion()


__all__ = ["settle_with_pandas", "settle_without_pandas"]
