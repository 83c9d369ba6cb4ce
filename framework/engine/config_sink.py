"""Spark mode's config sink: a config changed during a run saved to the ``--config`` file.

The sink (:class:`framework.components.config_sink.ConfigSink`) takes a
component's changes (rotated OAuth tokens); in Spark mode each save is
:func:`config_file_sink`: the ``--config`` file rewritten
atomically (temporary file, fsync, ``os.replace``), the previous file kept as
``<config>.bak`` (itself replaced atomically), and a line on stderr naming the
file (never a value).

At every moment the file holds either the old config or the new one, and the
backup either the config before the previous save or the one before this save.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from framework.components.config_sink import ConfigSink


def config_file_sink(config: Mapping[str, Any], path: str, say: Callable[[str], None]) -> ConfigSink:
    """Spark mode: each save rewrites the file at ``path`` (:func:`replace_config_file`) and ``say`` s so
    (or, when the file cannot be rewritten, warns: the run goes on with the tokens it holds)."""

    def save(updated: dict[str, Any]) -> None:
        try:
            backup = replace_config_file(path, updated)
        except OSError as exc:  # the run goes on with the new tokens; the next run needs them, so say it loudly
            say(f"warning: the refreshed OAuth tokens could not be saved to {path} ({exc}); the next run will "
                f"need a new refresh token in that file")
            return
        say(f"the refreshed OAuth tokens were saved to {path} (the previous config is in {backup})")

    return ConfigSink(config, save)


def replace_config_file(path: str, config: Mapping[str, Any]) -> str:
    """Replace the config file at ``path`` by ``config`` atomically, keeping the old file as ``<path>.bak``.

    Both files are written to a temporary file in the same folder, flushed to disk and renamed into
    place, the backup first: a crash at any step leaves ``path`` holding the old or the new config
    (never a partial one) and ``<path>.bak`` a complete earlier config. The file keeps its permissions
    (a config holds secrets). Answers the backup's path.
    """
    backup = f"{path}.bak"
    mode = os.stat(path).st_mode & 0o777
    with open(path, "rb") as handle:
        previous = handle.read()
    _write_atomically(backup, previous, mode)
    _write_atomically(path, orjson.dumps(dict(config), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE),
                      mode)
    return backup


def _write_atomically(path: str, content: bytes, mode: int) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (where the platform lets a folder be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


__all__ = ["config_file_sink", "replace_config_file"]
