"""Change data from API records: the realtime mode of the Replicant formats.

With ``format_type: replicant_csv`` (or ``replicant_json``) and ``mode:
realtime``, a sync does not write records but operations: ``I`` for a key not
seen before, ``U`` for a key whose values changed, ``D`` for a record marked
deleted or, in a full-refresh stream, a key gone from the new snapshot.

* :mod:`.plan`: :func:`realtime_stream`, the stream's :class:`ChangeStream`
  (fields, key, cursor, where everything goes); a stream without a primary
  key is refused with a :class:`~framework.errors.ConfigError`.
* :mod:`.staging`: the sync's tasks write their typed records under the
  stream's staging folder instead of the output (committed per group, so the
  state advances as for any format), and the apply reads them back.
* :mod:`.apply`: :func:`apply_changes` runs once the sync's groups are back:
  the records are joined with the previous image of the keys they touch on
  the executors, the operations and the touched buckets of the new image are
  written, and a pointer file commits both.
* :mod:`.ops`: deriving one change and rendering it as CSV or JSON (pure).
* :mod:`.render`: the same, a whole Arrow batch at a time (what the apply uses).
* :mod:`.buckets`: the image split into hash buckets of the key, so that an
  apply reads and writes only the buckets its records fall in.
* :mod:`.pointer`: the commit document.
"""


from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.cdc.apply import ApplyResult, apply_changes
    from framework.cdc.ops import Change, CursorInfo, OpCounts, derive
    from framework.cdc.plan import ChangeStream, is_realtime, realtime_stream
    from framework.cdc.pointer import Pointer, load_pointer

# Imported on first use: a task that stages records (``framework.cdc.staging``) needs none of the apply's
# modules, and the driver of a sync without change data none at all.
_HOME = {"ApplyResult": "apply", "apply_changes": "apply", "Change": "ops", "CursorInfo": "ops", "OpCounts": "ops",
         "derive": "ops", "ChangeStream": "plan", "is_realtime": "plan", "realtime_stream": "plan",
         "Pointer": "pointer", "load_pointer": "pointer"}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = ["ApplyResult", "Change", "ChangeStream", "CursorInfo", "OpCounts", "Pointer", "apply_changes", "derive",
           "is_realtime", "load_pointer", "realtime_stream"]
