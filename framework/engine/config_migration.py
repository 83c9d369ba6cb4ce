"""A config brought up to date by the spec's ``config_normalization_rules``, before anything is built from it.

The order is airbyte-cdk's: the ``config_migrations`` first (each one's
transformations in order), then the ``transformations``, then the
``validations`` against the transformed config. :func:`normalize_config`
answers a :class:`NormalizedConfig`: the config as given, as migrated (what is
announced or saved when the migrations changed it) and as transformed (what the
streams read). A validation that fails raises a
:class:`~framework.errors.ConfigError` naming the rule's manifest place, the
value's place in the config and why.

What a front end does with a migrated config:

* protocol mode: :func:`framework.protocol.control.control_message`, Airbyte's CONTROL message of type
  ``CONNECTOR_CONFIG`` carrying the migrated config, printed before any other
  message (Airbyte persists it for the connection);
* Spark mode: :func:`rewrite_config_file` replaces the config file atomically
  with the migrated config, after copying the old one beside it
  (``config.json.bak``, never overwriting an earlier backup).
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from msgspec import Struct

from framework.components.context import BuildContext
from framework.errors import ConfigError
from framework.models import DeclarativeSource

__all__ = ["NormalizedConfig", "describe_rewrite", "normalize_config",
           "rewrite_config_file", "validate_config"]

_RULES_PATH = ("spec", "config_normalization_rules")


class NormalizedConfig(Struct, frozen=True):
    given: Mapping[str, Any]
    migrated: dict[str, Any]
    config: dict[str, Any]

    @property
    def migrated_changed(self) -> bool:
        """Whether the migrations changed the config (it is then announced or saved)."""
        return self.migrated != self.given

    @property
    def changed(self) -> bool:
        return self.config != self.given


def normalize_config(source: DeclarativeSource, config: Mapping[str, Any], ctx: BuildContext) -> NormalizedConfig:
    """``config`` migrated, then transformed, by the source's rules (see the module docs); ``config`` is not
    changed."""
    rules = source.spec_.config_normalization_rules if source.spec_ is not None else None
    if rules is None:
        same = dict(config)
        return NormalizedConfig(config, same, same)
    working = copy.deepcopy(dict(config))
    for index, model in enumerate(rules.config_migrations):
        ctx.build(model, _RULES_PATH + ("config_migrations", index)).transform(working)
    migrated = copy.deepcopy(working)
    for index, transformation in enumerate(rules.transformations):
        ctx.build(transformation, _RULES_PATH + ("transformations", index)).transform(working)
    return NormalizedConfig(config, migrated, working)


def validate_config(source: DeclarativeSource, config: Mapping[str, Any], ctx: BuildContext,
                    mask: Callable[[str], str] | None = None) -> None:
    """Run the source's validations over ``config`` (transformed); the first that fails raises a ConfigError."""
    rules = source.spec_.config_normalization_rules if source.spec_ is not None else None
    mask = mask or ctx.mask
    validations = rules.validations if rules is not None else ()
    if not validations:
        return
    from framework.components.config_rules import ValidationFailed  # here: only a spec with validations needs it

    for index, model in enumerate(validations):
        path = _RULES_PATH + ("validations", index)
        try:
            ctx.build(model, path).validate(config)
        except ValidationFailed as exc:
            place = ctx.place(path) or ".".join(map(str, path))
            where = "".join(f"[{part!r}]" for part in exc.path) if exc.path is not None else None
            subject = f"config{where}" if where else f"the value of the {model.type}"
            raise ConfigError(f"{subject} fails the manifest's validation ({place}): {mask(exc.reason)}; fix the "
                              "config to fit it") from None


def rewrite_config_file(path: str, config: Mapping[str, Any]) -> str:
    """Replace the config file at ``path`` by ``config`` atomically; answer the backup of the old file.

    The old file is copied to ``<path>.bak`` (``.bak.1``, ``.bak.2``... when
    taken), with its permissions, and flushed to disk before the new file takes
    its place by a rename: at every moment the file holds either the old
    config or the new one.
    """
    backup = _free_backup_name(path)
    shutil.copy2(path, backup)
    _fsync(backup)
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o777
    handle, temporary = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(orjson.dumps(dict(config), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return backup


def _free_backup_name(path: str) -> str:
    candidate, number = f"{path}.bak", 0
    while os.path.exists(candidate):
        number += 1
        candidate = f"{path}.bak.{number}"
    return candidate


def _fsync(path: str) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def describe_rewrite(path: str, backup: str) -> str:
    return (f"the manifest's config migrations changed the config: {path} now holds the migrated config "
            f"(the previous one is in {backup})")
