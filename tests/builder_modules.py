"""The builders' modules a plain HTTP stream does not need (tests of start-up cost share this list).

Each costs start-up time, so each loads only with a manifest that names one of its types: the catalog
(framework/catalog.py) names the module, and nothing else imports it. Computed from the catalog, less the
modules every HTTP stream builds from.
"""

from __future__ import annotations

from framework.catalog import CATALOG, builder_path

#: The builders' modules of what every HTTP stream is made of.
CORE = frozenset({
    "framework.components.stream", "framework.components.retriever", "framework.components.http.requester",
    "framework.components.http.request", "framework.components.http.error_handler",
    "framework.components.records.selection", "framework.components.records.schemas",
    "framework.components.pagination", "framework.components.partitions",
    "framework.components.incremental.datetime_cursor", "framework.components.incremental.count_cursor",
    "framework.components.incremental.min_max", "framework.components.delegating",
    "framework.components.query_properties", "framework.components.stream_groups", "framework.components.dynamic",
})

OPTIONAL = tuple(sorted({found[0] for kind in CATALOG if (found := builder_path(kind)) is not None} - CORE))
