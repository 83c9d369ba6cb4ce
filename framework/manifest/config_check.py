"""Checking a connector config against the manifest's ``spec.connection_specification``.

Values of properties marked ``airbyte_secret: true`` never appear in a message:
:func:`secret_values` lists every spelling of them, and a
:class:`~framework.masking.Masker` of those replaces each by ``****``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from msgspec import Struct

from framework.diagnostics import Diagnostic, json_path
from framework.errors import ConfigError
from framework.manifest.yaml_source import SourceDocument, parse_text
from framework.masking import SHORT, Masker, credential_spellings


class ConfigFile(Struct, frozen=True):
    """A connector config file, read once (``--config /dev/stdin`` works): its data and the place of each value."""

    path: str
    data: dict[str, Any]
    doc: SourceDocument


def read_config_file(path: str) -> ConfigFile:
    """The config at ``path``: a JSON object (the one rule for run-manifest and validate-manifest alike).

    Raises :class:`~framework.errors.ConfigError` naming the file, the place and the fix.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; pass an existing JSON file to --config") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; pass the config's JSON file to --config") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc.strerror or exc}); check the path and its "
                          "permissions") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); the config must be a "
                          "JSON object (YAML is not accepted)") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a JSON object, not {type(data).__name__}")
    return ConfigFile(path, data, parse_text(raw, path))


def secret_values(schema: Any, config: Any) -> set[str]:
    """Every value in ``config`` that sits under a property the schema marks secret."""
    found: set[str] = set()

    def walk(node_schema: Any, value: Any) -> None:
        if not isinstance(node_schema, dict):
            return
        if node_schema.get("airbyte_secret") is True and value not in (None, ""):
            found.update(_spellings(value))
            return
        for key in ("oneOf", "anyOf", "allOf"):
            for option in node_schema.get(key, []) or []:
                walk(option, value)
        if isinstance(value, dict):
            for name, sub in (node_schema.get("properties") or {}).items():
                if name in value:
                    walk(sub, value[name])
        if isinstance(value, list) and isinstance(node_schema.get("items"), dict):
            for item in value:
                walk(node_schema["items"], item)

    walk(schema, config)
    return found


def secret_names(schema: Any, config: Any) -> set[tuple[str, str]]:
    """(value, ``config.path``) of each short secret (fewer than :data:`~framework.masking.SHORT` characters)
    in ``config``: a message names the field where such a secret stands alone (framework.masking)."""
    found: set[tuple[str, str]] = set()

    def walk(node_schema: Any, value: Any, path: str) -> None:
        if not isinstance(node_schema, dict):
            return
        if node_schema.get("airbyte_secret") is True and value not in (None, ""):
            if not isinstance(value, (dict, list)) and len(str(value)) < SHORT:
                found.update((spelling, path) for spelling in _spellings(value) if len(spelling) < SHORT)
            return
        for key in ("oneOf", "anyOf", "allOf"):
            for option in node_schema.get(key, []) or []:
                walk(option, value, path)
        if isinstance(value, dict):
            for name, sub in (node_schema.get("properties") or {}).items():
                if name in value:
                    walk(sub, value[name], f"{path}.{name}")

    walk(schema, config, "config")
    return found


def _spellings(value: Any) -> set[str]:
    """Every way a secret value may be quoted in a message: its JSON and its Python repr, each
    :func:`~framework.masking.credential_spellings` spelling of a text, and the same for each scalar inside it."""
    out = {json.dumps(value), repr(value)}
    if isinstance(value, str):
        out.update(credential_spellings(value))
    elif isinstance(value, dict):
        for item in value.values():
            out |= _spellings(item)
    elif isinstance(value, list):
        for item in value:
            out |= _spellings(item)
    else:
        out.add(str(value))
    return {text for text in out if text}


def check_config(spec: Any, config_file: str | ConfigFile) -> list[Diagnostic]:
    """Problems of a config file (its path, or the file read already) under the connection specification ``spec``."""
    import jsonschema  # about 0.1 s to import: only when a config is checked

    if isinstance(config_file, str):
        file_name = config_file
        try:
            config_file = read_config_file(file_name)
        except ConfigError as exc:
            return [Diagnostic(file_name, 1, 1, "error", "config-unreadable", str(exc).split(": ", 1)[-1],
                               "", "fix the config file")]
    doc = config_file.doc
    if doc.problems:
        return list(doc.problems)
    config = config_file.data
    if not isinstance(spec, dict):
        return []
    mask = Masker.of(secret_values(spec, config), secret_names(spec, config))
    validator_class = jsonschema.validators.validator_for(spec, default=jsonschema.Draft7Validator)
    validator = validator_class(spec, format_checker=validator_class.FORMAT_CHECKER)
    out = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        path = tuple(error.absolute_path)
        message = error.message
        line, col = doc.where(path)
        fix = None
        if error.validator == "required":
            fix = "add the missing property to the config"
        elif error.validator in ("type", "enum", "pattern", "format"):
            fix = f"change `{json_path(path) or 'the config'}` to match the spec"
        out.append(Diagnostic(doc.file, line, col, "error", f"config-{error.validator}",
                              mask(message), json_path(path), fix))
    return out


def check_config_value(spec: Mapping[str, Any], config: Mapping[str, Any], mask: Masker) -> None:
    """Raise :class:`~framework.errors.ConfigError` listing where ``config`` does not fit ``spec`` (secrets masked)."""
    import jsonschema  # lazy, as in check_config

    validator_class = jsonschema.validators.validator_for(spec, default=jsonschema.Draft7Validator)
    errors = sorted(validator_class(spec).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"config{''.join(f'[{p!r}]' for p in e.absolute_path)}: {mask(e.message)}" for e in errors]
        raise ConfigError("the config does not fit the manifest's spec:\n" + "\n".join(lines))
