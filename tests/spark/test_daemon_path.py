"""The daemon's path: Spark's zips of pyspark and py4j give way to the same versions installed (no Spark here)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from framework.spark.daemon import installed_over_zips


def _installed(site: Path, package: str, version: str) -> None:
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "version.py").write_text(f"__version__ = {version!r}\n")


def _zipped(path: Path, package: str, version: str | None) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{package}/__init__.py", "")
        if version is not None:
            archive.writestr(f"{package}/version.py", f"__version__ = {version!r}\n")
    return str(path)


def test_zips_of_the_installed_versions_leave_the_path_and_the_rest_stays_in_order(tmp_path):
    site = tmp_path / "site"
    _installed(site, "pyspark", "4.3.0")
    _installed(site, "py4j", "0.10.9.9")
    spark_zip = _zipped(tmp_path / "pyspark.zip", "pyspark", "4.3.0")
    py4j_zip = _zipped(tmp_path / "py4j-0.10.9.9-src.zip", "py4j", "0.10.9.9")
    jar = str(tmp_path / "spark-core.jar")
    path = ["/work", spark_zip, py4j_zip, jar, str(site)]
    assert installed_over_zips(path) == ["/work", jar, str(site)]
    assert path == ["/work", spark_zip, py4j_zip, jar, str(site)]  # not changed in place


def test_a_zip_of_another_version_or_without_one_installed_stays(tmp_path):
    site = tmp_path / "site"
    _installed(site, "pyspark", "4.3.0")
    other = _zipped(tmp_path / "pyspark.zip", "pyspark", "4.2.1")
    py4j_zip = _zipped(tmp_path / "py4j-0.10.9.9-src.zip", "py4j", "0.10.9.9")  # no py4j installed
    assert installed_over_zips([other, py4j_zip, str(site)]) == [other, py4j_zip, str(site)]
    (tmp_path / "elsewhere").mkdir()
    no_version = _zipped(tmp_path / "elsewhere" / "pyspark.zip", "pyspark", None)
    assert installed_over_zips([no_version, str(site)]) == [no_version, str(site)]
    missing = str(tmp_path / "missing" / "pyspark.zip")
    assert installed_over_zips([missing, str(site)]) == [missing, str(site)]
