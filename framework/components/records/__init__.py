"""Records: where they are in a response, which to keep, how to change them, and their schema.

Runtimes of the manifest's record components, with their builders:

* :class:`DpathExtractor` (:mod:`.extraction`): the records at a path of the JSON body;
* the response formats other than JSON (:mod:`.decoders`): CSV, JSON lines, XML, gzip, zip...;
* :class:`RecordFilter` and :class:`RecordSelector` (:mod:`.selection`): extract,
  transform and filter, then cast to the stream schema;
* :class:`AddFields` and :class:`RemoveFields` (:mod:`.transformations`), both
  :class:`Transformation` implementations (:mod:`.conditions`), and those that reshape records
  (:mod:`.reshaping`): :class:`KeysToLower`, :class:`KeysToSnakeCase`,
  :class:`KeysReplace`, :class:`FlattenFields`, :class:`DpathFlattenFields`;
* :class:`RecordExpander` (:mod:`.expansion`): the extractor's records into the items of a list in each;
* :func:`load_schema` (:mod:`.schemas`): a stream's JSON Schema, inline or from a file;
* :func:`compile_normalizer` (:mod:`.schema_normalization`): ``schema_normalization: Default``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from framework.components.records.conditions import Transformation
from framework.components.records.extraction import DpathExtractor, decode_body, find_records
from framework.components.records.schema_normalization import compile_cast, compile_normalizer
from framework.components.records.schemas import PERMISSIVE_SCHEMA, default_schema_path, load_schema
from framework.components.records.selection import RecordFilter, RecordSelector

if TYPE_CHECKING:  # pragma: no cover
    from framework.components.records.expansion import RecordExpander
    from framework.components.records.reshaping import (
        DpathFlattenFields,
        FlattenFields,
        KeysReplace,
        KeysToLower,
        KeysToSnakeCase,
    )
    from framework.components.records.transformations import AddFields, RemoveFields

# AddFields, RemoveFields, RecordExpander and the reshaping transformations load on first use (their builders
# with the first manifest that names their types: the registry's ``_ON_DEMAND``, which says from which module),
# so that a manifest without them does not pay for their import at start-up.
def __getattr__(name: str) -> Any:
    from framework.components.registry import _ON_DEMAND

    module = _ON_DEMAND.get(name, "")
    if not module.startswith(f"{__name__}."):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "AddFields",
    "DpathExtractor",
    "DpathFlattenFields",
    "FlattenFields",
    "KeysReplace",
    "KeysToLower",
    "KeysToSnakeCase",
    "PERMISSIVE_SCHEMA",
    "RecordExpander",
    "RecordFilter",
    "RecordSelector",
    "RemoveFields",
    "Transformation",
    "compile_cast",
    "compile_normalizer",
    "decode_body",
    "default_schema_path",
    "find_records",
    "load_schema",
]
