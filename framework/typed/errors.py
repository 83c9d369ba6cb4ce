"""The error a stream schema raises when the sink cannot give its records one type."""

from __future__ import annotations

from framework.errors import ConfigError


class SchemaConflictError(ConfigError):
    """Two parts of a stream schema give one field types that cannot be merged.

    ``stream`` names the stream, ``field`` the field's path (``"."`` between
    names, ``"[]"`` for array items), ``first`` and ``second`` the two types.
    """

    def __init__(self, *, stream: str, field: str, first: str, second: str, hint: str | None = None):
        self.stream = stream
        self.field = field
        self.first = first
        self.second = second
        fix = hint or ("make the options of the union agree on this field's type in the stream schema, "
                       "or replace the union with a single schema")
        super().__init__(
            f"stream `{stream}`: field `{field}` has two types that cannot be merged: {first} and {second}; {fix}"
        )
