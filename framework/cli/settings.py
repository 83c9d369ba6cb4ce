"""The destination and normalization settings a command runs with, read from its files and flags.

``run-manifest`` (Spark mode) and ``normalize-output`` take the same
``--destination DEST.json`` / ``--output DIR|s3://bucket/prefix`` pair; these
functions turn what was given into validated settings, or a
:class:`~framework.errors.ConfigError` naming the file or flag at fault.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Collection, Sequence
from typing import Literal

from pydantic import ValidationError

from framework.errors import ConfigError
from framework.manifest.yaml_source import read_document
from framework.models.destination import DestinationSettings
from framework.models.normalization import NormalizationSettings, Target

FormatName = Literal["parquet", "avro", "csv", "jsonl", "delta", "iceberg"]  # the choices of ``--format``

# ``--format`` -> the destination's ``format_type``
_FORMAT_TYPES: dict[FormatName, str] = {"parquet": "Parquet", "avro": "Avro", "csv": "CSV", "jsonl": "JSONL",
                                        "delta": "delta", "iceberg": "iceberg"}


def destination_settings(destination: str | None = None, output: str | None = None,
                         format: FormatName | None = None) -> DestinationSettings:
    """Where and how a sync lands its files.

    With ``destination`` (the path of Airbyte's S3 destination config), its settings, with
    ``output`` (which then replaces the bucket) and ``format`` put in when given. Without it,
    ``format`` files in ``output`` (default ``./output``): Snappy-compressed Parquet by default.

    A local ``output`` comes back absolute, resolved here on the driver (see :func:`resolve_output`).
    """
    return resolve_output(_destination_settings(destination, output, format))


def _destination_settings(destination: str | None, output: str | None,
                          format: FormatName | None) -> DestinationSettings:
    if destination:
        doc = read_document(destination)
        if doc.problems or not isinstance(doc.data, dict):
            raise ConfigError(f"{destination}: not a JSON object; give Airbyte's S3 destination config")
        data = dict(doc.data)
        if output:
            data.pop("s3_bucket_name", None)
            data["output"] = output
        if format:
            found = data.get("format")
            given: dict = found if isinstance(found, dict) else {}
            # a table format named in the file too keeps its settings there (an Iceberg catalog)
            same = format in ("delta", "iceberg") and given.get("format_type") == _FORMAT_TYPES[format]
            data["format"] = given if same else {"format_type": _FORMAT_TYPES[format]}
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


def resolve_output(settings: DestinationSettings) -> DestinationSettings:
    """``settings`` with a local ``output`` made absolute against this process's working folder.

    The tasks get the settings as data: a relative path would be resolved again on each executor, in its
    own working folder (a worker's work directory on a cluster), while the state went to the driver's.
    ``s3://`` outputs and buckets are returned as they are.
    """
    if settings.target != "local" or not settings.output:
        return settings
    absolute = os.path.abspath(os.path.expanduser(settings.output))
    return settings if absolute == settings.output else settings.model_copy(update={"output": absolute})


def is_local_master(master: str) -> bool:
    """True for a master whose executors run on this machine (``local``, ``local[4]``, ``local-cluster[...]``)."""
    return master.strip().startswith("local")


def check_shared_output(settings: DestinationSettings, master: str | None, shared_path: bool,
                        flag: str = "--output") -> None:
    """Refuse a local output when the tasks run on other machines, unless the user said it is shared.

    ``master`` is the Spark master when known (None: not known yet, nothing to check). A
    :class:`~framework.errors.ConfigError` names the folder, the master and the fix.
    """
    if settings.target != "local" or not master or is_local_master(master) or shared_path:
        return
    raise ConfigError(
        f"{flag} {settings.output} is a folder on this machine, but the master {master} runs the tasks on other "
        f"machines: each would write its files on its own disk while the state stays here; use "
        f"s3://bucket/prefix, or a folder every node mounts at the same path and pass --shared-path")


def conf_pair(text: str) -> tuple[str, str]:
    """``--conf KEY=VALUE`` as a pair (argparse's ``type``: a malformed one is a usage error, exit 2)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. --conf spark.executor.memory=2g)")
    return key.strip(), value


_DRIFT_POLICIES = ("drop", "keep", "evolve")  # framework/typed/drift.py's, as the destination settings take them


def drift_flag(text: str) -> tuple[str | None, str]:
    """``--schema-drift POLICY`` or ``--schema-drift STREAM=POLICY`` as (stream or None, policy) (argparse's
    ``type``: a bad one is a usage error, exit 2, with the fix)."""
    stream, sep, policy = text.rpartition("=")
    policy = policy.strip()
    if policy not in _DRIFT_POLICIES or (sep and not stream.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a schema drift policy: give drop, keep or evolve, for every stream "
            "(--schema-drift keep) or for one (--schema-drift events=evolve)")
    return (stream.strip() or None), policy


def with_schema_drift(settings: DestinationSettings, flags: Sequence[tuple[str | None, str]],
                      streams: Collection[str]) -> DestinationSettings:
    """``settings`` with the ``--schema-drift`` flags put in (a later flag wins): a bare policy replaces
    ``schema_drift``, ``STREAM=POLICY`` adds to ``schema_drift_streams``. A stream that is not among
    ``streams`` (the manifest's), in a flag or in the settings, is a :class:`ConfigError` with the fix."""
    overall, by_stream = settings.schema_drift, dict(settings.schema_drift_streams)
    for stream, policy in flags:
        if stream is None:
            overall = policy  # type: ignore[assignment]
        else:
            by_stream[stream] = policy  # type: ignore[assignment]
    unknown = sorted(set(by_stream) - set(streams))
    if unknown:
        raise ConfigError(f"schema drift: no stream named {', '.join(map(repr, unknown))} in the manifest (its "
                          f"streams: {', '.join(sorted(streams))}); fix the name in --schema-drift STREAM=POLICY "
                          "or in the destination's `schema_drift_streams`")
    if overall == settings.schema_drift and by_stream == settings.schema_drift_streams:
        return settings
    return settings.model_copy(update={"schema_drift": overall, "schema_drift_streams": by_stream})


def normalization_settings(destination: DestinationSettings, target: Target | None = None,
                           dialect: str | None = None, output: str | None = None) -> NormalizationSettings:
    """The destination's normalization settings, with ``target``, ``dialect`` and ``output``
    (``--normalized-output``) put in when given."""
    current = destination.normalization
    data = current.model_dump(exclude_unset=True) if current is not None else {}
    if target:
        if target != data.get("target"):
            data.pop("dialect", None)
        data["target"] = target
    if dialect:
        data["dialect"] = dialect
    if output:
        data["output"] = output
    data.setdefault("target", "parquet")
    try:
        return NormalizationSettings.model_validate(data)
    except ValidationError as exc:  # pydantic lists every problem
        raise ConfigError(f"normalization settings: {exc}") from None


def _plain(exc: ValidationError) -> str:
    """Pydantic's problems, one ``field: message`` each."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())


__all__ = ["FormatName", "check_shared_output", "conf_pair", "destination_settings", "drift_flag",
           "is_local_master", "normalization_settings", "resolve_output", "with_schema_drift"]
