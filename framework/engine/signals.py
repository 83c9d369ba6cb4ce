"""Signs that a manifest reads the wrong data, found in what a read saw: each with the fix.

A manifest can run "ok" and land wrong data: an extractor pointed at the
wrong key finds nothing, a paginator whose next-page value renders empty
stops after one page, a page counter starting at 0 on an API that counts from
1 reads page 1 twice. These checks look at the records of a few pages and
the response bodies they came from, and say what looks wrong and what to
change. They are pure (records and JSON documents in, :class:`Signal` out):
``run-manifest --test-read`` (:mod:`framework.engine.test_read`) runs all of
them; a normal run runs those that need no request of their own on the first
pages it reads: :class:`FirstPages` and the first response's body in protocol
mode, a :class:`UnitWatch` per unit in a Spark task (its signals go back in
the unit's result and the driver says each kind once per stream).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson
from msgspec import Struct

#: Keys whose value often names the next page (a token, a cursor, a URL) in a response.
_NEXT_KEY = re.compile(r"(^|_|-|\b)(next|cursor|continuation|page_?token|after|more|nextpage|next_?url)"
                       r"|next[A-Z_]|Cursor$|Token$", re.IGNORECASE)
_MAX_DEPTH = 4
_SHOW = 60  # characters of a value shown in a message


class Signal(Struct, frozen=True):
    """One thing that looks wrong in a stream's data: what (``kind``), where it was seen, and the fix."""

    stream: str
    kind: str
    message: str
    fix: str

    def format(self) -> str:
        return f"{self.stream}: {self.message}\n  fix: {self.fix}"

    def line(self) -> str:
        """The signal on one line, as a normal run warns of it."""
        return f"{self.stream}: {self.message}; fix: {self.fix}"

    def masked(self, mask: Callable[[str], str]) -> Signal:
        """This signal with ``mask`` (a connector's secret masking) applied to its texts."""
        return Signal(self.stream, self.kind, mask(self.message), mask(self.fix))


def _path_text(path: Sequence[Any]) -> str:
    return ".".join(str(part) for part in path) if path else "(the body itself)"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _SHOW else text[: _SHOW - 1] + "…"


def record_lists(document: Any, path: tuple = (), depth: int = 0) -> Iterator[tuple[tuple, int]]:
    """Paths of the non-empty lists of objects in a JSON document, with their lengths (outermost first)."""
    if isinstance(document, list):
        if document and all(isinstance(item, Mapping) for item in document[:20]):
            yield path, len(document)
        return
    if isinstance(document, Mapping) and depth < _MAX_DEPTH:
        for key, value in document.items():
            yield from record_lists(value, (*path, key), depth + 1)


def next_page_fields(document: Any, path: tuple = (), depth: int = 0) -> Iterator[tuple[tuple, Any]]:
    """Fields of a JSON document (not inside record lists) that look like a next-page value and are set."""
    if not isinstance(document, Mapping) or depth >= _MAX_DEPTH:
        return
    for key, value in document.items():
        here = (*path, key)
        if isinstance(value, Mapping):
            yield from next_page_fields(value, here, depth + 1)
        elif isinstance(key, str) and _NEXT_KEY.search(key) and value not in (None, "", False, [], 0):
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                yield here, value


def empty_extraction(stream: str, records: int, body: Any, field_path: Sequence[str] | None) -> Signal | None:
    """The extractor found nothing, while the response holds a list of objects elsewhere."""
    if records or body is None:
        return None
    lists = [(path, size) for path, size in record_lists(body) if tuple(path) != tuple(field_path or ())]
    if not lists:
        return None
    path, size = max(lists, key=lambda found: found[1])
    now = f"field_path: {list(field_path)}" if field_path else "the extractor"
    return Signal(stream, "extractor-empty",
                  f"{now} found no records, but the response has a list of {size} objects at "
                  f"`{_path_text(path)}`",
                  f"set the record selector's extractor to field_path: {list(path)}")


def pagination_stopped(stream: str, pages: int, paginated: bool, last_body: Any, last_records: int,
                       cursor_value: str | None) -> Signal | None:
    """Paging stopped after the first page while the response names a next page."""
    if not paginated or pages != 1 or last_body is None or not last_records:
        return None
    candidates = list(next_page_fields(last_body))
    if not candidates:
        return None
    path, value = candidates[0]
    where = ".".join(str(p) for p in path)
    said = f" (cursor_value is `{cursor_value}`)" if cursor_value else ""
    if any(str(part) == "has_more" or str(part).lower() in ("hasmore", "more") for part in path):
        return Signal(stream, "pagination-stopped",
                      f"paging stopped after page 1 while the response says `{where}`: {_short(value)}{said}",
                      "check the paginator's stop_condition and the value it reads for the next page")
    return Signal(stream, "pagination-stopped",
                  f"paging stopped after page 1, but the response has `{where}` = {_short(value)}{said}",
                  f"if that is the next page's value, use cursor_value: \"{{{{ response.{where} }}}}\" "
                  f"and stop_condition: \"{{{{ not response.{where} }}}}\"")


def _fingerprint(records: Sequence[Mapping[str, Any]]) -> bytes:
    try:
        return orjson.dumps(list(records), option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:  # an integer beyond 64 bits (Python's JSON reader keeps them)
        return json.dumps(list(records), sort_keys=True, default=str).encode()


def repeated_pages(stream: str, pages: Sequence[Sequence[Mapping[str, Any]]],
                   strategy: Mapping[str, Any] | None) -> Signal | None:
    """Two pages with identical records (page 1 read twice: a page counter that starts one too low)."""
    seen: dict[bytes, int] = {}
    for number, records in enumerate(pages, start=1):
        if not records:
            continue
        key = _fingerprint(records)
        if key in seen:
            fix = "check what the paginator sends for each page"
            if strategy and strategy.get("type") == "PageIncrement" and not strategy.get("start_from_page"):
                fix = ("the page counter starts at 0; if the API's pages start at 1, set start_from_page: 1 in "
                       "the PageIncrement")
            elif strategy and strategy.get("type") == "OffsetIncrement":
                fix = "check that the offset's request option reaches the API (its field_name and inject_into)"
            return Signal(stream, "repeated-page",
                          f"pages {seen[key]} and {number} have the same {len(records)} records: the next-page "
                          f"value did not move to another page", fix)
        seen[key] = number
    return None


def _lookup(record: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = record
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def missing_fields(stream: str, records: Sequence[Mapping[str, Any]], primary_key: Sequence[Sequence[str]],
                   cursor_field: str | None) -> list[Signal]:
    """Records without the primary key or the cursor field (a typo, or a field the API nests)."""
    found: list[Signal] = []
    if not records:
        return found
    for key in primary_key:
        missing = sum(1 for record in records if _lookup(record, key) is None)
        if missing:
            found.append(Signal(stream, "missing-key",
                                f"{missing} of {len(records)} records have no primary key `{'.'.join(key)}`"
                                f"{_nearest(records, key[-1])}",
                                "point primary_key at a field every record has"))
    if cursor_field:
        missing = sum(1 for record in records if record.get(cursor_field) is None)
        if missing:
            found.append(Signal(stream, "missing-cursor",
                                f"{missing} of {len(records)} records have no cursor field `{cursor_field}`"
                                f"{_nearest(records, cursor_field)}",
                                "point the incremental sync's cursor_field at a field every record has "
                                "(records without it are never filtered and never move the state)"))
    return found


def _nearest(records: Sequence[Mapping[str, Any]], name: str) -> str:
    import difflib

    keys = sorted({key for record in records[:50] for key in record if isinstance(key, str)})
    close = difflib.get_close_matches(name, keys, n=1, cutoff=0.6)
    return f" (the records have `{close[0]}`)" if close else ""


def outside_window(stream: str, records: Iterable[Mapping[str, Any]], in_window: Any, record_value: Any,
                   window: Mapping[str, Any], cursor_field: str) -> Signal | None:
    """Records whose cursor value is outside the window that was asked for (the API ignored the bounds)."""
    outside = total = 0
    example = None
    for record in records:
        value = record_value(record)
        if value is None:
            continue
        total += 1
        if not in_window(value, window):
            outside += 1
            example = example or value
    if not outside:
        return None
    bounds = ", ".join(f"{k}={v}" for k, v in window.items())
    return Signal(stream, "outside-window",
                  f"{outside} of {total} records have `{cursor_field}` outside the requested window ({bounds}), "
                  f"e.g. {example}",
                  "send the window to the API: set start_time_option / end_time_option (field_name and "
                  "inject_into as the API's docs say), or mark the cursor is_client_side_incremental: true if "
                  "the API cannot filter")


def undeclared_fields(stream: str, records: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]
                      ) -> Signal | None:
    """Top-level fields of the records that the stream's schema does not declare (they land untyped or not)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties or not records:
        return None
    extra = sorted({key for record in records for key in record if key not in properties})
    if not extra:
        return None
    shown = ", ".join(f"`{key}`" for key in extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
    return Signal(stream, "undeclared-fields",
                  f"the records have fields the schema does not declare: {shown}",
                  "add them to the stream's schema (or remove them with a RemoveFields transformation)")




def none_parameters(stream: str, request_parameters: Any, gives_none: Callable[[str], bool]) -> Signal | None:
    """Request parameters left out because their template gives nothing with this config, where airbyte-cdk
    sends the text ``None`` (``gives_none``: whether a template's value is ``None`` itself, read with the
    config alone; templates reading anything else are not looked at)."""
    if not isinstance(request_parameters, Mapping):
        return None
    names = []
    for name, template in request_parameters.items():
        if isinstance(template, str) and "{{" in template and "config" in template:
            try:
                if gives_none(template):
                    names.append(str(name))
            except Exception:  # noqa: BLE001 - a template that needs more than the config: not this check's
                continue
    if not names:
        return None
    shown = ", ".join(f"`{name}`" for name in names)
    example = request_parameters[names[0]]
    return Signal(stream, "none-parameter",
                  f"request parameter{'s' * (len(names) > 1)} {shown} {'are' if len(names) > 1 else 'is'} left out "
                  f"of the requests: {_short(example)} gives nothing with this config (airbyte-cdk sends such a "
                  f"parameter as the text None: `{names[0]}=None`)",
                  "if the API needs a value, set it in the config or give the template a default "
                  f"(`{{{{ config.get('{names[0]}', ...) }}}}`); left out, the API uses its own default")


class FirstPages:
    """The first pages of a sync's stream, kept to warn in a normal run (cheap: a few pages, then nothing).

    Fed each page as it comes (with its unit), it keeps the first ``limit``
    pages; :meth:`signals` runs the checks that need no response body: pages
    of one unit that repeat, records without the primary key or the cursor
    field, fields the schema does not declare.
    """

    def __init__(self, stream: str, primary_key: Sequence[Sequence[str]], cursor_field: str | None,
                 strategy: Mapping[str, Any] | None = None, limit: int = 3) -> None:
        self.stream, self.primary_key, self.cursor_field = stream, primary_key, cursor_field
        self.strategy, self.limit = strategy, limit
        self.pages: list[tuple[Any, Sequence[Mapping[str, Any]]]] = []

    def page(self, unit: Any, records: Sequence[Mapping[str, Any]]) -> None:
        if len(self.pages) < self.limit and records:
            self.pages.append((unit, records))

    def signals(self) -> list[Signal]:
        found: list[Signal] = []
        units: dict[int, list[Sequence[Mapping[str, Any]]]] = {}
        for unit, records in self.pages:
            units.setdefault(id(unit), []).append(records)
        for pages in units.values():
            repeated = repeated_pages(self.stream, pages, self.strategy)
            if repeated is not None:
                found.append(repeated)
                break
        records = [record for _, page in self.pages for record in page]
        found.extend(missing_fields(self.stream, records, self.primary_key, self.cursor_field))
        return found  # undeclared fields: --test-read only (many schemas list some fields on purpose)

class ReadFacts(Struct, frozen=True):
    """What the checks of a normal run need to know of a stream's manifest (as written): the extractor's
    ``field_path``, the pagination strategy, whether it pages at all, and its ``cursor_value``."""

    field_path: tuple[str, ...] | None = None
    strategy: Mapping[str, Any] | None = None
    paginated: bool = False

    @classmethod
    def of(cls, definition: Mapping[str, Any]) -> ReadFacts:
        """The facts of a stream's definition (a mapping of the manifest's ``streams``)."""
        retriever = dig(definition, "retriever")
        field_path = dig(retriever, "record_selector", "extractor", "field_path")
        strategy = dig(retriever, "paginator", "pagination_strategy")
        return cls(tuple(str(part) for part in field_path) if isinstance(field_path, list) else None,
                   strategy if isinstance(strategy, Mapping) else None,
                   dig(retriever, "paginator", "type") not in (None, "NoPagination"))

    @property
    def cursor_value(self) -> str | None:
        value = self.strategy.get("cursor_value") if self.strategy else None
        return value if isinstance(value, str) else None


def stream_definition(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """Stream ``name``'s definition in ``manifest`` (as written), or an empty mapping."""
    for stream in manifest.get("streams", ()) or ():
        if isinstance(stream, Mapping) and stream.get("name") == name:
            return stream
    return {}


def pagination_strategy(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """Stream ``name``'s pagination strategy in ``manifest`` (as written), or None."""
    found = dig(stream_definition(manifest, name), "retriever", "paginator", "pagination_strategy")
    return found if isinstance(found, Mapping) else None


def dig(mapping: Any, *path: str) -> Any:
    """The value at ``path`` in nested mappings (a manifest as written), or None where a step is missing."""
    for part in path:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(part)
    return mapping


_UNSEEN: Any = object()


class UnitWatch:
    """What the first pages of one unit showed, for the warnings of a normal run (a Spark task's).

    Called by the retriever with each response it reads (``response`` None when
    its body is not JSON or was streamed), the page as the API sent it and the
    records kept (:data:`framework.components.retriever.PAGE_WATCH`). It counts
    the responses and those that gave no record, and keeps the first ``limit``
    pages of records and the first response's JSON body (only when the checks
    may need it): bounded work, whatever the unit's size. :meth:`signals` then
    runs the checks a test read runs, but for fields the schema does not
    declare (many schemas list some fields on purpose) and records outside the
    window (the read filters them already).
    """

    def __init__(self, stream: str, facts: ReadFacts, primary_key: Sequence[Sequence[str]],
                 cursor_field: str | None, limit: int = 3) -> None:
        self.stream, self.facts, self.limit = stream, facts, limit
        self.primary_key, self.cursor_field = primary_key, cursor_field
        self.responses = 0
        self.empty = 0  # responses that gave no record
        self.first_extracted = 0
        self.first_body: Any = _UNSEEN
        self.pages: list[list[dict]] = []
        self._lock = threading.Lock()  # protocol mode watches a stream whose units several threads read

    def __call__(self, response: Any, page: list[dict], records: list[dict]) -> None:
        with self._lock:
            self._seen(response, page, records)

    def _seen(self, response: Any, page: list[dict], records: list[dict]) -> None:
        self.responses += 1
        if not records:
            self.empty += 1
        elif len(self.pages) < self.limit:
            self.pages.append(records)
        if self.responses == 1:
            self.first_extracted = len(page)
            # the body, only where a check reads it: nothing extracted, or a paginator that may stop too soon
            if response is not None and (not page or self.facts.paginated):
                try:
                    self.first_body = response.json()
                except Exception:  # noqa: BLE001 - not JSON after all: no body to look into
                    self.first_body = None

    def body_signals(self) -> list[Signal]:
        """What the first response's body shows: an extractor that found nothing while the body holds a list
        elsewhere; paging that stopped after one page while the body names a next page."""
        if not self.responses:
            return []
        body = None if self.first_body is _UNSEEN else self.first_body
        found = (empty_extraction(self.stream, self.first_extracted, body, self.facts.field_path),
                 pagination_stopped(self.stream, self.responses, self.facts.paginated, body, self.first_extracted,
                                    self.facts.cursor_value))
        return [signal for signal in found if signal is not None]

    def signals(self) -> list[Signal]:
        """What looks wrong in the pages seen (each check at most once)."""
        result = self.body_signals()
        repeated = repeated_pages(self.stream, self.pages, self.facts.strategy)
        if repeated is not None:
            result.append(repeated)
        result.extend(missing_fields(self.stream, [r for page in self.pages for r in page], self.primary_key,
                                     self.cursor_field))
        return result


__all__ = ["FirstPages", "ReadFacts", "Signal", "UnitWatch", "empty_extraction", "missing_fields",
           "next_page_fields", "none_parameters", "outside_window", "pagination_stopped", "pagination_strategy",
           "record_lists", "repeated_pages", "stream_definition", "undeclared_fields"]
