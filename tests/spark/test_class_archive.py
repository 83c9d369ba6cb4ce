"""The class-data archive of Spark's classes (framework/spark/class_archive.py, made by
framework/spark/class_archive_builder.py): where it lives, when it is used, and that a bad one never stops a
session from starting."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from framework.spark import class_archive as archives
from framework.spark import class_archive_builder as builders
from framework.spark.class_archive import ENVIRONMENT, ClassArchive, class_archive
from framework.spark.launch import SparkStartFailed, launch_jvm
from framework.spark.session import session_plan

REPO = Path(__file__).resolve().parents[2]


def _spark_home(tmp_path: Path, jars: tuple[str, ...] = ("spark-core_2.13-4.0.0.jar",)) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True, exist_ok=True)
    for name in jars:
        (home / "jars" / name).write_bytes(b"jar")
    return home


def _java_home(tmp_path: Path, version: str = "17.0.15") -> Path:
    java = tmp_path / f"jdk-{version}"
    (java / "bin").mkdir(parents=True)
    (java / "bin" / "java").write_text("#!/bin/sh\n")
    (java / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return java


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"SPARK_HOME": str(_spark_home(tmp_path)), "JAVA_HOME": str(tmp_path / "jdk-17.0.15"),
            ENVIRONMENT: str(tmp_path / "cache"), **more}


def _made(archive: ClassArchive, data: bytes = b"x" * 64, size: int | None = None) -> None:
    os.makedirs(os.path.dirname(archive.path), exist_ok=True)
    Path(archive.path).write_bytes(data)
    Path(archive.record).write_text(json.dumps({"size": len(data) if size is None else size}))


def test_one_archive_per_java_and_spark_in_the_folder_given(tmp_path):
    _java_home(tmp_path)
    first = class_archive(_env(tmp_path))
    assert first is not None and first.path.startswith(str(tmp_path / "cache") + os.sep)
    assert first.path.endswith(".jsa") and first.record.endswith(".json")
    assert class_archive(_env(tmp_path)) == first  # the same Java and Spark: the same archive
    _java_home(tmp_path, "21.0.2")
    other_java = class_archive({**_env(tmp_path), "JAVA_HOME": str(tmp_path / "jdk-21.0.2")})
    _spark_home(tmp_path, ("spark-core_2.13-4.1.0.jar",))  # another jar in Spark's folder
    other_spark = class_archive(_env(tmp_path))
    assert len({first, other_java, other_spark}) == 3


def test_off_or_without_java_or_spark_there_is_none(tmp_path):
    _java_home(tmp_path)
    for off in ("off", "0", "false", "NO"):
        assert class_archive(_env(tmp_path, **{ENVIRONMENT: off})) is None
    assert class_archive({**_env(tmp_path), "JAVA_HOME": str(tmp_path / "nowhere")}) is None
    assert class_archive({**_env(tmp_path), "SPARK_HOME": str(tmp_path / "no-spark")}) is None


def test_the_user_cache_folder_by_default(tmp_path):
    _java_home(tmp_path)
    env = {k: v for k, v in _env(tmp_path).items() if k != ENVIRONMENT}
    found = class_archive({**env, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert found is not None and Path(found.path).parent == tmp_path / "xdg" / "manifest-framework"


def test_only_a_whole_archive_is_usable(tmp_path):
    archive = ClassArchive(str(tmp_path / "a" / "spark-k.jsa"))
    assert not archive.usable()  # none yet
    _made(archive)
    assert archive.usable()
    _made(archive, size=128)  # cut short (or the record of another): a JVM could crash mapping it
    assert not archive.usable()
    Path(archive.record).write_text("{not json")
    assert not archive.usable()
    _made(archive)
    archive.remove()
    assert not os.path.exists(archive.path) and not os.path.exists(archive.record)


def test_a_local_session_maps_a_usable_archive_unless_the_setting_is_given(tmp_path):
    _java_home(tmp_path)
    env = _env(tmp_path, SPARK_CONF_DIR=str(tmp_path))
    archive = class_archive(env)
    assert archive is not None
    assert "spark.driver.defaultJavaOptions" not in session_plan("local[2]", environ=env).settings  # none yet
    _made(archive)
    plan = session_plan("local[2]", environ=env)
    assert plan.archive == archive.path
    assert plan.settings["spark.driver.defaultJavaOptions"] == f"-XX:SharedArchiveFile={archive.path} -Xlog:cds*=off"
    assert "-XX:TieredStopAtLevel=1" in plan.settings["spark.driver.extraJavaOptions"]  # still there
    given = session_plan("local[2]", {"spark.driver.defaultJavaOptions": "-Xss4m"}, environ=env)
    assert given.archive is None and given.settings["spark.driver.defaultJavaOptions"] == "-Xss4m"
    cluster = session_plan("spark://m:7077", environ=env)
    assert cluster.archive is None and "spark.driver.defaultJavaOptions" not in cluster.settings


def test_a_jvm_that_does_not_start_with_the_archive_starts_without_it(tmp_path, monkeypatch):
    import pyspark.java_gateway

    _java_home(tmp_path)
    env = _env(tmp_path, SPARK_CONF_DIR=str(tmp_path))
    archive = class_archive(env)
    assert archive is not None
    _made(archive)
    plan = session_plan("local[1]", environ=env)
    options: list[str | None] = []

    def launch(conf, popen_kwargs=None):
        options.append(conf.get("spark.driver.defaultJavaOptions"))
        raise RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", launch)
    from pyspark.core.context import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", None)  # an earlier test's JVM in this process: not this one's
    with pytest.raises(SparkStartFailed, match="Spark could not start"):
        launch_jvm(plan, "test")
    assert options == [archive.java_options(), ""]  # once with it, once without
    assert not os.path.exists(archive.path)  # dropped: made again by a later sync
    options.clear()
    with pytest.raises(SparkStartFailed):
        launch_jvm(session_plan("local[1]", environ=env), "test")
    assert options == [None]  # no archive: tried once, as before
    options.clear()
    _made(archive)  # made again
    with pytest.raises(SparkStartFailed):  # an abandoned start killed its JVM: the archive is not to blame
        launch_jvm(plan, "test", stopped=lambda: True)
    assert options == [archive.java_options()]  # tried once, with it
    assert os.path.exists(archive.path)  # kept


def test_a_builder_holds_a_lock_and_a_dead_ones_lock_is_taken_over(tmp_path):
    archive = ClassArchive(str(tmp_path / "spark-k.jsa"))
    with builders._locked(archive) as mine:
        assert mine and archive.building()
        with builders._locked(archive) as second:
            assert not second
        assert archives.build_in_background(archive) is None  # one is at it already
    assert not os.path.exists(archive.lock)
    Path(archive.lock).write_text("1")
    os.utime(archive.lock, (0, 0))  # left by a builder that died long ago
    assert not archive.building()
    with builders._locked(archive) as mine:
        assert mine


def test_a_failed_making_is_not_tried_again_for_a_day(tmp_path):
    java = tmp_path / "broken-jdk" / "bin"
    java.mkdir(parents=True)
    (java / "java").write_text("#!/bin/sh\necho 'no Java here' >&2\nexit 1\n")
    (java / "java").chmod(0o755)
    archive = ClassArchive(str(tmp_path / "cache" / "spark-k.jsa"))
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "broken-jdk"), "PYTHONPATH": str(REPO),
           "PYSPARK_PYTHON": sys.executable}
    made = subprocess.run([sys.executable, "-m", "framework.spark.class_archive_builder", archive.path], env=env,
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert made.returncode == 1 and not archive.usable()
    assert os.path.exists(archive.failed) and not os.path.exists(archive.lock)
    assert archives.build_in_background(archive) is None  # not again today
    os.utime(archive.failed, (0, 0))
    assert not archives._failed_lately(archive)


def test_making_one_drops_the_others_made_over_a_week_ago(tmp_path):
    kept, recent, old, unrecorded = (ClassArchive(str(tmp_path / f"spark-{k}.jsa")) for k in ("a", "b", "c", "d"))
    for archive in (kept, recent, old, unrecorded):
        _made(archive)
    os.utime(old.record, (0, 0))
    os.remove(unrecorded.record)  # a half-made one's leftover
    (tmp_path / "notes.txt").write_text("not ours")
    builders._drop_old(kept)
    assert kept.usable() and recent.usable()
    assert not os.path.exists(old.path) and not os.path.exists(old.record) and not os.path.exists(unrecorded.path)
    assert (tmp_path / "notes.txt").exists()


_USE = """
import sys
from framework.spark.session import session_plan, spark_session
plan = session_plan("local[1]")
spark = spark_session("local[1]", app_name="archive-test")
from pyspark import SparkContext
pid = SparkContext._gateway.proc.pid
mapped = any(plan.archive and plan.archive in line for line in open(f"/proc/{pid}/maps"))
assert spark.range(3).count() == 3
print(f"archive={plan.archive} mapped={mapped}")
spark.stop()
"""


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="needs Java")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_archive_is_made_mapped_and_a_broken_one_is_started_without(tmp_path):
    env = {**os.environ, ENVIRONMENT: str(tmp_path / "cache"), "PYTHONPATH": str(REPO),
           "PYSPARK_PYTHON": sys.executable}
    archive = class_archive(env)
    assert archive is not None
    made = subprocess.run([sys.executable, "-m", "framework.spark.class_archive_builder", archive.path], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert made.returncode == 0, made.stderr[-2000:]
    assert archive.usable() and not os.path.exists(archive.lock)
    assert not [p for p in os.listdir(os.path.dirname(archive.path)) if p.endswith(".tmp")]

    used = subprocess.run([sys.executable, "-c", _USE], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, check=False)
    assert used.returncode == 0, used.stderr[-2000:]
    assert f"archive={archive.path} mapped=True" in used.stdout
    assert "cds" not in used.stderr.lower()  # the JVM's notes on it are off

    # a broken archive whose record still matches (a JVM mapping it dies): started again without it
    with open(archive.path, "r+b") as handle:
        handle.truncate(200_000)
    Path(archive.record).write_text(json.dumps({"size": 200_000}))
    broken = subprocess.run([sys.executable, "-c", _USE], env=env, capture_output=True, text=True, timeout=300,
                            cwd=tmp_path, check=False)
    assert broken.returncode == 0, broken.stderr[-2000:]
    assert f"archive={archive.path} mapped=False" in broken.stdout
    assert not os.path.exists(archive.path) and not os.path.exists(archive.record)
