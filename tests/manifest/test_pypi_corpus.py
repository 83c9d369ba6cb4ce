"""Manifests of Airbyte's PyPI connector packages, with their Python modules (the corpus named by PYPI_MANIFEST_CORPUS).

Every manifest airbyte-cdk 7.39.1 builds (INDEX.md says ``yes`` or ``valid-schema``)
must validate here, but for packages its custom components import that are not
installed (airbyte-cdk itself, the ``airbyte`` extra's, or others such as
``pendulum``): each such package is one clear error naming it. :data:`EXPECTED`
says what each manifest gets, so that a new refusal fails here; custom checks
never report anything else on code that Airbyte runs. With the ``airbyte`` extra
installed, tests/manifest/test_pypi_corpus_discover.py goes on to discover them.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from framework.manifest import check_manifest
from framework.models import UNSUPPORTED

CORPUS = os.environ.get("PYPI_MANIFEST_CORPUS")
CORPUS = CORPUS if CORPUS and os.path.isdir(CORPUS) else None
pytestmark = pytest.mark.skipif(CORPUS is None, reason="PYPI_MANIFEST_CORPUS is not set to the PyPI manifest corpus "
                                                       "(../shared/corpus/pypi-manifests)")

CUSTOM_CODES = {"custom-module-not-found", "custom-class-not-found", "custom-method-missing", "custom-syntax-error",
                "bad-class-name", "custom-unknown-option"}
AIRBYTE = "airbyte_cdk"  # the `airbyte` extra

#: package -> what stops it here: the packages its custom components import that are not installed in the main
#: venv (each one error, the extra's `airbyte-extra-missing`, any other `package-missing`), and the component
#: types not supported; nothing for a manifest that validates.
EXPECTED: dict[str, tuple[str, ...]] = {
    "airbyte-source-activecampaign": (),
    "airbyte-source-ashby": (),
    "airbyte-source-avni": (AIRBYTE,),
    "airbyte-source-callrail": (),
    "airbyte-source-close-com": (AIRBYTE, "pendulum"),  # (INDEX.md: airbyte-cdk says `no`)
    "airbyte-source-copper": (),
    "airbyte-source-emailoctopus": (),
    # RateLimitedMultipleTokenAuthenticator, refused while the catalog lists it as unsupported
    "airbyte-source-github": (AIRBYTE, *sorted({"RateLimitedMultipleTokenAuthenticator"} & set(UNSUPPORTED))),
    "airbyte-source-google-ads": (AIRBYTE, "proto", "pendulum"),  # (INDEX.md: airbyte-cdk fails: `error`)
    "airbyte-source-hellobaton": (),
    "airbyte-source-ip2whois": (),
    "airbyte-source-lever-hiring": (),
    "airbyte-source-lokalise": (),
    "airbyte-source-mailgun": (),
    "airbyte-source-newsdata": (),
    "airbyte-source-orbit": (),
    "airbyte-source-plaid": (),
    "airbyte-source-recruitee": (),
    "airbyte-source-rocket-chat": (),
    "airbyte-source-sendgrid": (),  # its `urls_extractor` is ignored with a warning, as airbyte-cdk ignores it
    "airbyte-source-shortio": (),
    "airbyte-source-strava": (),
    "airbyte-source-tiktok-marketing": (AIRBYTE,),
    "airbyte-source-tvmaze-schedule": (),
    "airbyte-source-twitter": (),
    "airbyte-source-unleash": (),
    "airbyte-source-wikipedia-pageviews": (),
    "airbyte-source-zendesk-chat": (AIRBYTE, "pendulum"),
    "airbyte-source-zoom": (AIRBYTE,),
}


def _stops(errors: list) -> tuple[str, ...]:
    """What the errors say stops a manifest: the packages named (airbyte-cdk for the extra), the unsupported
    component types; anything else as its code."""
    found = []
    for problem in errors:
        if problem.code == "airbyte-extra-missing":
            found.append(AIRBYTE)
        elif problem.code == "package-missing":
            found.append(problem.message.split("`")[3])
        elif problem.code == "unsupported-component":
            found.append(problem.message.split("`")[1])
        else:
            found.append(problem.code)
    return tuple(sorted(found))


def _expected(name: str) -> tuple[str, ...]:
    """EXPECTED less the packages installed where the test runs (in a venv with the airbyte extra, say)."""
    return tuple(sorted(item for item in EXPECTED[name] if item in UNSUPPORTED or importlib.util.find_spec(item) is None))


def _index() -> list[tuple[str, str]]:
    """(manifest path relative to the corpus, airbyte-valid) for each package of INDEX.md."""
    rows = []
    with open(os.path.join(CORPUS or ".", "INDEX.md")) as handle:
        for line in handle:
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) > 5 and cells[3].endswith("manifest.yaml"):
                rows.append((cells[3], cells[4]))
    return rows


@pytest.mark.corpus
def test_every_manifest_of_the_corpus_gets_what_is_expected(capsys):
    rows = _index()
    assert sorted(relative.split("/", 1)[0] for relative, _valid in rows) == sorted(EXPECTED)
    wrong, accepted, stopped = [], [], []
    for relative, valid in rows:
        name = relative.split("/", 1)[0]
        checked = check_manifest(os.path.join(CORPUS or ".", relative))
        for problem in checked.diagnostics:  # custom checks find nothing wrong in code that Airbyte runs
            assert problem.code not in CUSTOM_CODES, problem.format()
        errors = [d for d in checked.errors if d.code != "file-not-found"]
        if _stops(errors) != _expected(name):
            wrong.append(f"{name}: stopped by {_stops(errors)}, expected {_expected(name)}:\n  "
                         + "\n  ".join(d.format() for d in errors))
        for problem in errors:  # one clear error per package: its name, the file that imports it, the fix
            if problem.code in ("package-missing", "airbyte-extra-missing"):
                assert " imports `" in problem.message or " imports it" in problem.message, problem.format()
                assert problem.fix and problem.file.endswith("manifest.yaml") and problem.line > 0
        if valid in ("yes", "valid-schema"):
            (stopped if errors else accepted).append(name)
    assert not wrong, "\n".join(wrong)
    with capsys.disabled():
        print(f"\npypi corpus: of {len(accepted) + len(stopped)} manifests airbyte-cdk builds, {len(accepted)} "
              f"validate; {len(stopped)} stop at packages not installed here or at unsupported components "
              f"({', '.join(stopped)})")
