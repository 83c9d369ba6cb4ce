"""The bridge to airbyte-cdk, for custom components whose classes subclass Airbyte's.

Nothing here imports ``airbyte_cdk`` until a manifest's class needs it: it is
an optional extra (``pip install 'manifest-framework[airbyte]'``, see
:data:`AIRBYTE_EXTRA`), and the framework runs without it.

Two ways in:

* **One component** (an extractor, a filter, a transformation, a pagination
  strategy, a state migration, a partition router...): when the class
  subclasses an airbyte-cdk class (:func:`is_airbyte_class`), it is built the
  way Airbyte builds it, by airbyte-cdk's ``ModelToComponentFactory`` on the
  component's mapping and the config (:func:`build_airbyte_component`). The
  factory finds ``class_name`` by import, so the module must already be in
  :data:`sys.modules` under its dotted name (the loader registers it). The
  object has Airbyte's methods, which are the calling convention of the
  runtime's adapters; the few values whose Airbyte type differs from ours are
  converted by :func:`to_airbyte_slice`, :func:`to_airbyte_record`,
  :func:`records_from_airbyte`, :func:`partition_from_airbyte` and
  :func:`state_from_airbyte`.
* **One stream** (:class:`AirbyteStream`): a stream whose read is driven by
  user code (which streams: :func:`framework.components.stream.bridge_reason`)
  is read by airbyte-cdk's own declarative source, one Airbyte partition
  (stream slice) at a time: :meth:`AirbyteStream.units` lists them as small
  JSON values, :meth:`AirbyteStream.read` reads one anywhere (pages of record
  dicts, with the unit's most recent record), and :meth:`AirbyteStream.finish`
  folds a finished unit into the cursor, whose :meth:`AirbyteStream.state` is
  the stream state in Airbyte's shapes.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from framework.components.slices import SliceView, StreamSlice
from framework.errors import ConfigError, DecodeError, FrameworkError, place_suffix

if TYPE_CHECKING:
    from framework.models.custom import CustomComponent

__all__ = [
    "AIRBYTE_EXTRA",
    "REFERENCE_VERSION",
    "AirbyteStream",
    "AirbyteUnit",
    "airbyte_available",
    "build_airbyte_component",
    "component_definition",
    "is_airbyte_class",
    "missing_airbyte_error",
    "partition_from_airbyte",
    "records_from_airbyte",
    "state_from_airbyte",
    "to_airbyte_record",
    "to_airbyte_slice",
]

#: How to install the bridge's dependency.
AIRBYTE_EXTRA = "pip install 'manifest-framework[airbyte]'"
#: The airbyte-cdk version the bridge is built and tested against (the extra pins it).
REFERENCE_VERSION = "7.39.1"

_PACKAGE = "airbyte_cdk"


def airbyte_available() -> bool:
    """Whether airbyte-cdk is installed here (found without importing it)."""
    try:
        return importlib.util.find_spec(_PACKAGE) is not None
    except (ImportError, ValueError):
        return False


def missing_airbyte_error(what: str, place: str | None = None) -> ConfigError:
    """The error of ``what`` needing airbyte-cdk where it is not installed."""
    return ConfigError(f"{what} needs airbyte-cdk, which is not installed: {AIRBYTE_EXTRA} (airbyte-cdk "
                       f"{REFERENCE_VERSION}), where the connector runs, Spark executors too{place_suffix(place)}")


def _require(what: str, place: str | None) -> None:
    if not airbyte_available():
        raise missing_airbyte_error(what, place)


def is_airbyte_class(cls: type) -> bool:
    """Whether ``cls`` subclasses a class of airbyte-cdk (judged by its bases' modules: imports nothing)."""
    return any(getattr(base, "__module__", "").split(".")[0] == _PACKAGE for base in getattr(cls, "__mro__", ()))


# -- one component --------------------------------------------------------------------------------


def component_definition(model: CustomComponent) -> dict[str, Any]:
    """The component's mapping as Airbyte's factory reads it: ``type``, ``class_name``, its keys, ``$parameters``.

    A copy: the factory writes into nested mappings (types it derives from the class's hints).
    """
    definition: dict[str, Any] = {"type": model.type, "class_name": model.class_name,  # type: ignore[attr-defined]
                                  **copy.deepcopy(model.options)}
    definition["$parameters"] = copy.deepcopy(dict(model.parameters))
    return definition


#: What Airbyte's stream builder hands a component of these kinds besides its mapping (by the stream's name).
_STREAM_NAME_ARGUMENT = {"CustomPartitionRouter": "stream_name"}


def build_airbyte_component(model: CustomComponent, config: Mapping[str, Any], *, place: str | None = None,
                            stream_name: str | None = None, **kwargs: Any) -> Any:
    """The object of ``model``'s class built by airbyte-cdk's ``ModelToComponentFactory``, as Airbyte builds it.

    ``stream_name`` is the stream the component belongs to (by default the
    ``name`` its ``$parameters`` hand down): Airbyte hands it to a partition
    router (its parent streams need it). ``kwargs`` are what a
    parent component hands its child in Airbyte (``name`` for a requester,
    say); they win over the manifest's keys, as there. The
    class's module must be in :data:`sys.modules` under the dotted name of
    ``class_name`` (``components``, ``source_<name>.components``): the loader
    puts it there when it loads the class, behind the custom-code gate.
    Raises :class:`~framework.errors.ConfigError` when airbyte-cdk is missing or
    Airbyte's factory refuses the mapping, naming the class and ``place``.
    """
    kind = model.type  # type: ignore[attr-defined]
    _require(f"the {model.kind} `{model.class_name}` (a subclass of an airbyte-cdk class)", place)
    from airbyte_cdk.sources.declarative.parsers.manifest_component_transformer import (
        ManifestComponentTransformer,
    )
    from airbyte_cdk.sources.declarative.parsers.model_to_component_factory import ModelToComponentFactory

    factory = ModelToComponentFactory()
    model_type = factory.TYPE_NAME_TO_MODEL.get(kind)
    if model_type is None:
        raise ConfigError(f"airbyte-cdk {REFERENCE_VERSION} has no `{kind}`: the {model.kind} `{model.class_name}` "
                          f"cannot be built the way Airbyte builds it{place_suffix(place)}")
    # Airbyte's own pass over a component: default types of nested components, $parameters handed down
    definition = ManifestComponentTransformer().propagate_types_and_parameters("", component_definition(model), {})
    argument = _STREAM_NAME_ARGUMENT.get(kind)
    if stream_name is None:  # the stream's name, as $parameters hand it down
        stream_name = model.parameters.get("name") if isinstance(model.parameters.get("name"), str) else None
    if argument is not None and stream_name is not None:
        kwargs.setdefault(argument, stream_name)
    try:
        return factory.create_component(model_type, definition, dict(config), **kwargs)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"airbyte-cdk could not build the {model.kind} `{model.class_name}`: "
                          f"{type(exc).__name__}: {exc}{place_suffix(place)}") from exc


# -- values as Airbyte's classes take them, and back -----------------------------------------------


def to_airbyte_slice(stream_slice: Mapping[str, Any] | None) -> Any:
    """A slice (our :class:`SliceView` or :class:`StreamSlice`, or a plain mapping) as airbyte-cdk's ``StreamSlice``.

    Airbyte's classes read ``.partition``, ``.cursor_slice`` and
    ``.extra_fields`` and sometimes test ``isinstance(.., StreamSlice)``; a
    plain mapping is taken as the partition. ``None`` stays ``None``. A
    :class:`SliceView` keeps its conversion, so the adapters may convert the
    same view once per record at no cost.
    """
    if stream_slice is None:
        return None
    if type(stream_slice) is SliceView:  # the hot path: a view converted before (once per record)
        known = stream_slice.__dict__.get("_as_airbyte")
        if known is not None:
            return known
    from airbyte_cdk.sources.types import StreamSlice as AirbyteSlice

    if isinstance(stream_slice, AirbyteSlice):
        return stream_slice
    if isinstance(stream_slice, StreamSlice):
        stream_slice = stream_slice.view()
    if isinstance(stream_slice, SliceView):
        known = stream_slice.__dict__.get("_as_airbyte")
        if known is not None:
            return known
        partition = dict(getattr(stream_slice, "partition", {}) or {})
        cursor = dict(getattr(stream_slice, "cursor_slice", {}) or {})
        extra = dict(getattr(stream_slice, "extra_fields", {}) or {})
        if not partition and not cursor and stream_slice:  # a SliceView made without its parts
            partition = dict(stream_slice)
        converted = AirbyteSlice(partition=partition, cursor_slice=cursor, extra_fields=extra)
        stream_slice.__dict__["_as_airbyte"] = converted
        return converted
    return AirbyteSlice(partition=dict(stream_slice), cursor_slice={})


def to_airbyte_record(record: Mapping[str, Any] | None, stream_name: str,
                      stream_slice: Mapping[str, Any] | None = None) -> Any:
    """A record dict as airbyte-cdk's ``Record`` (a mapping with ``.data``, ``.stream_name``, ``.associated_slice``).

    Airbyte hands ``last_record`` to a pagination strategy as a ``Record``; filters and
    transformations get plain dicts there as here. ``None`` stays ``None``.
    """
    if record is None:
        return None
    from airbyte_cdk.sources.types import Record

    if isinstance(record, Record):
        return record
    return Record(data=record, stream_name=stream_name, associated_slice=to_airbyte_slice(stream_slice))


def records_from_airbyte(items: Iterable[Any] | None, what: str = "the component") -> list[dict]:
    """What an Airbyte class answered (dicts, ``Record`` objects) as a list of record dicts.

    A ``Record`` gives its ``.data``; anything that is not a mapping (an
    ``AirbyteMessage`` a retriever yields, say) is a :class:`DecodeError`.
    """
    records: list[dict] = []
    for item in items if items is not None else ():
        data = getattr(item, "data", item) if not isinstance(item, dict) else item
        if type(data) is dict:
            records.append(data)
        elif isinstance(data, Mapping):
            records.append(dict(data))
        else:
            raise DecodeError(f"{what} gave a {type(item).__name__}, not a record (a mapping)")
    return records


def partition_from_airbyte(item: Any) -> tuple[dict, dict]:
    """One item of ``stream_slices()`` as ``(partition, extra_fields)``: Airbyte's ``StreamSlice`` or a mapping."""
    partition = getattr(item, "partition", None)
    if isinstance(partition, Mapping):
        extra = getattr(item, "extra_fields", None) or {}
        return dict(partition), dict(extra)
    if isinstance(item, Mapping):
        return dict(item), {}
    raise DecodeError(f"`stream_slices` gave a {type(item).__name__}, not a partition (a mapping)")


def state_from_airbyte(state: Any) -> Any:
    """A state from Airbyte's classes (mappings, ``AirbyteStateBlob``, lists) as plain JSON values."""
    if state is None or isinstance(state, (str, int, float, bool)):
        return state
    if isinstance(state, Mapping):
        return {str(key): state_from_airbyte(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return [state_from_airbyte(value) for value in state]
    blob = getattr(state, "__dict__", None)
    if isinstance(blob, Mapping):  # AirbyteStateBlob keeps the state as attributes
        return {str(key): state_from_airbyte(value) for key, value in blob.items() if not key.startswith("_")}
    return str(state)


# -- one stream, read by airbyte-cdk's reader, a partition at a time ---------------------------------

class AirbyteUnit(Struct, frozen=True):
    """One Airbyte partition (stream slice) of a bridged stream: the unit of work, of checkpointing, of Spark tasks.

    Plain JSON values, so it travels to executors and back; :meth:`slice`
    rebuilds Airbyte's ``StreamSlice`` from it.
    """

    index: int
    partition: Mapping[str, Any] = field(default_factory=dict)
    cursor_slice: Mapping[str, Any] = field(default_factory=dict)
    extra_fields: Mapping[str, Any] = field(default_factory=dict)

    def slice(self) -> Any:
        from airbyte_cdk.sources.types import StreamSlice as AirbyteSlice

        return AirbyteSlice(partition=dict(self.partition), cursor_slice=dict(self.cursor_slice),
                            extra_fields=dict(self.extra_fields))

    def view(self) -> SliceView:
        """The unit as our slice (what a front end shows, what a progress reporter names)."""
        return StreamSlice(dict(self.partition), dict(self.cursor_slice), dict(self.extra_fields)).view()


def _state_messages(stream_name: str, state: Mapping[str, Any] | None) -> list[Any]:
    if not state:
        return []
    from airbyte_cdk.models import (
        AirbyteStateBlob,
        AirbyteStateMessage,
        AirbyteStateType,
        AirbyteStreamState,
        StreamDescriptor,
    )

    return [AirbyteStateMessage(type=AirbyteStateType.STREAM,
                                stream=AirbyteStreamState(stream_descriptor=StreamDescriptor(name=stream_name),
                                                          stream_state=AirbyteStateBlob(**dict(state))))]


class AirbyteStream:
    """A stream of a manifest, read by airbyte-cdk's declarative source one partition at a time.

    ``manifest`` is the manifest as a mapping (Airbyte resolves ``$ref`` and
    ``$parameters`` itself), ``state`` the stream's saved state in Airbyte's
    shapes. Custom classes are found by import: their modules must be loaded
    (behind the gate) before. Build one on the driver to plan and keep state
    (:meth:`units`, :meth:`finish`, :meth:`state`) and one per worker to read
    (:meth:`read`); in one process, one does both.
    """

    def __init__(self, manifest: Mapping[str, Any], config: Mapping[str, Any], stream_name: str,
                 state: Mapping[str, Any] | None = None, *, place: str | None = None):
        _require(f"stream `{stream_name}` (read through airbyte-cdk)", place)
        from airbyte_cdk.sources.declarative.concurrent_declarative_source import ConcurrentDeclarativeSource

        self.name = stream_name
        self.place = place
        self.config = dict(config)
        try:
            self._source = ConcurrentDeclarativeSource(source_config=copy.deepcopy(dict(manifest)),
                                                       config=self.config,
                                                       state=_state_messages(stream_name, state))
            streams = {stream.name: stream for stream in self._source.streams(self.config)}
        except Exception as exc:
            raise ConfigError(f"airbyte-cdk could not build the stream `{stream_name}`: {type(exc).__name__}: "
                              f"{exc}{place_suffix(place)}") from exc
        if stream_name not in streams:
            raise ConfigError(f"the manifest has no stream `{stream_name}` (airbyte-cdk built "
                              f"{', '.join(sorted(streams)) or 'none'}){place_suffix(place)}")
        self._stream = streams[stream_name]
        self._cursor = self._stream.cursor
        self._partitions: dict[int, Any] = {}
        self._logger = logging.getLogger(f"airbyte.{stream_name}")

    @property
    def cursor_field(self) -> str | None:
        """The cursor's field (``None`` for a stream without state)."""
        found = self._stream.cursor_field
        return found if isinstance(found, str) else None

    def json_schema(self) -> dict:
        return state_from_airbyte(self._stream.get_json_schema())

    def units(self) -> list[AirbyteUnit]:
        """The stream's partitions as units, in Airbyte's order (its router and cursor read parents as needed)."""
        units: list[AirbyteUnit] = []
        for partition in self._stream.generate_partitions():
            found = partition.to_slice()
            index = len(units)
            self._partitions[index] = partition
            units.append(AirbyteUnit(index, state_from_airbyte(dict(getattr(found, "partition", found or {}))),
                                     state_from_airbyte(dict(getattr(found, "cursor_slice", {}) or {})),
                                     state_from_airbyte(dict(getattr(found, "extra_fields", {}) or {}))))
        return units

    def _partition(self, unit: AirbyteUnit) -> Any:
        """This process's partition object of ``unit`` (planned here, or made from the unit's slice)."""
        known = self._partitions.get(unit.index)
        if known is not None and dict(known.to_slice() or {}) == dict(unit.slice()):
            return known
        made = self._partition_factory().create(unit.slice())
        self._partitions[unit.index] = made
        return made

    def _partition_factory(self) -> Any:
        """What makes the stream's partitions, to make one from a unit's slice in a process that did not plan it.

        airbyte-cdk (7.39.1) has no public way to make a stream's partition from
        a slice: a ``DefaultStream`` keeps its ``StreamSlicerPartitionGenerator``,
        and that its ``DeclarativePartitionFactory``, to itself. Both are checked
        to be those classes, so another layout of airbyte-cdk's is a plain error
        rather than an AttributeError in a Spark task.
        """
        from airbyte_cdk.sources.declarative.stream_slicers.declarative_partition_generator import (
            StreamSlicerPartitionGenerator,
        )
        from airbyte_cdk.sources.streams.concurrent.default_stream import DefaultStream

        stream = self._stream
        generator = stream._stream_partition_generator if isinstance(stream, DefaultStream) else None
        if not isinstance(generator, StreamSlicerPartitionGenerator):
            raise FrameworkError(f"airbyte-cdk built the stream `{self.name}` as a {type(stream).__name__} whose "
                                 f"partitions this bridge cannot make from a slice (it is built for airbyte-cdk "
                                 f"{REFERENCE_VERSION}){place_suffix(self.place)}")
        return generator._partition_factory

    def read(self, unit: AirbyteUnit, page_size: int = 1000) -> Iterator[tuple[list[dict], dict | None]]:
        """The records of ``unit``, ``page_size`` at a time, each page with the unit's most recent record so far.

        The most recent record (by the cursor's own reading of its cursor
        field) is what :meth:`finish` needs to move the state; None without a
        cursor. Runs anywhere the manifest's classes load (a Spark task).
        """
        partition = self._partition(unit)
        value_of = self._value_reader()
        best: Any = None
        latest: dict | None = None
        page: list[dict] = []
        for record in partition.read():
            data = dict(record.data) if not isinstance(record.data, dict) else record.data
            page.append(data)
            if value_of is not None:
                value = value_of(record)
                if value is not None and (best is None or value > best):
                    best, latest = value, data
            if len(page) >= page_size:
                yield page, latest
                page = []
        if page or latest is not None:
            yield page, latest

    def _value_reader(self) -> Any:
        cursor = self._cursor
        converter = getattr(cursor, "_connector_state_converter", None)
        cursor_field = getattr(cursor, "cursor_field", None)
        if converter is None or cursor_field is None or not hasattr(cursor_field, "extract_value"):
            return None

        def value_of(record: Any) -> Any:
            try:
                return converter.parse_value(cursor_field.extract_value(record))
            except (ValueError, TypeError, KeyError):
                return None

        return value_of

    def finish(self, unit: AirbyteUnit, latest: Mapping[str, Any] | None = None) -> None:
        """``unit`` is read: its most recent record (from :meth:`read`) is observed and the partition closed.

        Call it on the process that planned the units, in any order: Airbyte's
        cursor keeps the state behind the partitions still open.
        """
        from airbyte_cdk.sources.types import Record

        partition = self._partition(unit)
        if latest is not None:
            self._cursor.observe(Record(data=dict(latest), stream_name=self.name,
                                        associated_slice=partition.to_slice()))
        self._cursor.close_partition(partition)

    def state(self, final: bool = False) -> dict | None:
        """The stream's state now, in Airbyte's shapes (None for a stream without a cursor).

        ``final`` at the end of a successful sync: Airbyte's end-of-stream step
        runs first (a per-partition cursor then moves its global ``state``,
        ``lookback_window`` and ``parent_state``).
        """
        if type(self._cursor).__name__ == "FinalStateCursor":
            return None
        if final:
            self._cursor.ensure_at_least_one_state_emitted()
        found = getattr(self._cursor, "state", None)
        return None if found is None else state_from_airbyte(found)
