"""What is checked of a stream's table before a sync reads anything: a table that cannot take the stream's records
is bad input (one message naming the setting and the fix, exit 2), found before Spark starts and before any request.

* the table's place cannot be read (a wrong endpoint, no access): the output setting and the credentials;
* the place holds files but no table of the format (a Parquet output of earlier syncs, another table format);
* an existing table whose primary key columns are of another kind than the stream's (a text `id` in the table, an
  integer in the schema): another schema's table. Other columns of another kind are written in the table's type,
  values that do not fit nulled (:func:`framework.tables.columns.to_table_types`); new columns are added, nullable.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from framework.errors import ConfigError, FrameworkError
from framework.tables.base import Table
from framework.tables.columns import kind_of


def incompatible_columns(table_schema: pa.Schema, stored: pa.Schema) -> list[tuple[str, str, str]]:
    """(column, the table's kind, the stream's kind) of each column both have with kinds that differ."""
    found = []
    for field in stored:
        if field.name not in table_schema.names:
            continue
        have, want = kind_of(table_schema.field(field.name).type), kind_of(field.type)
        if have != want:
            found.append((field.name, have, want))
    return found


def check_table(table: Table, stored: pa.Schema, *, stream: str, format_name: str, setting: str,
                holds_files: bool, key_columns: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` when ``table`` cannot take the stream's records (see the module docs).

    ``stored`` is the stream's columns as the format stores them; ``holds_files`` whether the table's place holds
    any file already; ``setting`` names where the place comes from (``--output``, ``s3_bucket_path``)."""
    try:
        exists = table.exists()
        current = table.arrow_schema() if exists else None
    except FrameworkError as exc:
        raise ConfigError(f"stream {stream!r}: {exc} (from {setting})") from None
    if not exists:
        if holds_files:
            raise ConfigError(
                f"stream {stream!r}: {table.location} holds files but no {format_name} table (files of another "
                f"format, or another table format's); choose another {setting}, or move that folder away")
        return
    assert current is not None
    # a column of another kind is written in the table's type, values that do not fit nulled (as the S3
    # destination's typing does: framework.tables.columns.to_table_types); a primary key's cannot be
    wrong = [column for column in incompatible_columns(current, stored) if column[0] in key_columns]
    if not wrong:
        return
    listed = "; ".join(f"`{name}` is {have} in the table, {want} in the stream's schema" for name, have, want in wrong)
    what = "its primary key columns differ"
    raise ConfigError(
        f"stream {stream!r}: the {format_name} table at {table.location} holds another schema ({what}: {listed}); "
        f"nothing was read or committed. Choose another {setting} for this schema, or move the table away (a full "
        "refresh into a new table)")


__all__ = ["check_table", "incompatible_columns"]
