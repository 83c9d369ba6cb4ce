"""The loader: shipped code behind the gate, package folders without their __init__.py, missing packages,
and the shipped files written back out for executors."""

from __future__ import annotations

import sys

import pytest
from components.custom.kit import write_components

from framework.components.custom.loader import (
    AIRBYTE_UNSAFE_ENV,
    ALLOW_ENV,
    CodeLoader,
    custom_code_allowed,
    materialize,
)
from framework.components.custom.names import resolve_class_name
from framework.errors import ConfigError


def test_the_flag_wins_over_the_environment_and_both_variables_allow():
    assert custom_code_allowed(True, {}) is True
    assert custom_code_allowed(False, {ALLOW_ENV: "true"}) is False
    assert custom_code_allowed(None, {}) is False
    assert custom_code_allowed(None, {ALLOW_ENV: "true"}) is True
    assert custom_code_allowed(None, {AIRBYTE_UNSAFE_ENV: "TRUE"}) is True
    assert custom_code_allowed(None, {ALLOW_ENV: "no"}) is False


def test_shipped_code_is_refused_unless_allowed_naming_the_file_the_place_and_the_fix(tmp_path):
    path = write_components(tmp_path, "RAN = []\nclass X:\n    pass\nRAN.append(1)\n")
    ref = resolve_class_name("components.X", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        CodeLoader(str(tmp_path), allowed=False).load_class(ref, "record extractor", "manifest.yaml:7:9")
    message = str(caught.value)
    assert str(path) in message and "manifest.yaml:7:9" in message and "record extractor" in message
    assert "--allow-custom-code" in message and "FRAMEWORK_ALLOW_CUSTOM_CODE=true" in message
    assert "AIRBYTE_ENABLE_UNSAFE_CODE=true" in message
    # and nothing ran
    assert "components" not in sys.modules or getattr(sys.modules["components"], "__file__", None) != str(path)


def test_components_beside_the_manifest_load_as_the_module_components_and_are_recorded(tmp_path):
    folder = tmp_path / "shop"
    write_components(folder, "class X:\n    value = 1\n")
    loader = CodeLoader(str(folder), allowed=True)
    cls = loader.load_class(resolve_class_name("source_declarative_manifest.components.X", str(folder)), "x", None)
    assert cls.value == 1 and sys.modules["components"].X is cls
    assert sys.modules["source_declarative_manifest.components"].X is cls
    assert loader.shipped_files() == {"shop/components.py": "class X:\n    value = 1\n"}


def test_a_components_py_from_another_folder_or_changed_replaces_the_module(tmp_path):
    write_components(tmp_path / "a", "class X:\n    value = 'a'\n")
    write_components(tmp_path / "b", "class X:\n    value = 'b'\n")
    a = CodeLoader(str(tmp_path / "a"), True).load_class(resolve_class_name("components.X", str(tmp_path / "a")), "x",
                                                        None)
    b = CodeLoader(str(tmp_path / "b"), True).load_class(resolve_class_name("components.X", str(tmp_path / "b")), "x",
                                                        None)
    assert (a.value, b.value) == ("a", "b")
    write_components(tmp_path / "b", "class X:\n    value = 'b2'\n")
    again = CodeLoader(str(tmp_path / "b"), True).load_class(resolve_class_name("components.X", str(tmp_path / "b")),
                                                            "x", None)
    assert again.value == "b2"


def _package(tmp_path):
    package = tmp_path / "source_things"
    write_components(package, "raise RuntimeError('the package __init__ must not run')\n", "__init__.py")
    write_components(package, "FACTOR = 3\n", "helpers.py")
    write_components(package, "from ..helpers import FACTOR\n\nclass Scaled:\n    factor = FACTOR\n",
                     "components/transform.py")
    write_components(package, "", "components/__init__.py")
    (package / "manifest.yaml").write_text("version: 6.7.0\n")
    return package


def test_a_package_folder_module_loads_without_running_the_package_init_and_relative_imports_work(tmp_path):
    package = _package(tmp_path)
    loader = CodeLoader(str(package), allowed=True)
    ref = resolve_class_name("source_things.components.transform.Scaled", str(package))
    assert ref.origin == "package-folder"
    cls = loader.load_class(ref, "transformation", None)
    assert cls.factor == 3
    assert cls.__module__ == "source_things.components.transform"
    assert sys.modules["source_things.helpers"].FACTOR == 3
    assert sorted(loader.shipped_files()) == ["source_things/components/__init__.py",
                                              "source_things/components/transform.py", "source_things/helpers.py"]


def test_a_class_in_the_package_init_runs_it(tmp_path):
    package = tmp_path / "source_top"
    write_components(package, "class Top:\n    ok = True\n", "__init__.py")
    loader = CodeLoader(str(package), allowed=True)
    assert loader.load_class(resolve_class_name("source_top.Top", str(package)), "x", None).ok
    assert list(loader.shipped_files()) == ["source_top/__init__.py"]


def test_a_missing_package_is_named_and_airbyte_cdk_gets_the_extra(tmp_path):
    write_components(tmp_path, "import not_installed_pkg_xyz.sub\nclass X:\n    pass\n")
    ref = resolve_class_name("components.X", str(tmp_path))
    with pytest.raises(ConfigError, match=r"imports `not_installed_pkg_xyz`, which is not installed.*package `not_installed_pkg_xyz`.*m:1:2"):
        CodeLoader(str(tmp_path), True).load_class(ref, "x", "m:1:2")
    other = tmp_path / "cdk"
    write_components(other, "from airbyte_cdk.sources.declarative.extractors import DpathExtractor\n"
                            "class X(DpathExtractor):\n    pass\n")
    try:
        import airbyte_cdk  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"needs airbyte-cdk: pip install 'manifest-framework\[airbyte\]'"):
            CodeLoader(str(other), True).load_class(resolve_class_name("components.X", str(other)), "x", None)


def test_an_installed_module_is_imported_without_the_gate_and_errors_name_what_is_missing(tmp_path):
    loader = CodeLoader(str(tmp_path), allowed=False)
    assert loader.load_class(resolve_class_name("collections.OrderedDict", str(tmp_path)), "x", None) is \
        __import__("collections").OrderedDict
    with pytest.raises(ConfigError, match="no module `nowhere_module_xyz` is installed"):
        loader.load_class(resolve_class_name("nowhere_module_xyz.Thing", str(tmp_path)), "x", None)
    with pytest.raises(ConfigError, match="has no `Nope`"):
        loader.load_class(resolve_class_name("collections.Nope", str(tmp_path)), "x", None)
    with pytest.raises(ConfigError, match="is a function, not a class"):
        loader.load_class(resolve_class_name("os.path.join", str(tmp_path)), "x", None)


def test_missing_components_py_and_import_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="there is none in"):
        CodeLoader(str(tmp_path), True).load_class(resolve_class_name("components.X", str(tmp_path)), "x", None)
    write_components(tmp_path, "class X:\n    pass\n1 / 0\n")
    with pytest.raises(ConfigError, match=r"(?s)loading .*components.py.*failed.*ZeroDivisionError") as caught:
        CodeLoader(str(tmp_path), True).load_class(resolve_class_name("components.X", str(tmp_path)), "x", None)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_materialize_recreates_the_layout_once_per_content(tmp_path):
    files = {"source_shop/components.py": "A = 1\n", "source_shop/sub/more.py": "B = 2\n"}
    folder = materialize(files, "source_shop")
    assert folder.endswith("/source_shop")
    assert open(f"{folder}/components.py").read() == "A = 1\n"
    assert open(f"{folder}/sub/more.py").read() == "B = 2\n"
    assert materialize(files, "source_shop") == folder
    assert materialize({**files, "source_shop/components.py": "A = 3\n"}, "source_shop") != folder
    with pytest.raises(ConfigError, match="leaves its folder"):
        materialize({"../evil.py": "x"}, "source_shop")
