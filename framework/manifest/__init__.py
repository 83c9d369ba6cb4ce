"""Loading a manifest: YAML with places, references, parameters, typed models, checks.

``check_manifest(path)`` never raises for a bad manifest: it returns every
problem found. ``load_manifest(path)`` returns the frozen
:class:`~framework.models.DeclarativeSource` or raises
:class:`~framework.errors.ManifestError` carrying those problems.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.diagnostics import Diagnostic
from framework.errors import ManifestError
from framework.manifest.build import build_source
from framework.manifest.checks import run_checks
from framework.manifest.components import Placement, Preparation
from framework.manifest.references import Origin, resolve_references
from framework.manifest.vouch import quick_build
from framework.manifest.yaml_source import SourceDocument, parse_text, read_document
from framework.models import DeclarativeSource

if TYPE_CHECKING:
    from framework.manifest.config_check import ConfigFile


class CheckedManifest(Struct, frozen=True):
    """The outcome of reading one manifest: the model (when valid) and every problem."""

    path: str
    source: DeclarativeSource | None
    diagnostics: tuple[Diagnostic, ...]
    data: Any = None  # the resolved, prepared mapping the model was built from
    placement: Placement | None = None

    def locate(self, path: tuple) -> str | None:
        """``file:line:col`` of a path in the resolved manifest (``("streams", 0, "retriever")``)."""
        if self.placement is None:
            return None
        line, col = self.placement.where(tuple(path))
        return f"{self.path}:{line}:{col}"

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def ok(self) -> bool:
        return not self.errors


def check_manifest(path: str, strict: bool = False, config: ConfigFile | None = None) -> CheckedManifest:
    """Read, resolve, type and check the manifest at ``path``.

    Unknown keys that do not look like misspelt fields are warnings (they are
    ignored, as Airbyte ignores them); ``strict`` makes them errors. With a
    ``config``, what the manifest reads of it is checked too: a config key no
    template can find, a date the cursor's format does not parse.
    """
    return _check(read_document(path), os.path.dirname(os.path.abspath(path)), strict, config)


def check_manifest_text(text: str | bytes, file: str = "<manifest>", base_dir: str | None = None,
                        strict: bool = False, config: ConfigFile | None = None) -> CheckedManifest:
    """Like :func:`check_manifest` for text in memory; schema files are looked up in ``base_dir``."""
    return _check(parse_text(text, file), base_dir, strict, config)


def load_manifest(path: str) -> DeclarativeSource:
    """The typed source of the manifest at ``path``; raises ManifestError when it has errors."""
    checked = check_manifest(path)
    if not checked.ok or checked.source is None:
        raise ManifestError(checked.diagnostics)
    return checked.source


def _check(doc: SourceDocument, base_dir: str | None, strict: bool = False,
           config: ConfigFile | None = None) -> CheckedManifest:
    if doc.problems and doc.data is None:
        return CheckedManifest(doc.file, None, tuple(doc.problems))
    data, origin, problems = resolve_references(doc)
    problems = list(doc.problems) + problems
    place = Placement(doc, origin if data is not None else Origin(()))
    preparation = Preparation(place, strict=strict)
    prepared = preparation.run(data)
    problems += preparation.problems
    # The models, built by the quick walk where it can vouch for them (framework/manifest/vouch.py): the same
    # instances pydantic would make, without building its validator (the largest cost of a cold start); pydantic
    # validates the rest, and words what is wrong.
    source = quick_build(prepared)
    if source is None:
        source, build_problems = build_source(prepared, place, preparation.claimed)
        problems += build_problems
    if isinstance(prepared, dict):
        problems += run_checks(preparation.sites, prepared, place, base_dir, config)
    if problems and source is not None and any(p.severity == "error" for p in problems):
        source = None
    return CheckedManifest(doc.file, source, _tidy(problems), prepared, place)


def _tidy(problems: list[Diagnostic]) -> tuple[Diagnostic, ...]:
    seen: set = set()
    unique = []
    for problem in problems:
        key = (problem.line, problem.column, problem.code, problem.message)
        if key not in seen:
            seen.add(key)
            unique.append(problem)
    return tuple(sorted(unique, key=lambda d: (d.line, d.column, d.severity, d.code)))


__all__ = ["CheckedManifest", "check_manifest", "check_manifest_text", "load_manifest"]
