"""A low-code connector framework: HTTP APIs described in YAML manifests, landed through Spark.

The curated public API::

    from framework import load_manifest, check_manifest, ManifestError

``load_manifest(path)`` returns the typed, frozen model of a manifest
(:class:`framework.models.DeclarativeSource`) or raises
:class:`ManifestError` with every problem found; ``check_manifest(path)``
returns the problems instead of raising. Errors all derive from
:class:`FrameworkError` (see :mod:`framework.errors`).

Nothing here imports pyspark; the Spark pipeline is imported only by the
commands that run it.
"""

from __future__ import annotations

from typing import Any

from framework.errors import (
    ConfigError,
    DatetimeFormatError,
    DurationError,
    FrameworkError,
    InterpolationError,
    ManifestError,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DatetimeFormatError",
    "DurationError",
    "FrameworkError",
    "InterpolationError",
    "ManifestError",
    "check_manifest",
    "load_manifest",
]


def __getattr__(name: str) -> Any:  # lazy: `import framework` stays cheap
    if name in ("check_manifest", "load_manifest"):
        from framework import manifest

        return getattr(manifest, name)
    raise AttributeError(name)
