"""Checks of the source's ``stream_groups``: a child never shares a group with one of its ancestors
(reading the child reads them, so the two could never be read apart; airbyte-cdk refuses it too), and a
member the source does not list is named (a warning: airbyte-cdk leaves it out silently)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.manifest.migration_checks import listed_stream_group

__all__ = ["stream_group_checks"]


def _parent_streams(stream: Any) -> Iterator[Any]:
    """The parent stream mappings a stream mapping reads through its partition routers."""
    retriever = stream.get("retriever") if isinstance(stream, dict) else None
    routers = [retriever.get("partition_router")] if isinstance(retriever, dict) else []
    if isinstance(stream, dict) and stream.get("type") == "StateDelegatingStream":
        yield from _parent_streams(stream.get("full_refresh_stream"))
        yield from _parent_streams(stream.get("incremental_stream"))
    while routers:
        router = routers.pop()
        if isinstance(router, list):
            routers.extend(router)
        elif isinstance(router, dict):
            routers.extend(router.get(key) for key in ("underlying_partition_router", "partition_routers"))
            configs = router.get("parent_stream_configs")
            for config in configs if isinstance(configs, list) else ():
                if isinstance(config, dict) and isinstance(config.get("stream"), dict):
                    yield config["stream"]


def _ancestors(stream: Any) -> list[str]:
    found: list[str] = []
    pending = [stream]
    while pending:
        for parent in _parent_streams(pending.pop()):
            name = parent.get("name")
            if isinstance(name, str) and name not in found:
                found.append(name)
                pending.append(parent)
    return found


def stream_group_checks(sites: list[Site], data: Any, place: Placement) -> Iterator[Diagnostic]:
    groups = data.get("stream_groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not groups:
        return
    listed = {site.data.get("name"): site.data for site in sites if listed_stream_group(site) is not False}
    of_stream: dict[str, set[str]] = {}
    members: list[tuple[str, tuple, Any]] = []
    for group_name, group in groups.items():
        streams = group.get("streams") if isinstance(group, dict) else None
        for index, member in enumerate(streams if isinstance(streams, list) else ()):
            name = member.get("name") if isinstance(member, dict) else None
            if isinstance(name, str):
                of_stream.setdefault(name, set()).add(group_name)
                members.append((group_name, ("stream_groups", group_name, "streams", index), member))
    for group_name, path, member in members:
        name = member["name"]
        if listed and name not in listed:
            yield place.diagnostic(path, "unknown-stream",
                                   f"stream group `{group_name}` names stream `{name}`, which the source does not "
                                   "list; it is left out of the group",
                                   f"point at one of the source's streams: {', '.join(map(str, listed))}",
                                   severity="warning")
        for ancestor in _ancestors(listed.get(name, member)):
            if group_name in of_stream.get(ancestor, ()):
                yield place.diagnostic(path, "group-with-parent",
                                       f"stream `{name}` and its parent stream `{ancestor}` are both in stream "
                                       f"group `{group_name}`: reading the child reads the parent, so the two "
                                       "cannot be kept apart",
                                       f"take `{name}` or `{ancestor}` out of group `{group_name}`")
                break
