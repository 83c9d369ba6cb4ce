"""The normalized tables' root: outside the raw output, beside it by default; an older layout refused with the fix."""

import pytest

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.models.normalization import NormalizationSettings
from framework.normalization.root import check_no_legacy_tables, normalized_destination, normalized_root
from framework.storage import LocalStorage


def dest(**fields):
    return DestinationSettings.model_validate(fields)


def test_beside_the_output_by_default():
    assert normalized_root(dest(output="out/")) == "out_normalized"
    assert normalized_root(dest(output="s3://b/data")) == "s3://b/data_normalized"
    assert normalized_root(dest(s3_bucket_name="b", s3_bucket_path="/x/y/")) == "s3://b/x/y_normalized"


def test_a_whole_bucket_needs_a_place_given():
    with pytest.raises(ConfigError, match="set `normalization.output`"):
        normalized_root(dest(s3_bucket_name="b"))
    assert normalized_root(dest(s3_bucket_name="b"), NormalizationSettings(output="s3://w/t")) == "s3://w/t"


@pytest.mark.parametrize("given", ["out/normalized", "out", "./out/x/", "."])
def test_a_root_inside_or_around_the_output_is_refused(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="share a folder with the raw files"):
        normalized_root(dest(output="out"), NormalizationSettings(output=given))


def test_the_destination_keeps_its_credentials_and_addresses_the_root():
    raw = dest(s3_bucket_name="b", s3_bucket_path="data", access_key_id="k", secret_access_key="s",
               s3_endpoint="http://minio:9000")
    moved = normalized_destination(raw)
    assert (moved.base_uri, moved.access_key_id, moved.s3_endpoint) == ("s3://b/data_normalized", raw.access_key_id,
                                                                          "http://minio:9000")
    DestinationSettings.model_validate(moved.model_dump(by_alias=True))  # what the executors rebuild


def test_postgres_takes_no_output():
    with pytest.raises(ValueError, match="only applies when `target` is `parquet`"):
        NormalizationSettings(target="postgres", jdbc_url="jdbc:postgresql://h/db", output="x")


def test_tables_an_earlier_version_wrote_under_the_output_are_refused_with_the_fix(tmp_path):
    raw, new = LocalStorage(str(tmp_path / "out")), LocalStorage(str(tmp_path / "out_normalized"))
    check_no_legacy_tables(raw, new, full_refresh=False)  # nothing normalized yet
    raw.write_atomic("_airbyte_normalization/tables.json", b'{"tables": {}}')
    with pytest.raises(ConfigError, match=r"--full-refresh` once to rebuild them there, then delete .*normalized/"):
        check_no_legacy_tables(raw, new, full_refresh=False)
    check_no_legacy_tables(raw, new, full_refresh=True)  # the rebuild
    new.write_atomic("_airbyte_normalization/tables.json", b'{"tables": {}}')
    check_no_legacy_tables(raw, new, full_refresh=False)  # rebuilt: the old folders are only left to delete
