"""From a response to the records a stream emits: the runtimes of ``RecordFilter`` and ``RecordSelector``.

``RecordSelector.select`` extracts the records, then transforms and filters
them (in the order ``transform_before_filtering`` says: left out, it is true
on a stream whose cursor is ``is_client_side_incremental``, as in Airbyte, and
false otherwise), then casts them to the stream schema when
``schema_normalization`` is ``Default`` and a schema was given with
:meth:`RecordSelector.with_schema`. Transformations run one after the other
over the whole page (``apply_page`` where they have it). Steps that have nothing to do
cost nothing: with no filter, no transformation and no schema the extracted
list is returned as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.transport import HttpResponse
from framework.components.records.conditions import Condition, Transformation
from framework.components.records.extraction import DpathExtractor
from framework.components.records.schema_normalization import compile_normalizer
from framework.interpolation import TemplateEngine
from framework.models import records as models
from framework.values import replace


class RecordFilter(Struct, frozen=True):
    """Keeps the records for which ``condition`` is true (``None``: a constant condition)."""

    condition: Condition | None
    parameters: Mapping[str, Any]
    engine: TemplateEngine

    def keep(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        condition = self.condition
        if condition is None:
            return records
        if condition.never:
            return []
        context = dict(variables)
        if self.parameters:
            context["parameters"] = self.parameters
        kept = []
        evaluate, source = self.engine.evaluate, condition.source
        for record in records:
            context["record"] = record
            if evaluate(source, context, "boolean"):
                kept.append(record)
        return kept


class RecordSelector(Struct, frozen=True):
    """Extracts, transforms, filters and normalizes the records of one response."""

    extractor: DpathExtractor
    record_filter: RecordFilter | None = None
    transformations: tuple[Transformation, ...] = ()
    transform_before_filtering: bool | None = None  # None: as the stream's cursor decides (false without one)
    normalize: bool = False  # schema_normalization: Default
    normalizer: Callable[[dict], None] | None = None
    #: a custom schema normalization: the normalizer for a schema
    custom_normalizer: Callable[[Mapping[str, Any]], Callable[[dict], None]] | None = None

    def with_transformations(self, transformations: Sequence[Transformation]) -> RecordSelector:
        """A selector that also applies ``transformations`` (after those it has)."""
        return replace(self, transformations=self.transformations + tuple(transformations))

    def with_client_side_incremental(self) -> RecordSelector:
        """A selector for a stream whose cursor filters client-side: transformations first unless the manifest says."""
        if self.transform_before_filtering is not None:
            return self
        return replace(self, transform_before_filtering=True)

    def with_schema(self, schema: Mapping[str, Any]) -> RecordSelector:
        """A selector that casts records to ``schema``; itself when normalization is off."""
        if self.custom_normalizer is not None:
            return replace(self, normalizer=self.custom_normalizer(schema))
        if not self.normalize:
            return self
        return replace(self, normalizer=compile_normalizer(schema))

    def select(self, response: HttpResponse, variables: Mapping[str, Any]) -> list[dict]:
        return self.select_page(response, variables)[1]

    def select_page(self, response: HttpResponse, variables: Mapping[str, Any]) -> tuple[list[dict], list[dict]]:
        """``(page, records)``: every record the response holds, and those this selector keeps.

        Paginators judge the page (a short page is the last one; ``last_record``) by what
        the API returned, not by what a filter kept: a page thinned out by a filter is not
        the last page. A record the transformations changed is in the page as changed (a
        ``last_record`` template reads the names the transformations give, as in Airbyte).
        """
        page = self.extractor.extract(response)
        if not page:
            return page, page
        if not self.transformations:
            return page, self._select(page, variables)
        if self.transform_before_filtering:
            page = self._transform(page, variables)
            return page, self._normalized(self._filter(page, variables))
        kept = self._filter(page, variables)
        changed = self._transform(kept, variables)
        if len(changed) == len(page):  # nothing filtered out
            page = changed
        elif changed:
            by_record = {id(before): after for before, after in zip(kept, changed, strict=True)}
            page = [by_record.get(id(record), record) for record in page]
        return page, self._normalized(changed)

    def select_batches(self, response: HttpResponse,
                       variables: Mapping[str, Any]) -> Iterator[tuple[list[dict], list[dict]]]:
        """``(batch, records)`` as :meth:`select_page`, batch by batch as a streamed response format reads them."""
        for batch in self.extractor.extract_batches(response):
            yield batch, self._select(batch, variables)

    def _select(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        if not records:
            return records
        if self.transform_before_filtering:
            records = self._transform(records, variables)
            records = self._filter(records, variables)
        else:
            records = self._filter(records, variables)
            records = self._transform(records, variables)
        return self._normalized(records)

    def _normalized(self, records: list[dict]) -> list[dict]:
        normalizer = self.normalizer
        if normalizer is not None:
            for record in records:
                normalizer(record)
        return records

    def _filter(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        if self.record_filter is None:
            return records
        return self.record_filter.keep(records, variables)

    def _transform(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        for transformation in self.transformations:
            if not records:
                break
            on_page = getattr(transformation, "apply_page", None)
            if on_page is not None:
                records = on_page(records, variables)
            else:
                apply = transformation.apply
                records = [apply(record, variables) for record in records]
        return records


@builds("DpathExtractor")
def build_dpath_extractor(model: models.DpathExtractor, ctx: BuildContext, path: tuple) -> DpathExtractor:
    field_path = tuple(str(ctx.render(key, model.parameters)) for key in model.field_path)
    expander = None
    if model.record_expander is not None:
        expander = ctx.build(model.record_expander, path + ("record_expander",))
    return DpathExtractor(field_path, ctx.place(path), ctx.mask, expander)


@builds("RecordFilter")
def build_record_filter(model: models.RecordFilter, ctx: BuildContext, path: tuple) -> RecordFilter:
    return RecordFilter(Condition.of(model.condition, ctx.engine), model.parameters, ctx.engine)


@builds("RecordSelector")
def build_record_selector(model: models.RecordSelector, ctx: BuildContext, path: tuple) -> RecordSelector:
    extractor = ctx.build(model.extractor, path + ("extractor",))  # a DpathExtractor, or a custom one
    record_filter = None
    if model.record_filter is not None:
        record_filter = ctx.build(model.record_filter, path + ("record_filter",))
        if isinstance(record_filter, RecordFilter) and record_filter.condition is None:  # always true: no work
            record_filter = None
    return RecordSelector(
        extractor,
        record_filter,
        transform_before_filtering=model.transform_before_filtering,
        normalize=model.schema_normalization == "Default",
        custom_normalizer=None if isinstance(model.schema_normalization, str)
        else ctx.build(model.schema_normalization, path + ("schema_normalization",)).normalizer_for,
    )


__all__ = ["RecordFilter", "RecordSelector"]
