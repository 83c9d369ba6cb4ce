"""The Spark home a local driver JVM is launched from (framework/spark/launch_home.py): pip's Spark without
spark-mllib, made once per Spark, and only where nothing else names Spark."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.spark import class_archive as archives
from framework.spark import home as spark_home
from framework.spark import launch_home as homes
from framework.spark.class_archive import class_archive
from framework.spark.launch_home import ENVIRONMENT, launch_home
from framework.spark.session import session_plan

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symbolic links: POSIX only")

JARS = ("spark-core_2.13-4.3.0.jar", "spark-mllib_2.13-4.3.0.jar", "spark-mllib-local_2.13-4.3.0.jar",
        "spark-sql_2.13-4.3.0.jar")


@pytest.fixture()
def pip_home(tmp_path, monkeypatch):
    """A pip-installed Spark of a few jars, a bin and a conf folder, found as pip's."""
    home = tmp_path / "site-packages" / "pyspark"
    (home / "jars").mkdir(parents=True)
    for name in JARS:
        (home / "jars" / name).write_bytes(b"jar " + name.encode())
    (home / "bin").mkdir()
    (home / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (home / "conf").mkdir()
    (home / "conf" / "spark-defaults.conf").write_text("spark.a 1\n")
    for module in (spark_home, homes, archives):  # each looks it up by the name it imported
        monkeypatch.setattr(module, "pip_spark_home", lambda: str(home))
    return home


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {ENVIRONMENT: str(tmp_path / "cache"), **more}


def test_every_jar_but_spark_mllib_and_every_other_entry_linked(tmp_path, pip_home):
    home = launch_home(_env(tmp_path))
    assert home is not None and Path(home).parent == tmp_path / "cache"
    assert sorted(os.listdir(Path(home, "jars"))) == sorted(name for name in JARS if "mllib_" not in name)
    for name in os.listdir(Path(home, "jars")):
        assert os.path.realpath(Path(home, "jars", name)) == str(pip_home / "jars" / name)
    assert sorted(os.listdir(home)) == ["bin", "conf", "jars"]
    assert Path(home, "conf", "spark-defaults.conf").read_text() == "spark.a 1\n"  # the same configuration
    assert launch_home(_env(tmp_path)) == home  # made once, then found
    assert not [name for name in os.listdir(tmp_path / "cache") if name.endswith(".tmp")]


def test_another_spark_gets_a_home_of_its_own(tmp_path, pip_home):
    first = launch_home(_env(tmp_path))
    (pip_home / "jars" / "spark-extra_2.13-4.3.0.jar").write_bytes(b"jar")
    second = launch_home(_env(tmp_path))
    assert second is not None and second != first
    assert "spark-extra_2.13-4.3.0.jar" in os.listdir(Path(second, "jars"))


def test_only_where_nothing_else_names_spark(tmp_path, pip_home):
    for off in ("off", "0", "false", "NO"):
        assert launch_home(_env(tmp_path, **{ENVIRONMENT: off})) is None
    assert launch_home(_env(tmp_path, SPARK_HOME=str(tmp_path / "theirs"))) is None  # the user's Spark stays
    assert launch_home(_env(tmp_path, PYSPARK_GATEWAY_PORT="4040")) is None  # spark-submit launched the JVM
    assert not (tmp_path / "cache").exists()


def test_a_spark_without_spark_mllib_is_launched_as_it_is(tmp_path, pip_home):
    (pip_home / "jars" / "spark-mllib_2.13-4.3.0.jar").unlink()
    assert launch_home(_env(tmp_path)) is None


def test_a_folder_that_takes_no_files_leaves_the_launch_as_it_was(tmp_path, pip_home):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    assert launch_home(_env(tmp_path, **{ENVIRONMENT: str(blocked)})) is None


def test_a_home_another_process_made_meanwhile_is_taken(tmp_path, pip_home, monkeypatch):
    made = launch_home(_env(tmp_path))
    assert made is not None
    real_isdir = os.path.isdir
    looked: list[str] = []

    def first_time_missing(path):  # the first look misses it: another process renames its folder in after
        looked.append(str(path))
        return real_isdir(path) if len(looked) > 1 else False

    monkeypatch.setattr(homes.os.path, "isdir", first_time_missing)
    assert launch_home(_env(tmp_path)) == made
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path / "cache")) == [os.path.basename(made)]  # its own copy removed


def test_the_class_archive_is_keyed_on_the_launch_homes_class_path(tmp_path, pip_home):
    java = tmp_path / "jdk"
    (java / "bin").mkdir(parents=True)
    (java / "bin" / "java").write_text("#!/bin/sh\n")
    env = _env(tmp_path, JAVA_HOME=str(java), FRAMEWORK_SPARK_CLASS_ARCHIVE=str(tmp_path / "archives"))
    slim = class_archive(env)
    whole = class_archive({**env, ENVIRONMENT: "off"})
    assert slim is not None and whole is not None and slim != whole
    assert class_archive({**env, "SPARK_HOME": str(pip_home)}) == whole  # the user's Spark home: as it is


def test_a_local_plan_launches_from_it_and_a_cluster_plan_does_not(tmp_path, pip_home):
    env = _env(tmp_path, FRAMEWORK_SPARK_CLASS_ARCHIVE="off")
    assert session_plan("local[2]", environ=env).home == launch_home(env)
    assert session_plan("spark://host:7077", environ=env).home is None
    assert session_plan("local[2]", environ={**env, ENVIRONMENT: "off"}).home is None
