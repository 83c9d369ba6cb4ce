"""The names a manifest template may read, as the declarative language defines them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Every top-level variable a manifest template may use. Which of them hold a
#: value depends on where the template sits (``record`` only in record
#: transformations, ``response`` only after a request, ...); a variable the
#: caller does not supply is *undefined*: it renders as an empty string and
#: evaluates to ``None``.
VARIABLES: tuple[str, ...] = (
    "config",
    "parameters",
    "stream_slice",
    "stream_interval",
    "stream_partition",
    "stream_state",
    "next_page_token",
    "response",
    "record",
    "headers",
    "last_record",
    "last_page_size",
    "creation_response",
    "polling_response",
    "download_target",
    "session_token",
    "property",
    "value",
    "path",
)

#: Variables that still work but that new manifests should not use, with the advice to give.
DEPRECATED_VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "stream_state": "`stream_state` is deprecated; read the cursor from "
        "`stream_interval` (for example `stream_interval['start_time']`) instead",
    }
)

#: Names filled from another variable when the caller does not supply them.
ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "stream_interval": "stream_slice",
        "stream_partition": "stream_slice",
    }
)
