"""The back-references of the manifest language: models that name a model of a module above their own.

The language is recursive: a stream holds a retriever, which holds a partition router, which holds parent
streams; an HttpRequester holds an authenticator, which may log in with an HttpRequester of its own. The
model modules import each other in one direction only, from the source down to the parts of its streams, so
no module imports another that imports it back. Where a model holds one of a module above its own, its
annotation quotes that name (the module imports it for type checkers alone), and :func:`bind_back_references`
sets the name in the module's namespace once every model module is loaded (``framework.models`` calls it,
before anything can use a model). pydantic resolves the quoted names there when it builds a model's
validator (on first use: the models are built lazily), and ``typing.get_type_hints`` does the same; a quoted
name missing here fails tests/models/test_startup_cost.py.

Not ``model_rebuild()``: it builds the model's validator then and there, and the validator of one stream
model is the whole language's, which every start would then pay for; ``defer_build`` and the loader's
quick build (:mod:`framework.manifest.vouch`) exist not to.
"""

from types import ModuleType

import framework.models.auth as auth
import framework.models.dynamic as dynamic
import framework.models.partitions as partitions
import framework.models.query_properties as query_properties
import framework.models.records as records
import framework.models.schema_loaders as schema_loaders
import framework.models.stream_groups as stream_groups
from framework.models.base import Model
from framework.models.files import ResponseToFileExtractor
from framework.models.requests import HttpRequester, RequestOption
from framework.models.source import DeclarativeStream, SimpleRetriever, StateDelegatingStream

#: Each module, with the models of modules above it that its annotations name.
BACK_REFERENCES: tuple[tuple[ModuleType, tuple[type[Model], ...]], ...] = (
    (auth, (HttpRequester, RequestOption)),  # a session token's login request; where a key or token is sent
    (records, (ResponseToFileExtractor,)),  # a record selector's extractor
    (query_properties, (SimpleRetriever,)),  # the retriever of PropertiesFromEndpoint
    (partitions, (DeclarativeStream, StateDelegatingStream)),  # parent streams
    (schema_loaders, (SimpleRetriever,)),  # the retriever of DynamicSchemaLoader
    (dynamic, (DeclarativeStream, SimpleRetriever, StateDelegatingStream)),  # stream templates, resolvers
    (stream_groups, (DeclarativeStream,)),  # a group's streams
)


def bind_back_references() -> None:
    """Set each back-referenced model in the namespace of the module whose annotations name it."""
    for module, models in BACK_REFERENCES:
        for model in models:
            setattr(module, model.__name__, model)
