"""The config's dates, parsed as the run will parse them: ``validate-manifest --config``.

A DatetimeBasedCursor's ``start_datetime`` and ``end_datetime`` (a template, or a MinMaxDatetime's
``datetime``) usually read a config value (``{{ config['start_date'] }}``) and parse it with a format:
the MinMaxDatetime's own ``datetime_format``, else the cursor's. A config date in another form fails
only when the stream is planned; here it is an error at the config value's place, naming the format
and showing the form it expects. A bound that renders empty, or that no config value feeds, is left
to the other checks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from framework.diagnostics import Diagnostic
from framework.errors import DatetimeFormatError, FrameworkError
from framework.interpolation import TemplateEngine, analyze_template
from framework.manifest.components import Placement, Site
from framework.models import DatetimeBasedCursor
from framework.temporal.datetime_formats import format_datetime, parse_datetime

if TYPE_CHECKING:
    from framework.manifest.config_check import ConfigFile

#: the instant the expected form is shown with
_EXAMPLE = datetime(2024, 1, 31, 12, 30, 0, tzinfo=timezone.utc)
_SHOWN_CHARS = 40


def config_date_checks(sites: list[Site], place: Placement, config: ConfigFile,
                       secrets: frozenset[str] = frozenset()) -> Iterator[Diagnostic]:
    """An error for each config value a cursor's bound reads that does not parse with the bound's format.

    ``secrets`` are config keys whose values must not be shown (the spec's ``airbyte_secret`` fields).
    """
    engine: TemplateEngine | None = None
    reported: set[tuple[str, str]] = set()
    for site in sites:
        if site.model is not DatetimeBasedCursor:
            continue
        cursor_format = site.data.get("datetime_format")
        for name in ("start_datetime", "end_datetime"):
            bound = _bound(site, name, cursor_format)
            if bound is None:
                continue
            source, fmt, parameters, path = bound
            keys = sorted(key for key in analyze_template(source).config_keys if key in config.data)
            if not keys or (keys[0], fmt) in reported:
                continue
            engine = engine or TemplateEngine()
            try:
                rendered = engine.evaluate(source, {"config": config.data, "parameters": parameters}, "string")
            except FrameworkError:
                continue  # a template that does not render is reported by the template checks
            text = "" if rendered is None else str(rendered).strip()
            if not text:
                continue
            try:
                parse_datetime(text, fmt)
            except DatetimeFormatError:
                reported.add((keys[0], fmt))
                yield _problem(keys[0], text, fmt, name, path, place, config, keys[0] in secrets)


def _bound(site: Site, name: str, cursor_format: Any) -> tuple[str, str, Mapping[str, Any], tuple] | None:
    """The template, format, parameters and path of a cursor's bound, when it has all of them."""
    bound = site.data.get(name)
    if isinstance(bound, dict):
        source, fmt = bound.get("datetime"), bound.get("datetime_format") or cursor_format
        parameters, path = bound.get("$parameters") or {}, (*site.path, name, "datetime")
    else:
        source, fmt = bound, cursor_format
        parameters, path = site.data.get("$parameters") or {}, (*site.path, name)
    if not isinstance(source, str) or not isinstance(fmt, str) or not isinstance(parameters, dict):
        return None
    return source, fmt, parameters, path


def _problem(key: str, text: str, fmt: str, name: str, path: tuple, place: Placement, config: ConfigFile,
             secret: bool) -> Diagnostic:
    line, column = config.doc.where((key,))
    manifest_line, manifest_column = place.where(path)
    try:
        example = f" ({format_datetime(_EXAMPLE, fmt)!s} is {_EXAMPLE:%Y-%m-%d %H:%M:%S} UTC)"
    except DatetimeFormatError:
        example = ""
    shown = "" if secret or len(text) > _SHOWN_CHARS else f" is {text!r}, which"
    return Diagnostic(
        config.path, line, column, "error", "config-date-format",
        f"config `{key}`{shown or ' '} does not match {fmt!r}, the format `{name}` parses it with "
        f"({place.doc.file}:{manifest_line}:{manifest_column})",
        key,
        f"write `{key}` in the form {fmt!r}{example}, or set `datetime_format` on the bound (a "
        "MinMaxDatetime) to the form the config uses",
    )
