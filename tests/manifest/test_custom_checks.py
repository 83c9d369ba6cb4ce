"""check_manifest on custom components: their source read beside the manifest or in its package folder."""

from __future__ import annotations

import textwrap

import pytest

from framework.components.custom import source
from framework.manifest import check_manifest, check_manifest_text
from framework.manifest.custom_checks import AIRBYTE_EXTRA_FIX

MANIFEST = """\
version: 6.7.0
streams:
  - name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      requester:
        url_base: https://api.example.com
        authenticator:
          class_name: CLASS
          $parameters: {header: X-Key}
          token: "{{ config['key'] }}"
      record_selector:
        extractor: {field_path: [data]}
check:
  stream_names: [items]
"""


def layout(folder, files: dict[str, str], class_name: str, manifest_at: str = "manifest.yaml") -> str:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    path = folder / manifest_at
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MANIFEST.replace("CLASS", class_name))
    return str(path)


def problems(path):
    return [d for d in check_manifest(path).diagnostics if d.code != "file-not-found"]


def test_package_folder_with_relative_imports_and_a_base_in_another_module(tmp_path):
    path = layout(tmp_path, {
        "source_shop/__init__.py": "",
        "source_shop/auth/__init__.py": "from .token import TokenAuth\n",
        "source_shop/auth/base.py": """
            class HeaderAuth:
                header: str
                def get_auth_header(self):
                    return {self.header: self.token}
        """,
        "source_shop/auth/token.py": """
            from dataclasses import dataclass
            from .base import HeaderAuth

            @dataclass
            class TokenAuth(HeaderAuth):
                token: str
        """,
    }, "source_shop.auth.TokenAuth", "source_shop/manifest.yaml")
    assert problems(path) == []


def test_a_base_module_that_is_missing_is_an_error(tmp_path):
    path = layout(tmp_path, {
        "source_shop/__init__.py": "",
        "source_shop/components.py": "from .base import HeaderAuth\nclass TokenAuth(HeaderAuth): ...\n",
    }, "source_shop.components.TokenAuth", "source_shop/manifest.yaml")
    [problem] = problems(path)
    assert problem.code == "custom-module-not-found" and (problem.line, problem.column) == (9, 23)
    assert "imports `source_shop.base`" in problem.message
    assert str(tmp_path / "source_shop" / "base.py") in problem.message


def test_a_module_missing_from_the_package_folder(tmp_path):
    path = layout(tmp_path, {"source_shop/__init__.py": ""}, "source_shop.components.TokenAuth",
                  "source_shop/manifest.yaml")
    [problem] = problems(path)
    assert problem.code == "custom-module-not-found" and "source_shop.components" in problem.message
    assert str(tmp_path / "source_shop" / "components.py") in problem.message


def test_airbyte_cdk_base_names_the_extra_and_is_trusted_for_methods_and_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "is_installed", lambda top: top != "airbyte_cdk")
    path = layout(tmp_path, {"components.py": """
        from airbyte_cdk.sources.declarative.auth.token import ApiKeyAuthenticator

        class Auth(ApiKeyAuthenticator):
            pass
    """}, "components.Auth")
    [problem] = problems(path)
    assert problem.code == "airbyte-extra-missing" and problem.fix == AIRBYTE_EXTRA_FIX
    assert problem.fix == "pip install 'manifest-framework[airbyte]'"
    assert "`components.Auth` needs airbyte-cdk" in problem.message and "components.py:2 imports" in problem.message
    monkeypatch.setattr(source, "is_installed", lambda top: True)
    assert problems(path) == []  # with the extra: the base gives the methods, and its fields cannot be seen


def test_without_airbyte_cdk_what_the_extra_brings_gets_no_error_of_its_own(tmp_path, monkeypatch):
    absent = {"airbyte_cdk", "airbyte_protocol_dataclasses", "dpath", "surely_absent_package_r"}
    monkeypatch.setattr(source, "is_installed", lambda top: top not in absent)
    path = layout(tmp_path, {"components.py": """
        import dpath
        import surely_absent_package_r
        from airbyte_protocol_dataclasses.models import Type
        from airbyte_cdk.sources.declarative.auth.token import ApiKeyAuthenticator

        class Auth(ApiKeyAuthenticator):
            pass
    """}, "components.Auth")
    extra, other = sorted(problems(path), key=lambda p: p.code)
    assert extra.code == "airbyte-extra-missing"  # airbyte_protocol_dataclasses and dpath come with it
    assert other.code == "package-missing" and "surely_absent_package_r" in other.message  # this one does not


def test_an_airbyte_class_named_directly_without_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr("framework.manifest.custom_checks.is_installed", lambda top: top != "airbyte_cdk")
    path = layout(tmp_path, {}, "airbyte_cdk.sources.declarative.auth.token.ApiKeyAuthenticator")
    [problem] = problems(path)
    assert problem.code == "airbyte-extra-missing" and problem.fix == AIRBYTE_EXTRA_FIX


def test_one_error_per_missing_package_however_many_components_need_it(tmp_path):
    text = MANIFEST.replace("CLASS", "components.Auth").replace(
        "        extractor: {field_path: [data]}", "        extractor: {class_name: components.Extractor}")
    (tmp_path / "manifest.yaml").write_text(text)
    (tmp_path / "components.py").write_text(
        "import surely_absent_package_q\n"
        "class Auth:\n    token: str\n    def get_auth_header(self): ...\n"
        "class Extractor:\n    def extract_records(self, response): ...\n")
    [problem] = problems(str(tmp_path / "manifest.yaml"))
    assert problem.code == "package-missing" and "surely_absent_package_q" in problem.message


def test_keys_parameters_and_config_against_declared_fields(tmp_path):
    path = layout(tmp_path, {"components.py": """
        class Auth:
            def __init__(self, config, parameters, tokn):
                pass
            def get_auth_header(self):
                return {}
    """}, "components.Auth")
    [problem] = problems(path)
    assert problem.code == "custom-unknown-option" and problem.severity == "warning"
    assert problem.fix == "did you mean `tokn`?" and (problem.line, problem.column) == (11, 11)


def test_syntax_error_in_the_module(tmp_path):
    path = layout(tmp_path, {"components.py": "class Auth(:\n"}, "components.Auth")
    [problem] = problems(path)
    assert problem.code == "custom-syntax-error" and "components.py:1" in problem.message


def test_bad_class_name(tmp_path):
    path = layout(tmp_path, {}, "NotDotted")
    [problem] = problems(path)
    assert problem.code == "bad-class-name" and (problem.line, problem.column) == (9, 23)


def test_text_without_a_folder_is_not_checked_against_files():
    checked = check_manifest_text(MANIFEST.replace("CLASS", "components.Auth"))
    assert checked.errors == ()


@pytest.mark.parametrize("kind_field", ["transformations", "state_migrations"])
def test_every_element_of_a_list_is_checked(tmp_path, kind_field):
    text = MANIFEST.replace("CLASS", "components.Auth").replace(
        "    retriever:", f"    {kind_field}:\n      - class_name: components.Nope\n    retriever:", 1)
    (tmp_path / "manifest.yaml").write_text(text)
    (tmp_path / "components.py").write_text("class Auth:\n    token: str\n    def get_auth_header(self): ...\n")
    [problem] = problems(str(tmp_path / "manifest.yaml"))
    assert problem.code == "custom-class-not-found" and "Nope" in problem.message and problem.line == 6


def test_a_broken_module_is_reported_once_for_all_its_components(tmp_path):
    text = MANIFEST.replace("CLASS", "components.Auth").replace(
        "        extractor: {field_path: [data]}", "        extractor: {class_name: components.Extractor}")
    (tmp_path / "manifest.yaml").write_text(text)
    (tmp_path / "components.py").write_text("class Auth(:\n")
    [problem] = problems(str(tmp_path / "manifest.yaml"))
    assert problem.code == "custom-syntax-error" and problem.line == 9


def test_a_missing_module_is_one_error_naming_every_class_taken_from_it(tmp_path):
    """A legacy manifest copied without its package (Airbyte's corpus): one error for the module, at its first
    use, naming the classes the manifest takes from it and how many components name them, and the fix."""
    text = MANIFEST.replace("CLASS", "source_shop.components.TokenAuth").replace(
        "        extractor: {field_path: [data]}\n",
        "        extractor: {class_name: source_shop.components.Extractor}\n"
        "        record_filter: {class_name: source_shop.components.TokenAuth}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    [problem] = problems(str(path))
    assert problem.code == "custom-module-not-found" and problem.line == 9
    assert "module `source_shop.components` of `source_shop.components.TokenAuth` is not installed" in problem.message
    assert "2 classes from it (`TokenAuth`, `Extractor`), at 3 places" in problem.message
    assert problem.fix == "keep the manifest in the connector's package folder `source_shop/`, beside its modules"
    path.write_text(MANIFEST.replace("CLASS", "source_shop.components.TokenAuth"))
    [problem] = problems(str(path))  # one use: the message as it always was
    assert problem.message.endswith("a package folder `source_<name>/`)")
