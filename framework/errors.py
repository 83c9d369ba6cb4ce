"""The framework's one exception hierarchy.

Everything the framework raises on purpose derives from :class:`FrameworkError`,
so a caller can catch that one class. The subclasses say *what* went wrong::

    FrameworkError
    ├── ManifestError          the manifest is invalid; carries every Diagnostic
    ├── ConfigError            the connector config does not fit the spec
    ├── InterpolationError     a template failed to compile, render or convert
    ├── DatetimeFormatError    a datetime format or value could not be used
    └── DurationError          an ISO 8601 duration could not be parsed

Messages never contain secret values: code that formats a config value into a
message masks it first (see ``framework.manifest.config_check``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from framework.diagnostics import Diagnostic


class FrameworkError(Exception):
    """Base class of every error the framework raises on purpose."""


class ManifestError(FrameworkError):
    """A manifest could not be loaded; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: Sequence["Diagnostic"]):
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
