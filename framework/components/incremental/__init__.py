"""Incremental reads: datetime windows, MinMaxDatetime bounds and the datetime cursor.

Importing this package registers the builders of ``DatetimeBasedCursor`` and
``MinMaxDatetime`` with :mod:`framework.components.registry`.
"""

from framework.components.incremental.datetime_cursor import DatetimeCursor
from framework.components.incremental.min_max import DEFAULT_FORMAT, MinMax, min_max_of
from framework.components.incremental.windows import MAX_WINDOWS, Step, datetime_windows

__all__ = ["DEFAULT_FORMAT", "MAX_WINDOWS", "DatetimeCursor", "MinMax", "Step", "datetime_windows", "min_max_of"]
