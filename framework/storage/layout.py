"""Object keys of a stream's files, named like Airbyte's S3 destination names them.

A key is the rendered ``s3_path_format`` followed by the rendered
``file_name_pattern``, relative to the storage root (``s3_bucket_path`` in the
bucket, or the local output folder)::

    ${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}_${EPOCH}_  +  {part_number}{format_extension}
    -> public/users/2024_03_05_1709647200123_0.parquet

Path variables, from the time the sync started, in UTC:

=================  ==========================================================
``${NAMESPACE}``   the stream's namespace; when empty its segment disappears
``${STREAM_NAME}`` the stream's name
``${YEAR}``        four digits
``${MONTH}``, ``${DAY}``, ``${HOUR}``, ``${MINUTE}``, ``${SECOND}``  two digits
``${MILLISECOND}`` three digits
``${EPOCH}``       milliseconds since 1970
``${UUID}``        a UUID, one per stream and sync: derived from the stream,
                   the namespace, the sync id and the start time, so that
                   parallel writers of one sync share it
=================  ==========================================================

File name variables: ``{date}`` (``yyyy_MM_dd``), ``{date:<Java date
pattern>}`` such as ``{date:yyyy_MM}``, ``{timestamp}`` and
``{timestamp:millis}`` (epoch milliseconds), ``{timestamp:micros}`` (epoch
microseconds), ``{part_number}``, ``{sync_id}`` and ``{format_extension}``
(``.parquet``, ``.csv.gz``, ...). Unknown placeholders stay as they are
written, and spaces in the pattern become ``_``, as in Airbyte. The file name
pattern must contain ``{part_number}``: it is what keeps the files of one
stream apart.

Namespace and stream name are made safe for object keys the way Airbyte does
it: accents are dropped, and characters other than letters, digits and
``/!_.*')(&$@=;:+,?-`` become ``_``. Repeated slashes collapse to one.

Part numbers continue after the highest already present for the stream
(:func:`next_part_number`); parallel writers take interleaved numbers from
:class:`PartNumbers`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.errors import ConfigError
from framework.output_names import safe_name

if TYPE_CHECKING:
    from framework.models.destination import DestinationSettings
    from framework.storage.objects import Storage

DEFAULT_PATH_FORMAT = "${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}_${EPOCH}_"
DEFAULT_FILE_NAME_PATTERN = "{part_number}{format_extension}"

_PATH_VARIABLE = re.compile(r"\$\{(NAMESPACE|STREAM_NAME|YEAR|MONTH|DAY|HOUR|MINUTE|SECOND|MILLISECOND|EPOCH|UUID)\}")
_FILE_VARIABLE = re.compile(r"\{(date(?::[^}]+)?|timestamp(?::(?:millis|micros?))?|part_number|sync_id|"
                            r"format_extension)\}")
_TIME_REGEX = {"YEAR": r"\d{4}", "MONTH": r"\d{2}", "DAY": r"\d{2}", "HOUR": r"\d{2}", "MINUTE": r"\d{2}",
               "SECOND": r"\d{2}", "MILLISECOND": r"\d{3}", "EPOCH": r"\d+",
               "UUID": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"}


def _utc(when: datetime | float | None) -> datetime:
    if when is None:
        when = datetime.now(timezone.utc)
    elif isinstance(when, (int, float)):
        when = datetime.fromtimestamp(when, timezone.utc)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    when = when.astimezone(timezone.utc)
    return when.replace(microsecond=when.microsecond // 1000 * 1000)


def _epoch_ms(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(milliseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class StreamLayout:
    """How the files of one stream in one sync are named.

    ``directory`` is the rendered path format; ``scan_prefix`` the part of it
    that does not change from sync to sync (up to the first time or UUID
    variable), under which all the stream's files are found; ``pattern``
    matches the keys of the stream's files from any sync, with the part number
    as group ``part``.
    """

    directory: str
    file_name_pattern: str
    extension: str
    time: datetime
    sync_id: int
    scan_prefix: str
    pattern: re.Pattern = field(compare=False)

    @classmethod
    def of(cls, settings: DestinationSettings, stream: str, namespace: str | None = "", *,
           started_at: datetime | float | None = None, sync_id: int = 0, extension: str | None = None,
           new_uuid: Callable[[], Any] | None = None) -> StreamLayout:
        """The layout from ``DestinationSettings`` (``s3_path_format``, ``file_name_pattern``, ``format``)."""
        return cls.build(
            path_format=getattr(settings, "s3_path_format", None),
            file_name_pattern=getattr(settings, "file_name_pattern", None),
            extension=extension if extension is not None else settings.format.extension,
            stream=stream, namespace=namespace, started_at=started_at, sync_id=sync_id, new_uuid=new_uuid,
        )

    @classmethod
    def build(cls, *, path_format: str | None, file_name_pattern: str | None, extension: str, stream: str,
              namespace: str | None = "", started_at: datetime | float | None = None, sync_id: int = 0,
              new_uuid: Callable[[], Any] | None = None) -> StreamLayout:
        when = _utc(started_at)
        names = {"NAMESPACE": safe_name(namespace or ""), "STREAM_NAME": safe_name(stream)}
        path = _PATH_VARIABLE.sub(lambda m: names.get(m.group(1), m.group(0)), path_format or DEFAULT_PATH_FORMAT)
        path = re.sub(r"/+", "/", path).lstrip("/")
        values = {"YEAR": f"{when.year:04d}", "MONTH": f"{when.month:02d}", "DAY": f"{when.day:02d}",
                  "HOUR": f"{when.hour:02d}", "MINUTE": f"{when.minute:02d}", "SECOND": f"{when.second:02d}",
                  "MILLISECOND": f"{when.microsecond // 1000:03d}", "EPOCH": str(_epoch_ms(when)),
                  "UUID": str(new_uuid() if new_uuid else uuid.uuid5(
                      uuid.NAMESPACE_URL, f"sync/{namespace or ''}/{stream}/{sync_id}/{_epoch_ms(when)}"))}
        directory = _PATH_VARIABLE.sub(lambda m: values[m.group(1)], path)
        first = _PATH_VARIABLE.search(path)
        scan_prefix = path[:first.start()] if first else path
        name_pattern = (file_name_pattern or "").strip().replace(" ", "_") or DEFAULT_FILE_NAME_PATTERN
        if "{part_number}" not in name_pattern:
            raise ConfigError(
                f"`file_name_pattern` {file_name_pattern!r} has no `{{part_number}}`: without it the files of a "
                f"stream would overwrite each other; add `{{part_number}}`"
            )
        for match in _FILE_VARIABLE.finditer(name_pattern):
            if match.group(1).startswith("date:"):
                _java_date(match.group(1)[5:], when)  # fails early on a pattern we cannot format
        regex = _path_regex(path) + _name_regex(name_pattern, extension)
        return cls(directory, name_pattern, extension, when, sync_id, scan_prefix, re.compile(regex))

    def key(self, part_number: int, now: datetime | float | None = None) -> str:
        """The key of part ``part_number``; ``{date}`` and ``{timestamp}`` use ``now`` (the sync start if None)."""
        when = self.time if now is None else _utc(now)

        def value(match: re.Match) -> str:
            name = match.group(1)
            if name == "part_number":
                return str(part_number)
            if name == "format_extension":
                return self.extension
            if name == "sync_id":
                return str(self.sync_id)
            if name == "date":
                return when.strftime("%Y_%m_%d")
            if name.startswith("date:"):
                return _java_date(name[5:], when)
            if name.startswith("timestamp:micro"):
                return str(_epoch_ms(when) * 1000)
            return str(_epoch_ms(when))  # {timestamp}, {timestamp:millis}

        return self.directory + _FILE_VARIABLE.sub(value, self.file_name_pattern)

    def part_number_of(self, key: str) -> int | None:
        """The part number of a key of this stream's files (from any sync), or None for other keys."""
        match = self.pattern.fullmatch(key)
        return int(match.group("part")) if match else None


def next_part_number(storage: Storage, layout: StreamLayout | DestinationSettings, stream: str | None = None,
                     namespace: str | None = "") -> int:
    """One more than the highest part number among the stream's existing files; 0 when there are none.

    ``layout`` is a :class:`StreamLayout`, or ``DestinationSettings`` with the
    ``stream`` name (and namespace) to make one.
    """
    if not isinstance(layout, StreamLayout):
        if stream is None:
            raise TypeError("next_part_number needs a StreamLayout, or the settings with a stream name")
        layout = StreamLayout.of(layout, stream, namespace)
    highest = -1
    for info in storage.list(layout.scan_prefix, with_metadata=False):
        number = layout.part_number_of(info.key)
        if number is not None and number > highest:
            highest = number
    return highest + 1


def stream_folders(settings: DestinationSettings, names: list[str], namespace: str | None = "") -> dict[str, str]:
    """Each stream's folder (the part of its keys no sync changes) under the settings' path format, for
    :func:`framework.output_names.check_stream_folders`; none when the format does not name the stream."""
    if "${STREAM_NAME}" not in (getattr(settings, "s3_path_format", None) or DEFAULT_PATH_FORMAT):
        return {}
    return {name: StreamLayout.of(settings, name, namespace).scan_prefix for name in names}


class PartNumbers(Struct, frozen=True):
    """Part numbers for one of several parallel writers: ``start + offset``, then every ``stride``-th.

    Task ``i`` of ``T`` uses ``PartNumbers(start, T, i)``: no two tasks ever get the same number.
    """

    start: int
    stride: int = 1
    offset: int = 0

    def __post_init__(self) -> None:
        if self.stride < 1 or not 0 <= self.offset < self.stride or self.start < 0:
            raise ValueError(f"part numbers need start >= 0, stride >= 1 and 0 <= offset < stride; got {self}")

    def __iter__(self) -> Iterator[int]:
        number = self.start + self.offset
        while True:
            yield number
            number += self.stride

    def nth(self, index: int) -> int:
        return self.start + self.offset + index * self.stride


# ------------------------------------------------------------------ regexes


def _path_regex(path: str) -> str:
    out, last = [], 0
    for match in _PATH_VARIABLE.finditer(path):
        out.append(re.escape(path[last:match.start()]))
        out.append(_TIME_REGEX[match.group(1)])
        last = match.end()
    out.append(re.escape(path[last:]))
    return "".join(out)


def _name_regex(pattern: str, extension: str) -> str:
    out, last, seen_part = [], 0, False
    for match in _FILE_VARIABLE.finditer(pattern):
        out.append(re.escape(pattern[last:match.start()]))
        name = match.group(1)
        if name == "part_number":
            out.append(r"(?P=part)" if seen_part else r"(?P<part>\d+)")
            seen_part = True
        elif name == "format_extension":
            out.append(re.escape(extension))
        elif name == "date":
            out.append(r"\d{4}_\d{2}_\d{2}")
        elif name.startswith("date:"):
            out.append(_java_date_regex(name[5:]))
        else:  # timestamps, sync_id
            out.append(r"\d+")
        last = match.end()
    out.append(re.escape(pattern[last:]))
    return "".join(out)


# ------------------------------------------------- Java date patterns ({date:...})

_JAVA_TOKEN = re.compile(r"'([^']*)'|([A-Za-z])\2*|[^A-Za-z']+")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _java_tokens(fmt: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs: kind is a pattern letter, or ``''`` for literal text."""
    tokens = []
    for match in _JAVA_TOKEN.finditer(fmt):
        if match.group(1) is not None:
            tokens.append(("", match.group(1) or "'"))
        elif match.group(2):
            tokens.append((match.group(2), match.group(0)))
        else:
            tokens.append(("", match.group(0)))
    return tokens


def _java_date(fmt: str, when: datetime) -> str:
    """``when`` (UTC) formatted with a Java ``SimpleDateFormat`` pattern such as ``yyyy_MM_dd'T'HH``."""
    out = []
    for letter, text in _java_tokens(fmt):
        n = len(text)
        if not letter:
            out.append(text)
        elif letter == "y":
            out.append(f"{when.year % 100:02d}" if n == 2 else f"{when.year:0{n}d}")
        elif letter == "M":
            out.append(_MONTHS[when.month - 1][:3] if n == 3 else _MONTHS[when.month - 1] if n > 3
                       else f"{when.month:0{n}d}")
        elif letter == "E":
            out.append(_DAYS[when.weekday()] if n > 3 else _DAYS[when.weekday()][:3])
        elif letter in _NUMBERS:
            out.append(f"{_NUMBERS[letter](when):0{n}d}")
        elif letter == "a":
            out.append("AM" if when.hour < 12 else "PM")
        elif letter == "Z":
            out.append("+0000")
        elif letter == "X":
            out.append("Z")
        else:
            raise ConfigError(
                f"date pattern {fmt!r} in `file_name_pattern` uses `{letter}`, which is not supported; use "
                f"y, M, d, D, H, h, k, K, m, s, S, E, u, a, Z or X, and quote literal letters ('T')"
            )
    return "".join(out)


_NUMBERS: dict[str, Callable[[datetime], int]] = {
    "d": lambda t: t.day, "D": lambda t: t.timetuple().tm_yday, "H": lambda t: t.hour,
    "k": lambda t: t.hour or 24, "K": lambda t: t.hour % 12, "h": lambda t: t.hour % 12 or 12,
    "m": lambda t: t.minute, "s": lambda t: t.second, "S": lambda t: t.microsecond // 1000,
    "u": lambda t: t.isoweekday(),
}


def _java_date_regex(fmt: str) -> str:
    out = []
    for letter, text in _java_tokens(fmt):
        if not letter:
            out.append(re.escape(text))
        elif letter in "ME" and len(text) >= 3:
            out.append(r"[A-Za-z]+")
        elif letter == "a":
            out.append(r"[AP]M")
        elif letter == "Z":
            out.append(r"[+-]\d{4}")
        elif letter == "X":
            out.append("Z")
        else:
            out.append(r"\d+")
    return "".join(out)


__all__ = ["DEFAULT_FILE_NAME_PATTERN", "DEFAULT_PATH_FORMAT", "PartNumbers", "StreamLayout", "next_part_number",
           "safe_name", "stream_folders"]
