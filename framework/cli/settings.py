"""The destination and normalization settings a command runs with, read from its files and flags.

``run-manifest`` (Spark mode) and ``normalize-output`` take the same
``--destination DEST.json`` / ``--output DIR|s3://bucket/prefix`` pair; these
functions turn what was given into validated settings, or a
:class:`~framework.errors.ConfigError` naming the file or flag at fault.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ValidationError

from framework.errors import ConfigError
from framework.manifest.yaml_source import read_document
from framework.models.destination import DestinationSettings
from framework.models.normalization import NormalizationSettings, Target

FormatName = Literal["parquet", "avro", "csv", "jsonl"]  # the choices of ``--format``

# ``--format`` -> the destination's ``format_type``
_FORMAT_TYPES: dict[FormatName, str] = {"parquet": "Parquet", "avro": "Avro", "csv": "CSV", "jsonl": "JSONL"}


def destination_settings(destination: str | None = None, output: str | None = None,
                         format: FormatName | None = None) -> DestinationSettings:
    """Where and how a sync lands its files.

    With ``destination`` (the path of Airbyte's S3 destination config), its settings, with
    ``output`` (which then replaces the bucket) and ``format`` put in when given. Without it,
    ``format`` files in ``output`` (default ``./output``): Snappy-compressed Parquet by default.
    """
    if destination:
        doc = read_document(destination)
        if doc.problems or not isinstance(doc.data, dict):
            raise ConfigError(f"{destination}: not a JSON object; give Airbyte's S3 destination config")
        data = dict(doc.data)
        if output:
            data.pop("s3_bucket_name", None)
            data["output"] = output
        if format:
            data["format"] = {"format_type": _FORMAT_TYPES[format]}
        try:
            return DestinationSettings.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{destination}: {_plain(exc)}") from None
    try:
        if format in (None, "parquet"):
            return DestinationSettings.default_local(output or "./output")
        return DestinationSettings.model_validate({"output": output or "./output",
                                                   "format": {"format_type": _FORMAT_TYPES[format]}})
    except ValidationError as exc:
        raise ConfigError(f"--output {output!r}: {_plain(exc)}") from None


def normalization_settings(destination: DestinationSettings, target: Target | None = None,
                           dialect: str | None = None) -> NormalizationSettings:
    """The destination's normalization settings, with ``target`` and ``dialect`` put in when given."""
    current = destination.normalization
    data = current.model_dump(exclude_unset=True) if current is not None else {}
    if target:
        if target != data.get("target"):
            data.pop("dialect", None)
        data["target"] = target
    if dialect:
        data["dialect"] = dialect
    data.setdefault("target", "parquet")
    try:
        return NormalizationSettings.model_validate(data)
    except ValidationError as exc:  # pydantic lists every problem
        raise ConfigError(f"normalization settings: {exc}") from None


def _plain(exc: ValidationError) -> str:
    """Pydantic's problems, one ``field: message`` each."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())


__all__ = ["FormatName", "destination_settings", "normalization_settings"]
