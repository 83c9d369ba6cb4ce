"""Where a class_name points: beside the manifest, in a package folder, or installed; nothing is imported."""

from __future__ import annotations

import sys

import pytest

from framework.components.custom.names import package_of, resolve_class_name
from framework.errors import ConfigError


def test_components_beside_the_manifest(tmp_path):
    (tmp_path / "components.py").write_text("class Extractor: ...\n")
    for name in ("components.Extractor", "source_declarative_manifest.components.Extractor"):
        ref = resolve_class_name(name, str(tmp_path))
        assert (ref.module, ref.class_path, ref.origin) == ("components", "Extractor", "beside-manifest")
        assert ref.file == str(tmp_path / "components.py") and ref.shipped


def test_a_missing_components_file_resolves_without_a_file(tmp_path):
    ref = resolve_class_name("components.Extractor", str(tmp_path))
    assert ref.file is None and ref.origin == "beside-manifest"


def test_modules_of_a_package_folder(tmp_path):
    package = tmp_path / "source_shop"
    (package / "components").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('never run')\n")
    (package / "components" / "__init__.py").write_text("")
    (package / "components" / "transformations.py").write_text("class Clean: ...\n")
    assert package_of(str(package)) == "source_shop" and package_of(str(tmp_path)) is None
    ref = resolve_class_name("source_shop.components.transformations.Clean", str(package))
    assert (ref.module, ref.class_path, ref.origin, ref.root) == (
        "source_shop.components.transformations", "Clean", "package-folder", str(tmp_path))
    top = resolve_class_name("source_shop.Sync", str(package))
    assert (top.module, top.file) == ("source_shop", str(package / "__init__.py"))
    assert "source_shop" not in sys.modules


def test_installed_modules_are_found_without_importing_them():
    ref = resolve_class_name("json.decoder.JSONDecoder", ".")
    assert (ref.module, ref.class_path, ref.origin, ref.shipped) == ("json.decoder", "JSONDecoder", "installed", False)
    assert ref.file is not None and ref.file.endswith("decoder.py")
    missing = resolve_class_name("no_such_package_here.mod.X", ".")
    assert missing.file is None and missing.module == "no_such_package_here.mod"


@pytest.mark.parametrize("name", ["", "Extractor", "components.", "1x.Y", "a b.C", None])
def test_names_that_are_not_dotted_paths_are_refused(name, tmp_path):
    with pytest.raises(ConfigError, match="dotted path"):
        resolve_class_name(name, str(tmp_path))
