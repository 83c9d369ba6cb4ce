"""The ast reading of custom components' source: classes, members, fields, bases, imports. Nothing is imported."""

from __future__ import annotations

import keyword
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.custom import source
from framework.components.custom.source import ClassFacts, find_class, missing_imports, read_module


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def facts(file, module, class_path, root) -> ClassFacts:
    found = find_class(file, module, class_path, str(root))
    assert isinstance(found, ClassFacts), found
    return found


def test_members_fields_and_init_of_a_class(tmp_path):
    file = write(tmp_path, "components.py", """
        from dataclasses import dataclass, InitVar
        from typing import ClassVar

        @dataclass
        class Extractor:
            field_path: list
            parameters: InitVar[dict]
            kind: ClassVar[str] = "x"
            limit = 3

            def extract_records(self, response):
                return []

            @property
            def name(self):
                return "n"

        class Plain:
            def __init__(self, a, b=1, *, c, **rest):
                pass
    """)
    extractor = facts(file, "components", "Extractor", tmp_path)
    assert {"extract_records", "name", "limit", "field_path", "kind"} <= extractor.members
    assert extractor.fields == {"field_path", "parameters"}  # ClassVar is not a field
    assert extractor.fields_known and extractor.missing(("extract_records", "decode")) == ("decode",)
    plain = facts(file, "components", "Plain", tmp_path)
    assert plain.fields == {"a", "b", "c"} and plain.accepts_any and not plain.fields_known


def test_bases_in_the_same_file_and_in_other_package_modules(tmp_path):
    package = tmp_path / "source_shop"
    write(package, "__init__.py", "")
    write(package, "base.py", """
        import abc

        class Base(abc.ABC):
            size: int

            def next_page_token(self, response, last_page_size, last_record, last_page_token_value):
                return None
    """)
    file = write(package, "components.py", """
        from typing import Generic, TypeVar
        from .base import Base
        from source_shop import base as base_module

        T = TypeVar("T")

        class Middle(Base, Generic[T]):
            start: int

        class Strategy(Middle[int]):
            @property
            def initial_token(self):
                return None

        class Other(base_module.Base):
            pass
    """)
    strategy = facts(file, "source_shop.components", "Strategy", tmp_path)
    assert strategy.missing(("next_page_token", "initial_token")) == ()
    assert strategy.fields == {"start", "size"} and strategy.fields_known
    assert strategy.modules == (file, str(package / "base.py"))
    assert facts(file, "source_shop.components", "Other", tmp_path).fields == {"size"}


def test_airbyte_and_other_installed_bases_are_trusted(tmp_path):
    file = write(tmp_path, "components.py", """
        from airbyte_cdk.sources.declarative.extractors import DpathExtractor
        import requests.auth

        class Extractor(DpathExtractor):
            pass

        class Auth(requests.auth.AuthBase):
            pass
    """)
    extractor = facts(file, "components", "Extractor", tmp_path)
    assert [b.airbyte for b in extractor.opaque] == [True]
    assert extractor.opaque[0].name == "airbyte_cdk.sources.declarative.extractors.DpathExtractor"
    assert extractor.missing(("extract_records",)) == () and not extractor.fields_known
    auth = facts(file, "components", "Auth", tmp_path)
    assert [(b.name, b.airbyte) for b in auth.opaque] == [("requests.auth.AuthBase", False)]


def test_re_exports_nested_classes_and_missing_classes(tmp_path):
    package = tmp_path / "source_shop"
    write(package, "components/__init__.py", """
        from .extractors import Extractor
        from . import routers
        from airbyte_cdk.sources.declarative.transformations import AddFields
        Alias = Extractor
    """)
    write(package, "components/extractors.py", """
        class Extractor:
            def extract_records(self, response):
                return []
    """)
    write(package, "components/routers.py", """
        class Outer:
            class Router:
                def stream_slices(self):
                    yield {}
    """)
    init = str(package / "components" / "__init__.py")
    module = "source_shop.components"
    assert facts(init, module, "Extractor", tmp_path).file == str(package / "components" / "extractors.py")
    assert "stream_slices" in facts(init, module, "routers.Outer.Router", tmp_path).members
    assert find_class(init, module, "AddFields", str(tmp_path)) == "AddFields"  # imported from elsewhere: unseen
    assert find_class(init, module, "Alias", str(tmp_path)) == "Alias"
    assert find_class(init, module, "Missing", str(tmp_path)) is None


def test_a_syntax_error_is_read_not_raised(tmp_path):
    file = write(tmp_path, "components.py", "class Broken(:\n    pass\n")
    parsed = read_module(file)
    assert parsed.syntax_error is not None and parsed.syntax_error[0] == 1 and parsed.classes == {}


def test_missing_packages_local_modules_and_guarded_imports(tmp_path):
    package = tmp_path / "source_shop"
    write(package, "__init__.py", "from .source import Source\n")
    write(package, "source.py", "import surely_absent_package_a.sub\nclass Source: ...\n")
    write(package, "helpers.py", "from airbyte_cdk.models import Type\n")
    file = write(package, "components.py", """
        import json
        import yaml
        from . import helpers
        from .missing_module import thing
        from surely_absent_package_a import x
        try:
            import surely_absent_package_b
        except ImportError:
            surely_absent_package_b = None
        if False:
            import surely_absent_package_c

        def later():
            import surely_absent_package_d
    """)
    found = missing_imports([file], {file: "source_shop.components"}, str(tmp_path))
    by_name = {m.package: m for m in found}
    assert set(by_name) == {"surely_absent_package_a", "airbyte_cdk", "source_shop.missing_module"}
    assert by_name["source_shop.missing_module"].local
    assert by_name["source_shop.missing_module"].looked_for == str(package / "missing_module.py")
    # the package's __init__ runs first, so its import of .source is followed: that is where `a` is met first
    assert by_name["surely_absent_package_a"].file == str(package / "source.py")
    assert by_name["airbyte_cdk"].file == str(package / "helpers.py") and not by_name["airbyte_cdk"].local


def test_a_relative_import_in_a_components_file_beside_the_manifest_is_reported(tmp_path):
    file = write(tmp_path, "components.py", "from .other import x\n")
    [problem] = missing_imports([file], {file: "components"}, str(tmp_path))
    assert problem.local and problem.package == ".other" and problem.line == 1


def test_installed_is_asked_without_importing(monkeypatch):
    asked = []
    monkeypatch.setattr(source.importlib.util, "find_spec", lambda name: asked.append(name))
    source.is_installed.cache_clear()
    try:
        assert source.is_installed("json")  # standard library: not even asked
        assert not source.is_installed("surely_absent_package_e")
        assert asked == ["surely_absent_package_e"]
    finally:
        source.is_installed.cache_clear()


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda n: not keyword.iskeyword(n) and not n.startswith("__"))


@settings(max_examples=40, deadline=None)
@given(methods=st.sets(_names, max_size=5), fields=st.sets(_names, max_size=5), base_methods=st.sets(_names, max_size=3))
def test_members_and_fields_are_what_the_class_and_its_base_define(tmp_path_factory, methods, fields, base_methods):
    folder = tmp_path_factory.mktemp("gen")
    lines = ["class Base:", "    base_field: int"]
    lines += [f"    def {name}(self): ..." for name in sorted(base_methods)] or []
    lines += ["", "class Thing(Base):", "    pass"]
    lines += [f"    {name}: int" for name in sorted(fields)]
    lines += [f"    def {name}(self): ..." for name in sorted(methods - fields)]
    file = folder / "components.py"
    file.write_text("\n".join(lines) + "\n")
    found = facts(str(file), "components", "Thing", folder)
    assert found.fields == fields | {"base_field"}
    assert found.members == fields | methods | base_methods | {"base_field"}
    wanted = tuple(sorted(methods | {"absent_method"}))
    assert found.missing(wanted) == tuple(n for n in wanted if n not in found.members)


@pytest.mark.parametrize("text", ["", "x = 1\n", "def f(): ...\n"])
def test_modules_without_classes(tmp_path, text):
    file = write(tmp_path, "components.py", text)
    assert find_class(file, "components", "X", str(tmp_path)) is None
