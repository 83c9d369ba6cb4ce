"""Stream folders that collide: any set of names either passes with folders that never share a glob, or is named."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.output_names import check_stream_folders, folder_problems, stream_folder
from framework.storage.layout import stream_folders

NAMES = st.lists(st.text(st.sampled_from("aAbB_/é. -"), min_size=1, max_size=6), min_size=1, max_size=5,
                 unique=True)


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_names_pass_only_when_their_folders_never_overlap(names):
    folders = {n: stream_folder(n) for n in names}
    problems = folder_problems(folders)
    passed = [n for n in names if n not in problems]
    lowered = {n: tuple(folders[n].lower().split("/")) for n in passed}
    for name, parts in lowered.items():
        assert parts and parts != ("",)
        assert not parts[0].startswith("_airbyte_") and parts[0] != "normalized"
        assert ".." not in parts and "." not in parts
        for other, other_parts in lowered.items():
            if other != name:
                shorter, longer = sorted((parts, other_parts), key=len)
                assert longer[:len(shorter)] != shorter, (name, other)


@given(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
def test_a_name_and_its_upper_case_twin_collide(name):
    assert list(folder_problems({name: stream_folder(name), name.upper(): stream_folder(name.upper())})) == \
        [name.upper()]


def test_the_error_names_every_collision_and_its_fix():
    with pytest.raises(ConfigError, match=r"out: stream `_airbyte_cdc` .* \(fix: rename the stream"):
        check_stream_folders({"_airbyte_cdc": "_airbyte_cdc/"}, "out")
    check_stream_folders({"a": "a/", "b": "b/"})


def test_run_manifest_checks_the_folders_of_the_settings_path_format():
    default = DestinationSettings.model_validate({"output": "out"})
    assert stream_folders(default, ["Orders", "orders"]) == {"Orders": "Orders/", "orders": "orders/"}
    with pytest.raises(ConfigError, match="streams `Orders` and `orders` land in the same folder on a case"):
        check_stream_folders(stream_folders(default, ["Orders", "orders"]))
    nested = DestinationSettings.model_validate({"output": "out", "s3_path_format": "data/${STREAM_NAME}/${YEAR}/"})
    assert stream_folders(nested, ["_airbyte_state"]) == {"_airbyte_state": "data/_airbyte_state/"}
    check_stream_folders(stream_folders(nested, ["_airbyte_state"]))  # under data/: no internal folder there
    by_date = DestinationSettings.model_validate({"output": "out", "s3_path_format": "${YEAR}/${MONTH}/"})
    assert stream_folders(by_date, ["a", "b"]) == {}  # the format does not name streams: nothing to tell apart
