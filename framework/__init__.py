"""A low-code connector framework: HTTP APIs described in YAML manifests, landed through Spark.

The curated public API::

    from framework import load_manifest, check_manifest, sync, read, ManifestError

``sync(manifest, config, output=..., ...)`` runs a sync as ``run-manifest`` does
and returns a typed :class:`~framework.api.report.SyncReport`; ``read(manifest,
config, ...)`` returns a Spark DataFrame per stream (docs/python-api.md).

``load_manifest(path)`` returns the typed, frozen model of a manifest
(:class:`framework.models.DeclarativeSource`) or raises
:class:`ManifestError` with every problem found; ``check_manifest(path)``
returns the problems instead of raising. Errors all derive from
:class:`FrameworkError` (see :mod:`framework.errors`).

Nothing here imports pyspark; the Spark pipeline is imported only by the
commands that run it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework.errors import (
    ConfigError,
    DatetimeFormatError,
    DurationError,
    FrameworkError,
    InterpolationError,
    ManifestError,
    SyncFailed,
)

if TYPE_CHECKING:
    from framework.api.read import read
    from framework.api.report import Progress, StreamSummary, SyncReport
    from framework.api.sync import sync
    from framework.manifest import CheckedManifest
    from framework.models import DeclarativeSource

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DatetimeFormatError",
    "DurationError",
    "FrameworkError",
    "InterpolationError",
    "ManifestError",
    "Progress",
    "StreamSummary",
    "SyncFailed",
    "SyncReport",
    "check_manifest",
    "load_manifest",
    "read",
    "sync",
]


def load_manifest(path: str) -> DeclarativeSource:
    """The typed source of the manifest at ``path``; raises :class:`ManifestError` when it has errors."""
    from framework import manifest  # here: every ``import framework.x`` runs this module, which stays cheap

    return manifest.load_manifest(path)


def check_manifest(path: str, strict: bool = False) -> CheckedManifest:
    """Read, resolve, type and check the manifest at ``path``; the problems are returned, not raised."""
    from framework import manifest  # here: every ``import framework.x`` runs this module, which stays cheap

    return manifest.check_manifest(path, strict)


#: The Python API's names, loaded on first use (``framework.sync`` brings the sync's modules, ``framework.read``
#: pyspark): ``import framework`` stays cheap.
_LAZY = {"sync": "framework.api.sync", "read": "framework.api.read", "Progress": "framework.api.report",
         "StreamSummary": "framework.api.report", "SyncReport": "framework.api.report"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'framework' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
