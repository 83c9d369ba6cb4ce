"""The framework's one exception hierarchy.

Everything the framework raises on purpose derives from :class:`FrameworkError`,
so a caller can catch that one class. The subclasses say *what* went wrong::

    FrameworkError
    ├── ManifestError          the manifest is invalid; carries every Diagnostic
    ├── ConfigError            the connector config does not fit the spec
    ├── InterpolationError     a template failed to compile, render or convert
    ├── DatetimeFormatError    a datetime format or value could not be used
    ├── DurationError          an ISO 8601 duration could not be parsed
    ├── StateError             a saved state does not fit the stream it is for
    ├── SyncFailed             framework.sync: a stream failed; carries the sync's report
    └── ReadError              a stream could not be read (names stream, request, place)
        ├── TransportError     the connection failed or timed out, retries exhausted
        ├── HttpStatusError    the API answered with an error status
        ├── DecodeError        a response body is not what the manifest expects
        │   └── UnreadableBodyError  the body could not be read at all (retried like a 5xx)
        ├── PaginationLoopError  the API sent the same page token twice
        └── AuthenticationError  credentials were refused or could not be obtained

Messages never contain secret values: code that formats a config value into a
message masks it first (see ``framework.manifest.config_check``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from framework.diagnostics import Diagnostic


def place_note(place: str) -> str:
    """``manifest: file:line:col``: how a message names the manifest place it is about."""
    return f"manifest: {place}"


def place_suffix(place: str | None) -> str:
    """`` (manifest: file:line:col)`` to append to a message, or nothing when the place is unknown."""
    return f" ({place_note(place)})" if place else ""


class FrameworkError(Exception):
    """Base class of every error the framework raises on purpose."""


class StorageError(FrameworkError):
    """Output or state could not be written (a full disk, a lost permission): what was committed before stands."""


class SyncFailed(FrameworkError):
    """:func:`framework.sync` ended with a stream (or its normalization) failed; ``report`` is the sync's
    :class:`~framework.api.report.SyncReport`: what was committed stands, and the next sync continues from it."""

    def __init__(self, message: str, report: Any):
        super().__init__(message)
        self.report = report


class ManifestError(FrameworkError):
    """A manifest could not be loaded; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        head = errors[0].format() if errors else "invalid manifest"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(head + more)


class ConfigError(FrameworkError):
    """The connector config is missing a value or has one of the wrong shape."""


class InterpolationError(FrameworkError):
    """A template could not be compiled, rendered, or converted to its declared type."""

    def __init__(self, message: str, template: str | None = None):
        self.template = template
        super().__init__(message)


class DatetimeFormatError(FrameworkError, ValueError):
    """A datetime format string is invalid, or a value does not match any format."""


class DurationError(FrameworkError, ValueError):
    """A string is not an ISO 8601 duration such as ``P1D`` or ``PT1H``."""


class StateError(FrameworkError, ValueError):
    """A saved state (from a file or from Airbyte) does not fit the stream it is for."""


class ForeignStateError(StateError):
    """A saved state has none of the keys the stream's cursor reads: another connector's, or another version's."""


FailureType = str  # "system_error", "config_error" or "transient_error", as in Airbyte's TRACE messages


class ReadError(FrameworkError):
    """A stream could not be read.

    ``stream`` names the stream, ``request`` describes the request that failed
    (method and URL, secrets masked) and ``place`` the manifest place
    (``file:line:col``) of the component involved, where known. Those are
    filled in as the error travels up from the request to the stream, so the
    message a user sees carries all three. ``failure_type`` follows Airbyte:
    ``config_error`` when the user must change something (a bad key, say),
    ``transient_error`` when a retry later may succeed, ``system_error`` else.
    """

    default_failure_type: FailureType = "system_error"

    def __init__(self, message: str, *, stream: str | None = None, request: str | None = None,
                 place: str | None = None, failure_type: FailureType | None = None):
        self.reason = message
        self.stream = stream
        self.request = request
        self.place = place
        self.failure_type = failure_type or self.default_failure_type
        super().__init__(message)

    def with_context(self, *, stream: str | None = None, request: str | None = None,
                     place: str | None = None) -> ReadError:
        """Fill in what is not known yet (the first value set wins) and return ``self``."""
        self.stream = self.stream or stream
        self.request = self.request or request
        self.place = self.place or place
        return self

    def __str__(self) -> str:
        head = f"stream `{self.stream}`: " if self.stream else ""
        tail = []
        if self.request:
            tail.append(f"request: {self.request}")
        if self.place:
            tail.append(place_note(self.place))
        return head + self.reason + (f" ({'; '.join(tail)})" if tail else "")


class TransportError(ReadError):
    """The connection failed or timed out, and retries did not help."""

    default_failure_type = "transient_error"


class HttpStatusError(ReadError):
    """The API answered with a status the manifest treats as a failure."""

    def __init__(self, message: str, *, status: int | None = None, **kwargs):
        self.status = status
        super().__init__(message, **kwargs)


class DecodeError(ReadError):
    """A response body could not be decoded (not JSON, say) or lacks what the manifest reads."""


class UnreadableBodyError(DecodeError):
    """A response body the decoder could not read at all (truncated, an HTML page sent with 200):
    retried like a 5xx, and the stream fails with it only when the retries are spent."""


class PaginationLoopError(ReadError):
    """The API returned a page token it had already returned: reading on would never end."""


class AuthenticationError(ReadError):
    """Credentials were refused, or a token could not be obtained."""

    default_failure_type = "config_error"
