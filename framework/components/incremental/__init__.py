"""Incremental reads: datetime windows, MinMaxDatetime bounds, the datetime cursor and the integer cursor.

Importing this package registers the builders of ``DatetimeBasedCursor``,
``MinMaxDatetime`` and ``IncrementingCountCursor`` with
:mod:`framework.components.registry`. :data:`Cursor` is either runtime cursor: the
engine asks the same of both.
"""

from typing import TypeAlias

from framework.components.incremental.count_cursor import CountCursor
from framework.components.incremental.datetime_cursor import DatetimeCursor
from framework.components.incremental.min_max import DEFAULT_FORMAT, MinMax, min_max_of
from framework.components.incremental.windows import MAX_WINDOWS, Step, datetime_windows

#: A stream's cursor at run time.
Cursor: TypeAlias = DatetimeCursor | CountCursor

__all__ = ["DEFAULT_FORMAT", "MAX_WINDOWS", "CountCursor", "Cursor", "DatetimeCursor", "MinMax", "Step",
           "datetime_windows", "min_max_of"]
