"""What a sync tells of schema drift: the fields records had that their stream's schema does not declare.

Every policy counts them (:mod:`framework.typed.drift`); this says, per stream, how many records had such
fields, which fields (with how many values each had them), and what became of them under the stream's
policy, with the flag that changes it. The text summary gets :func:`drift_line`, the JSON log the
``schema_drift`` object of :func:`drift_fields` (in ``stream_done`` and in ``summary``'s ``streams``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

#: The most fields a line names; the rest are counted.
MOST_NAMED = 10


class Drifting(Protocol):
    """What a stream's result holds of drift (:class:`framework.spark.pipeline.StreamResult`)."""

    name: str
    drift_policy: str
    drifted: int
    undeclared: dict[str, int]
    evolved: tuple[tuple[str, str], ...]


def _named(fields: Mapping[str, int]) -> str:
    ranked = sorted(fields.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{name} ({count:,})" for name, count in ranked[:MOST_NAMED])
    if len(ranked) > MOST_NAMED:
        text += f" and {len(ranked) - MOST_NAMED} more"
    return text


def drift_line(result: Drifting) -> str | None:
    """One line about the stream's undeclared fields and what became of them; None when its records had none."""
    if not result.drifted:
        return None
    head = (f"{result.name}: {result.drifted:,} record{'s' * (result.drifted != 1)} had fields the schema "
            f"does not declare: {_named(result.undeclared)}")
    if result.drift_policy == "keep":
        return f"{head} - kept as JSON text in _airbyte_additional_properties"
    if result.drift_policy == "evolve":
        evolved = dict(result.evolved)
        added = [name for name in result.undeclared if name in evolved]
        left = {name: count for name, count in result.undeclared.items() if name not in evolved}
        text = head + " - added as columns: " + (", ".join(f"{name} ({evolved[name]})" for name in added) or "none")
        if left:
            text += f"; dropped (nested or reserved names): {_named(left)}; --schema-drift keep keeps them"
        return text
    return f"{head} - dropped; --schema-drift keep|evolve (or {result.name}=keep|evolve) keeps them"


def drift_fields(result: Drifting) -> dict[str, Any]:
    """The ``schema_drift`` object of the JSON log: ``policy``, ``records`` (records with undeclared fields),
    ``fields`` (path -> values that had it), ``evolved`` (column -> kind: the evolve policy's columns)."""
    return {"policy": result.drift_policy, "records": result.drifted, "fields": dict(result.undeclared),
            "evolved": dict(result.evolved)}


__all__ = ["drift_fields", "drift_line"]
