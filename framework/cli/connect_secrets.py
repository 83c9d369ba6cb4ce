"""A run's secrets and the Spark Connect channel they would travel on (``--remote`` of run-manifest and
normalize-output).

Over Spark Connect the client sends the server the plan, and the plan holds
the task functions, pickled with the connector's config and the destination's
settings. Before anything is sent (before the check request, before the
session), a sync that holds secrets is refused on a plaintext channel to
another machine, with the fix; ``--allow-plaintext`` turns the refusal into a
warning (:func:`framework.spark.connect_channel.plaintext_refusal`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from framework.errors import ConfigError
from framework.manifest.secret_fields import secret_fields
from framework.spark.connect_channel import plaintext_refusal

if TYPE_CHECKING:
    from framework.engine.connector import Connector
    from framework.models.destination import DestinationSettings
    from framework.models.normalization import NormalizationSettings


def sync_secrets(connector: Connector, settings: DestinationSettings) -> tuple[str, ...]:
    """Where the sync's secrets are, by name: the config's ``airbyte_secret`` fields (the config as given, which
    the tasks carry, and as migrated), then :func:`destination_secrets`."""
    spec = connector.spec
    schema = spec.get("connectionSpecification") if spec else None
    fields = dict.fromkeys((*secret_fields(schema, connector.given_config), *secret_fields(schema, connector.config)))
    return (*(f"config field {name}" for name in fields), *destination_secrets(settings, settings.normalization))


def destination_secrets(settings: DestinationSettings,
                        normalization: NormalizationSettings | None = None) -> tuple[str, ...]:
    """The destination's S3 keys and normalization's PostgreSQL password, by name, where given (the tasks carry
    the destination's settings; normalization's statements run on the server)."""
    keys = [name for name in ("access_key_id", "secret_access_key") if getattr(settings, name, None)]
    if normalization is not None and normalization.jdbc_password:
        keys.append("normalization.jdbc_password")
    return (f"the destination's {' and '.join(keys)}",) if keys else ()


def check_connect_channel(url: str, secrets: tuple[str, ...], *, allow_plaintext: bool,
                          warn: Callable[[str], None]) -> None:
    """Refuse (a :class:`ConfigError`, exit 2) a run whose ``secrets`` would go to another machine's Connect
    server at ``url`` in the clear, unless ``allow_plaintext``, which warns instead."""
    found = plaintext_refusal(url, secrets, allowed=allow_plaintext)
    if found is None:
        return
    text, refused = found
    if refused:
        raise ConfigError(text)
    warn(text)


__all__ = ["check_connect_channel", "destination_secrets", "sync_secrets"]
