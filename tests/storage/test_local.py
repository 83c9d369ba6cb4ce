"""A local folder as storage (framework/storage/local.py): what it refuses before a sync starts."""

from __future__ import annotations

import os

import pytest

from framework.errors import ConfigError
from framework.storage.local import LocalStorage


@pytest.mark.parametrize("where", ["/dev/null", "/proc/no-such-folder", "a file"])
def test_an_output_that_cannot_take_files_is_refused_before_anything_starts(tmp_path, where):
    if where == "a file":
        (tmp_path / "config.json").write_text("{}")
        where = str(tmp_path / "config.json")
    with pytest.raises(ConfigError, match=r"^the output .* (is not a folder|cannot be written to).*pass --output a "
                                          r"folder you can write to"):
        LocalStorage(where).check_writable()


def test_a_missing_output_folder_is_created_and_left_clean(tmp_path):
    LocalStorage(str(tmp_path / "new" / "out")).check_writable()
    assert os.listdir(tmp_path / "new" / "out") == []
