"""framework.protocol.pipe: protocol mode's stdout pipe holds a few pages of RECORD lines."""

from __future__ import annotations

import fcntl
import os

import pytest
from conftest import LINUX_ONLY

from framework.protocol.pipe import SIZE, widen


@LINUX_ONLY
def test_a_pipe_is_widened_and_never_narrowed():
    read_end, write_end = os.pipe()
    try:
        assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) < SIZE
        assert widen(write_end) == SIZE == fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)  # one pipe, both ends
        assert widen(write_end, size=SIZE // 4) == SIZE
    finally:
        os.close(read_end)
        os.close(write_end)


@LINUX_ONLY
def test_a_refused_size_leaves_the_pipe_as_it_was(monkeypatch):
    """Over ``pipe-max-size`` without the privilege, or past the user's pipe memory, Linux says EPERM."""
    read_end, write_end = os.pipe()
    real = fcntl.fcntl

    def refusing(fd, command, *args):
        if command == fcntl.F_SETPIPE_SZ:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, command, *args)

    try:
        before = real(write_end, fcntl.F_GETPIPE_SZ)
        monkeypatch.setattr(fcntl, "fcntl", refusing)
        assert widen(write_end) == before
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_size_fcntl_cannot_carry_is_refused():
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(ValueError, match="pipe size"):
            widen(write_end, size=1 << 40)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_file_or_a_closed_descriptor_is_not_a_pipe(tmp_path):
    with open(tmp_path / "out.jsonl", "wb") as out:
        assert widen(out.fileno()) is None
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    assert widen(write_end) is None
