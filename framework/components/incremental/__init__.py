"""Incremental reads: datetime windows, MinMaxDatetime bounds, the datetime cursor and the integer cursor.

Importing this package registers the builders of ``DatetimeBasedCursor``,
``MinMaxDatetime`` and ``IncrementingCountCursor`` with
:mod:`framework.components.context`. :data:`Cursor` is either runtime cursor: the
engine asks the same of both.
"""

from collections.abc import Sequence
from typing import Any, TypeAlias

from framework.components.incremental.count_cursor import CountCursor
from framework.components.incremental.datetime_cursor import DatetimeCursor
from framework.components.incremental.min_max import DEFAULT_FORMAT, MinMax, min_max_of
from framework.components.incremental.windows import MAX_WINDOWS, Step, datetime_windows
from framework.errors import ConfigError
from framework.values import replace

#: A stream's cursor at run time.
Cursor: TypeAlias = DatetimeCursor | CountCursor


def with_catalog_cursor_field(cursor: Cursor, catalog_field: Sequence[str] | None) -> Cursor:
    """``cursor`` reading the cursor field a configured catalog names, where its manifest allows that
    (``allow_catalog_defined_cursor_field``); as it is otherwise, or when the catalog names none (``[""]`` too).

    A nested field (a path of two names or more) is a :class:`~framework.errors.ConfigError`, as in Airbyte.
    """
    if not cursor.catalog_cursor_field or not catalog_field or not catalog_field[0]:
        return cursor
    if len(catalog_field) > 1:
        raise ConfigError(f"the configured catalog names the nested cursor field {list(catalog_field)!r}; "
                          "name one top-level field")
    changed: Any = replace(cursor, cursor_field=str(catalog_field[0]))
    return changed

__all__ = ["DEFAULT_FORMAT", "MAX_WINDOWS", "CountCursor", "Cursor", "DatetimeCursor", "MinMax", "Step",
           "datetime_windows", "min_max_of", "with_catalog_cursor_field"]
