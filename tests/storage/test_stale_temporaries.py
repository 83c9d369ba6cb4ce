"""What killed writers leave behind is removed at the next sync; what a live writer is writing is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone

from framework.storage import LocalStorage, S3Storage

# A writer in its own process: it writes an object, then dies or waits for its stdin to close.
_WRITER = textwrap.dedent("""
    import os, signal, sys
    from framework.storage import LocalStorage
    writer = LocalStorage(sys.argv[1]).open_object(sys.argv[2], {"ab-generation-id": "1"})
    writer.write(b"x" * 1000)
    if sys.argv[3] == "seal":
        writer.seal()
    print("ready", flush=True)
    if sys.argv[3] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()
""")


def _writer(root, key: str, how: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), *sys.path])}
    process = subprocess.Popen([sys.executable, "-c", _WRITER, str(root), key, how], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == b"ready"
    return process


def _temps(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(folder, name), root) for folder, _, names in os.walk(root)
                  for name in names if name.endswith(".tmp"))


def _age(root, seconds: float) -> None:
    for name in _temps(root):
        path = os.path.join(root, name)
        moment = time.time() - seconds
        os.utime(path, (moment, moment))


def test_a_killed_writers_temp_file_is_removed(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write_atomic("s/kept.parquet", b"done")
    process = _writer(tmp_path, "s/f.parquet", "die")
    assert process.wait() == -signal.SIGKILL
    (temp,) = _temps(tmp_path)
    assert storage.remove_stale_temporaries() == ()  # just now: its writer might have only created it
    _age(tmp_path, 60)
    assert storage.remove_stale_temporaries() == (temp,)
    assert _temps(tmp_path) == [] and storage.read("s/kept.parquet") == b"done"


def test_a_live_writers_temp_file_stays_until_it_is_gone(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writing, sealed = _writer(tmp_path, "a/one.parquet", "write"), _writer(tmp_path, "b/two.parquet", "seal")
    try:
        _age(tmp_path, 3600)  # a slow task: its files have not changed for an hour
        assert storage.remove_stale_temporaries(older_than=0) == ()
        assert len(_temps(tmp_path)) == 2
    finally:
        for process in (writing, sealed):
            process.kill()
            process.wait()
    assert len(storage.remove_stale_temporaries(older_than=0)) == 2  # their writers are gone now
    assert _temps(tmp_path) == []


def test_only_this_storages_temp_files_under_the_prefix_and_owned(tmp_path):
    storage = LocalStorage(str(tmp_path))
    hexes = "0123456789abcdef" * 2
    for name in (f"a/.f.parquet.{hexes}.tmp", f"b/.g.parquet.{hexes}.tmp", "a/.notes.tmp", "a/.f.parquet.meta.json",
                 "a/visible.tmp"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    _age(tmp_path, 60)
    assert storage.remove_stale_temporaries("a/", owned_by=lambda key: "f.parquet" in key) == (
        f"a/.f.parquet.{hexes}.tmp",)
    assert storage.remove_stale_temporaries("b/g", owned_by=lambda key: False) == ()
    assert storage.remove_stale_temporaries("b/g") == (f"b/.g.parquet.{hexes}.tmp",)
    assert sorted(_temps(tmp_path)) == ["a/.notes.tmp", "a/visible.tmp"]
    assert (tmp_path / "a/.f.parquet.meta.json").exists()


def test_a_writer_whose_temp_was_removed_fails_to_commit_and_nothing_appears(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = storage.open_object("s/f.parquet")
    writer.write(b"data")
    os.unlink(writer.temp)  # what a cleaner could do to a writer that lost its lock
    try:
        writer.commit()
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("the commit of a removed temp file succeeded")
    assert storage.list() == []


class _Dated:
    """A boto3 client whose uploads and parts are dated as the test says (moto dates them all in 2010)."""

    def __init__(self, client, initiated: dict[str, datetime], parts: dict[str, datetime]):
        self._client, self.initiated, self.parts = client, initiated, parts

    def get_paginator(self, name: str):
        paginator, test = self._client.get_paginator(name), self

        class Dated:
            def paginate(self, **kwargs):
                for page in paginator.paginate(**kwargs):
                    for upload in page.get("Uploads", ()):
                        upload["Initiated"] = test.initiated[upload["Key"]]
                    for part in page.get("Parts", ()):
                        part["LastModified"] = test.parts[kwargs["Key"]]
                    yield page

        return Dated()

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_s3_aborts_uploads_idle_longer_than_the_cutoff(s3_client, s3_bucket):
    now = datetime.now(timezone.utc)
    long_ago = now - timedelta(hours=2)
    client = _Dated(s3_client, {}, {})
    storage = S3Storage(s3_bucket, "out", client, part_size=5 * 1024 * 1024)
    storage.write_atomic("s/kept.parquet", b"done")
    for key in ("s/idle.parquet", "s/busy.parquet", "s/fresh.parquet", "t/idle.parquet"):
        writer = storage.open_object(key)
        writer.write(b"x" * (6 * 1024 * 1024))  # one part up: a multipart upload in progress
        writer._release()
    client.initiated = {"out/s/idle.parquet": long_ago, "out/s/busy.parquet": long_ago,
                        "out/s/fresh.parquet": now, "out/t/idle.parquet": long_ago}
    client.parts = {"out/s/idle.parquet": long_ago, "out/s/busy.parquet": now - timedelta(minutes=5),
                    "out/s/fresh.parquet": now, "out/t/idle.parquet": long_ago}
    assert storage.remove_stale_temporaries("s/") == ("s/idle.parquet",)  # idle for two hours: its writer is gone
    assert storage.remove_stale_temporaries(older_than=60, owned_by=lambda key: key.startswith("s/")) == (
        "s/busy.parquet",)
    assert storage.remove_stale_temporaries("t/") == ("t/idle.parquet",)
    uploads = s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == ["out/s/fresh.parquet"]
    assert [o.key for o in storage.list()] == ["s/kept.parquet"]


def test_s3_without_the_right_to_list_uploads_leaves_them_to_the_lifecycle_rule(caplog):
    from botocore.exceptions import ClientError

    class Refusing:
        def get_paginator(self, name):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ListMultipartUploads")

    assert S3Storage("b", "p", Refusing()).remove_stale_temporaries() == ()
    assert "lifecycle rule" in caplog.text
