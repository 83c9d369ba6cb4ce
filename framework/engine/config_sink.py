"""Where a config changed during a run is saved: the seam between the components and the command line.

A component that changes the connector's config while it runs (an OAuth
authenticator whose refresh token rotates, :mod:`framework.components.http.token_service`)
hands its changes to the :class:`ConfigSink` the command line built
(``BuildContext.config_sink``). The sink holds the config as last saved,
applies the changes to a copy and saves the whole config once:

* protocol mode (:func:`control_message_sink`): Airbyte's CONTROL message of
  type CONNECTOR_CONFIG on stdout, which the platform persists;
* Spark mode (:func:`config_file_sink`): the ``--config`` file rewritten
  atomically (temporary file, fsync, ``os.replace``), the previous file kept as
  ``<config>.bak`` (itself replaced atomically), and a line on stderr naming the
  file (never a value).

At every moment the file holds either the old config or the new one, and the
backup either the config before the previous save or the one before this save.
"""

from __future__ import annotations

import copy
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import orjson

from framework.protocol import messages

#: Changes to a config: the value to set at each path (a tuple of keys; missing objects are created).
Changes = Mapping[tuple[str, ...], Any]


class ConfigSink:
    """Saves the connector's config after changes; thread-safe (changes are applied and saved one at a time)."""

    def __init__(self, config: Mapping[str, Any], save: Callable[[dict[str, Any]], None]):
        self._config = copy.deepcopy(dict(config))
        self._save = save
        self._lock = threading.Lock()
        self.saves = 0  # how many times the config was saved (for reports and tests)

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the config as last saved (or as given)."""
        with self._lock:
            return copy.deepcopy(self._config)

    def rebase(self, config: Mapping[str, Any]) -> None:
        """Start from ``config`` (the config migrations changed what the file holds)."""
        with self._lock:
            self._config = copy.deepcopy(dict(config))

    def update(self, changes: Changes) -> dict[str, Any]:
        """Apply ``changes`` and save the whole config once; the config saved."""
        with self._lock:
            updated = copy.deepcopy(self._config)
            for path, value in changes.items():
                set_path(updated, path, value)
            self._save(updated)
            self._config = updated
            self.saves += 1
            return copy.deepcopy(updated)


def set_path(config: dict[str, Any], path: Sequence[str], value: Any) -> None:
    """Set ``value`` at ``path`` in ``config``, creating the objects on the way (a non-object is replaced)."""
    node = config
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def get_path(config: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The value at ``path`` in ``config``, or None."""
    node: Any = config
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def control_message_sink(config: Mapping[str, Any], out: IO[bytes],
                         now_ms: Callable[[], float] = lambda: time.time() * 1000) -> ConfigSink:
    """Protocol mode: each save is one CONTROL message (CONNECTOR_CONFIG) carrying the whole config.

    The message is written with one ``write`` call (a buffered stdout does not interleave it with
    the records other threads write) and flushed at once: the platform must get it even if the
    run dies right after.
    """

    def save(updated: dict[str, Any]) -> None:
        from framework.engine.config_migration import control_message  # loaded by the first save only

        out.write(messages.encode(control_message(updated, now_ms())))
        out.flush()

    return ConfigSink(config, save)


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


__all__ = ["Changes", "ConfigSink", "config_file_sink", "control_message_sink", "get_path", "replace_config_file",
           "set_path"]
