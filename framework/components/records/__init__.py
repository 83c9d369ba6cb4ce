"""Records: where they are in a response, which to keep, how to change them, and their schema.

Runtimes of the manifest's record components, with their builders:

* :class:`DpathExtractor` (:mod:`.extraction`): the records at a path of the JSON body;
* the response formats other than JSON (:mod:`.decoders`): CSV, JSON lines, XML, gzip, zip...;
* :class:`RecordFilter` and :class:`RecordSelector` (:mod:`.selection`): extract,
  transform and filter, then cast to the stream schema;
* ``AddFields`` and ``RemoveFields`` (:mod:`.transformations`), both
  :class:`Transformation` implementations (:mod:`.conditions`), and those that reshape records
  (:mod:`.reshaping`): ``KeysToLower``, ``KeysToSnakeCase``, ``KeysReplace``, ``FlattenFields``,
  ``DpathFlattenFields``;
* ``RecordExpander`` (:mod:`.expansion`): the extractor's records into the items of a list in each;
* :func:`load_schema` (:mod:`.schemas`): a stream's JSON Schema, inline or from a file;
* :func:`compile_normalizer` (:mod:`.schema_normalization`): ``schema_normalization: Default``.

The transformations, the expander, the file components and the response formats other
than JSON are imported from their modules: each loads with the first manifest that names
one of its types (the catalog's builder), so a manifest without them does not pay for them.
"""

from framework.components.records.conditions import Transformation
from framework.components.records.extraction import DpathExtractor, decode_body, find_records
from framework.components.records.schema_normalization import compile_cast, compile_normalizer
from framework.components.records.schemas import PERMISSIVE_SCHEMA, default_schema_path, load_schema
from framework.components.records.selection import RecordFilter, RecordSelector

__all__ = [
    "DpathExtractor",
    "PERMISSIVE_SCHEMA",
    "RecordFilter",
    "RecordSelector",
    "Transformation",
    "compile_cast",
    "compile_normalizer",
    "decode_body",
    "default_schema_path",
    "find_records",
    "load_schema",
]
