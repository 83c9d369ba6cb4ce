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

from typing import TYPE_CHECKING

from framework.errors import (
    ConfigError,
    DatetimeFormatError,
    DurationError,
    FrameworkError,
    InterpolationError,
    ManifestError,
)

if TYPE_CHECKING:
    from framework.manifest import CheckedManifest
    from framework.models import DeclarativeSource

# The one place the version is written: pyproject.toml reads it from here when the wheel is built
# (`[tool.setuptools.dynamic]`), so the installed metadata (`pip show`, importlib.metadata) says the same.
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


def load_manifest(path: str) -> DeclarativeSource:
    """The typed source of the manifest at ``path``; raises :class:`ManifestError` when it has errors."""
    from framework import manifest  # here: every ``import framework.x`` runs this module, which stays cheap

    return manifest.load_manifest(path)


def check_manifest(path: str, strict: bool = False) -> CheckedManifest:
    """Read, resolve, type and check the manifest at ``path``; the problems are returned, not raised."""
    from framework import manifest  # here: every ``import framework.x`` runs this module, which stays cheap

    return manifest.check_manifest(path, strict)
