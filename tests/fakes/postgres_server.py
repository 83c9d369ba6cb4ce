"""A throwaway PostgreSQL server for tests: its own data folder, a free port, gone at the end.

``PostgresServer.start()`` runs ``initdb`` into a temp folder and starts ``postgres`` on
127.0.0.1 with password (scram) authentication, tuned for speed rather than safety
(``fsync=off``: the data is thrown away). PostgreSQL refuses to run as root, so when the
tests run as root the server runs as the unprivileged ``postgres`` user (Debian's
``postgresql`` package creates it) through ``runuser``.

The server binaries come from ``POSTGRES_BIN`` when set, else from the newest
``/usr/lib/postgresql/<version>/bin`` (Debian's layout), else from the PATH.
``scripts/ensure-postgres.sh`` (run by ``make test-setup``, which ``make test`` runs) installs them.

``server.sql(text)`` runs SQL with the ``psql`` client and answers the rows as tuples of
text (NULL as None): assertions go through a different client than the code under test.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SERVER_USER = "postgres"  # the OS user the server runs as when the tests run as root
DB_USER = "tester"
_SEPARATOR = "\x1f"  # between the values of a row in psql's output
_NULL = "\x02"  # psql's text for NULL


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the server would not start."""


def find_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``psql``; raises PostgresUnavailable if there is none."""
    given = os.environ.get("POSTGRES_BIN")
    if given:
        if (Path(given) / "initdb").is_file():
            return Path(given)
        raise PostgresUnavailable(f"POSTGRES_BIN={given} holds no `initdb`: point it at PostgreSQL's bin folder")
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: run `make test-setup` "
        "(scripts/ensure-postgres.sh installs Debian's `postgresql`) or set POSTGRES_BIN"
    )


def _version_key(path: str) -> tuple[int, ...]:
    version = Path(path).parent.parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class PostgresServer:
    """A running throwaway server; stop() ends it and removes its folder."""

    bin_dir: Path
    root: Path
    port: int
    user: str = DB_USER
    password: str = field(default_factory=lambda: secrets.token_hex(12), repr=False)
    database: str = "postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    @classmethod
    def start(cls) -> PostgresServer:
        bin_dir = find_bin_dir()
        as_root = os.geteuid() == 0
        # /tmp is reachable by the unprivileged server user; TMPDIR may not be (e.g. under /root).
        root = Path(tempfile.mkdtemp(prefix="pg-test-", dir="/tmp" if as_root else None))
        server = cls(bin_dir=bin_dir, root=root, port=_free_port())
        try:
            if as_root:
                try:
                    shutil.chown(root, user=SERVER_USER)
                except LookupError as exc:
                    raise PostgresUnavailable(
                        f"tests run as root but there is no `{SERVER_USER}` user to run PostgreSQL as: "
                        f"install Debian's `postgresql` package (scripts/ensure-postgres.sh) or run as another user"
                    ) from exc
            server._init_and_start()
        except BaseException:
            server._remove()
            raise
        return server

    def _init_and_start(self) -> None:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        os.chmod(password_file, 0o600)
        if os.geteuid() == 0:
            shutil.chown(password_file, user=SERVER_USER)
        data = self.root / "data"
        self._run(
            "initdb", "-D", str(data), "-U", self.user, f"--pwfile={password_file}", "-A", "scram-sha-256",
            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )
        password_file.unlink()
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=40"
        )
        self._run("pg_ctl", "-D", str(data), "-l", str(self.root / "server.log"), "-w", "-t", "30",
                  "-o", options, "start")

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        done = subprocess.run(command, check=False, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise PostgresUnavailable(
                f"`{tool}` failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}\n{tail}"
            )

    def sql(self, text: str) -> list[tuple[str | None, ...]]:
        """Run SQL with psql (stopping at the first error) and answer the result rows of the last statement."""
        psql = self.bin_dir / "psql"
        if not psql.exists():
            psql = Path(shutil.which("psql") or "psql")
        done = subprocess.run(
            [str(psql), "-X", "-q", "-A", "-t", "-F", _SEPARATOR, "-P", f"null={_NULL}", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", self.database, "-c", text],
            check=False, capture_output=True, text=True, env={**os.environ, "PGPASSWORD": self.password},
        )
        if done.returncode != 0:
            raise AssertionError(f"psql failed: {done.stderr.strip()}\nSQL: {text}")
        rows = []
        for line in done.stdout.split("\n"):
            if line:
                rows.append(tuple(None if cell == _NULL else cell for cell in line.split(_SEPARATOR)))
        return rows

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["PostgresServer", "PostgresUnavailable", "find_bin_dir"]
