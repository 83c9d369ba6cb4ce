"""Object keys like Airbyte's S3 destination: path format, file name pattern, part numbers."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.storage.layout import PartNumbers, StreamLayout, next_part_number, safe_name
from framework.storage.local import LocalStorage

UTC = timezone.utc
AT = datetime(2024, 3, 5, 7, 8, 9, 45678, tzinfo=UTC)  # 2024-03-05T07:08:09.045678Z
EPOCH_MS = 1709622489045
FIXED_UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def layout(path_format=None, file_name_pattern=None, *, stream="users", namespace="public", extension=".parquet",
           started_at=AT, sync_id=42) -> StreamLayout:
    return StreamLayout.build(path_format=path_format, file_name_pattern=file_name_pattern, extension=extension,
                              stream=stream, namespace=namespace, started_at=started_at, sync_id=sync_id,
                              new_uuid=lambda: FIXED_UUID)


def test_default_key_is_namespace_stream_date_epoch_part():
    assert layout().key(0) == f"public/users/2024_03_05_{EPOCH_MS}_0.parquet"
    assert layout().key(17) == f"public/users/2024_03_05_{EPOCH_MS}_17.parquet"


def test_every_path_variable():
    path = ("${NAMESPACE}/${STREAM_NAME}/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}/${SECOND}/${MILLISECOND}/"
            "${EPOCH}/${UUID}/")
    assert layout(path).key(3) == f"public/users/2024/03/05/07/08/09/045/{EPOCH_MS}/{FIXED_UUID}/3.parquet"


def test_uuid_is_shared_by_the_writers_of_one_sync():
    def key(stream="users", sync_id=42, started_at=AT):
        return StreamLayout.build(path_format="${STREAM_NAME}/${UUID}/", file_name_pattern=None, extension=".csv",
                                  stream=stream, started_at=started_at, sync_id=sync_id).key(0).split("/")[1]

    assert key() == key()
    assert len({key(), key(stream="orders"), key(sync_id=43), key(started_at=AT + timedelta(milliseconds=1))}) == 4
    assert uuid.UUID(key()).version == 5


def test_unknown_path_variables_stay_as_written():
    assert layout("${STREAM_NAME}/${FOO}/").key(0) == "users/${FOO}/0.parquet"


@pytest.mark.parametrize("namespace", ["", None])
def test_empty_namespace_drops_its_segment(namespace):
    assert layout(namespace=namespace).key(0) == f"users/2024_03_05_{EPOCH_MS}_0.parquet"
    assert layout("/${NAMESPACE}//${STREAM_NAME}/", namespace=namespace).key(1) == "users/1.parquet"


@pytest.mark.parametrize("pattern, expected", [
    ("{date}_{part_number}{format_extension}", "2024_03_05_0.csv.gz"),
    ("{date:yyyy_MM}/{part_number}{format_extension}", "2024_03/0.csv.gz"),
    ("{timestamp}_{part_number}{format_extension}", f"{EPOCH_MS}_0.csv.gz"),
    ("{timestamp:millis}-{part_number}", f"{EPOCH_MS}-0"),
    ("{timestamp:micros}-{part_number}", f"{EPOCH_MS * 1000}-0"),
    ("{sync_id}_{part_number}{format_extension}", "42_0.csv.gz"),
    ("{date:yyyy-MM-dd'T'HH.mm.ss.SSS}_{part_number}", "2024-03-05T07.08.09.045_0"),
    ("{date:EEE dd MMM yy}_{part_number}", "Tue_05_Mar_24_0"),
    (" my file {part_number} ", "my_file_0"),
    ("{nope}_{part_number}", "{nope}_0"),
])
def test_file_name_variables(pattern, expected):
    assert layout("${STREAM_NAME}/", pattern, extension=".csv.gz").key(0) == "users/" + expected


def test_file_name_time_can_be_each_files_own():
    later = AT + timedelta(days=40, seconds=1)
    key = layout("${STREAM_NAME}/", "{date}_{timestamp}_{part_number}").key(2, now=later)
    assert key == f"users/2024_04_14_{EPOCH_MS + 40 * 86_400_000 + 1000}_2"


def test_file_name_pattern_needs_a_part_number():
    with pytest.raises(ConfigError, match="part_number"):
        layout(file_name_pattern="{date}{format_extension}")


def test_unsupported_date_letters_are_refused():
    with pytest.raises(ConfigError, match="`G`"):
        layout(file_name_pattern="{date:G}_{part_number}")


def test_names_are_made_safe_for_keys():
    assert safe_name("Café Orders") == "Cafe_Orders"
    assert safe_name("a#b%c{d}") == "a_b_c_d_"
    assert safe_name("ok-name_1.2=(x)") == "ok-name_1.2=(x)"
    assert layout(stream="Ünïcode stream", namespace="my schema").key(0).startswith("my_schema/Unicode_stream/")


def test_settings_give_the_layout():
    settings_ = DestinationSettings.model_validate({
        "output": "/tmp/x", "s3_path_format": "${STREAM_NAME}/${YEAR}/", "file_name_pattern": "{part_number}_{sync_id}",
        "format": {"format_type": "JSONL", "compression": {"compression_type": "GZIP"}}})
    stream_layout = StreamLayout.of(settings_, "orders", "", started_at=AT.timestamp(), sync_id=5)
    assert stream_layout.key(1) == "orders/2024/1_5"
    assert StreamLayout.of(DestinationSettings.default_local("/tmp/x"), "o", started_at=AT).key(0).endswith(".parquet")


TEMPLATES = [
    (None, None),
    ("${NAMESPACE}/${STREAM_NAME}/${YEAR}/${MONTH}/${DAY}/${HOUR}/", "{date}_{part_number}{format_extension}"),
    ("${STREAM_NAME}/${UUID}/${MILLISECOND}_", "{timestamp}-{sync_id}-{part_number}{format_extension}"),
    ("${STREAM_NAME}/", "{date:yyyy_MM}_{part_number}{format_extension}"),
    ("${STREAM_NAME}/${EPOCH}/", "{part_number}_{timestamp:micros}"),
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(TEMPLATES), st.integers(0, 10**9),
       st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1)), st.integers(0, 10**6))
def test_part_number_of_reads_back_any_key(template, number, when, sync_id):
    path, pattern = template
    stream_layout = StreamLayout.build(path_format=path, file_name_pattern=pattern, extension=".jsonl.gz",
                                       stream="users", namespace="ns", started_at=when, sync_id=sync_id)
    key = stream_layout.key(number)
    assert key.startswith(stream_layout.scan_prefix)
    # a layout of another sync (other time, other uuid, other sync id) still recognises the key
    other = StreamLayout.build(path_format=path, file_name_pattern=pattern, extension=".jsonl.gz", stream="users",
                               namespace="ns", started_at=AT, sync_id=1)
    assert other.part_number_of(key) == number
    assert other.scan_prefix == stream_layout.scan_prefix


def test_part_number_of_ignores_other_files():
    stream_layout = layout()
    assert stream_layout.part_number_of(f"public/users_v2/2024_03_05_{EPOCH_MS}_0.parquet") is None
    assert stream_layout.part_number_of(f"public/users/2024_03_05_{EPOCH_MS}_0.avro") is None
    assert stream_layout.part_number_of("public/users/notes.txt") is None


def test_next_part_number_continues_after_the_highest(tmp_path):
    storage = LocalStorage(str(tmp_path))
    first = layout("${NAMESPACE}/${STREAM_NAME}/", None)
    assert next_part_number(storage, first) == 0
    for number in (0, 1, 7):
        storage.write_atomic(first.key(number), b"x")
    storage.write_atomic("public/users/99.avro", b"x")  # another format: not ours
    storage.write_atomic("public/users_v2/50.parquet", b"x")  # another stream
    assert next_part_number(storage, first) == 8
    # numbers of earlier syncs count too, with time variables in the path
    timed = layout()
    storage.write_atomic(layout(started_at=AT - timedelta(days=3)).key(11), b"x")
    assert next_part_number(storage, timed) == 12


def test_next_part_number_from_settings(tmp_path):
    settings_ = DestinationSettings.default_local(str(tmp_path))
    storage = LocalStorage(str(tmp_path))
    assert next_part_number(storage, settings_, "users", "public") == 0
    storage.write_atomic(StreamLayout.of(settings_, "users", "public", started_at=AT).key(4), b"x")
    assert next_part_number(storage, settings_, "users", "public") == 5
    assert next_part_number(storage, settings_, "orders", "public") == 0


@given(st.integers(0, 1000), st.integers(1, 16), st.integers(1, 20))
def test_parallel_part_numbers_never_collide(start, tasks, files_per_task):
    taken = []
    for task in range(tasks):
        numbers = iter(PartNumbers(start, tasks, task))
        taken.extend(next(numbers) for _ in range(files_per_task))
    assert len(set(taken)) == len(taken)
    assert min(taken) == start
    assert PartNumbers(start, tasks, tasks - 1).nth(2) == start + tasks - 1 + 2 * tasks


@pytest.mark.parametrize("args", [(0, 0, 0), (0, 2, 2), (-1, 1, 0), (0, 2, -1)])
def test_part_numbers_refuse_nonsense(args):
    with pytest.raises(ValueError):
        PartNumbers(*args)
