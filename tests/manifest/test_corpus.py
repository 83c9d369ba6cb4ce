"""Compatibility with real Airbyte manifests (the corpus named by MANIFEST_CORPUS).

The corpus holds Airbyte's manifests alone: without the schema files they name
(``file_path``) and without the Python modules of their custom components. Every
manifest Airbyte's schema accepts (INDEX.md's last column) must validate, but for
what the corpus lacks: each missing schema file is one ``file-not-found`` error, and
a missing module of custom components is exactly one clear error naming the file
and place, the module, every class the manifest takes from it, and the fix.
:data:`EXPECTED` says what each manifest gets, so that a new refusal fails here; a
manifest Airbyte rejects too is listed with the errors that stop it.
docs/airbyte-differences.md ("Manifests accepted") gives the counts and reasons.
"""

from __future__ import annotations

import glob
import os

import pytest
from conftest import corpus_dir

from framework.manifest import check_manifest

CORPUS = corpus_dir()
pytestmark = pytest.mark.skipif(CORPUS is None, reason="MANIFEST_CORPUS is not set to the Airbyte manifest corpus")
FILES = sorted(glob.glob(os.path.join(CORPUS or ".", "*.yaml")))

ACCEPTED = "accepted"  # no error at all (warnings allowed)
SCHEMA_FILES = "schema files absent"  # errors only for the schema files the corpus does not hold
CUSTOM_CODE = "custom code absent"  # one error for the missing module (and the absent schema files)
REFUSED = "refused"  # Airbyte's schema rejects it too: the codes of the errors that stop it

#: Each manifest of the corpus: (outcome, error codes besides `file-not-found` for REFUSED).
EXPECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "source-amplitude.legacy.yaml": (CUSTOM_CODE, ()),
    "source-datadog.legacy.yaml": (ACCEPTED, ()),
    # `stream_slicer: DatetimeStreamSlicer` and a page token injected into the `path`: Airbyte's schema says no
    "source-delighted.legacy-pre029.yaml": (REFUSED, ("invalid-value", "unsupported-component")),
    "source-dixa.legacy.yaml": (ACCEPTED, ()),
    "source-freshdesk.legacy.yaml": (CUSTOM_CODE, ()),  # (Airbyte's schema rejects it; its modules decide here)
    "source-gitlab.legacy.yaml": (ACCEPTED, ()),
    "source-mailchimp.legacy.yaml": (CUSTOM_CODE, ()),
    "source-nasa.yaml": (ACCEPTED, ()),
    "source-notion.legacy.yaml": (CUSTOM_CODE, ()),
    "source-opsgenie.legacy.yaml": (SCHEMA_FILES, ()),
    "source-pipedrive.legacy.yaml": (ACCEPTED, ()),
    "source-posthog.legacy.yaml": (CUSTOM_CODE, ()),  # (Airbyte's schema rejects it)
    "source-recharge.legacy.yaml": (CUSTOM_CODE, ()),  # (Airbyte's schema rejects it)
    "source-sendgrid.legacy.yaml": (SCHEMA_FILES, ()),
    "source-sentry.legacy.yaml": (SCHEMA_FILES, ()),
    # two pagination strategies without `type`, which Airbyte's schema requires too
    "source-square.legacy.yaml": (REFUSED, ("custom-module-not-found", "missing-type", "missing-type")),
    "source-the-guardian-api.yaml": (CUSTOM_CODE, ()),
    "source-trello.legacy.yaml": (CUSTOM_CODE, ()),
    "source-wikipedia-pageviews.yaml": (ACCEPTED, ()),
    "source-zendesk-sunshine.legacy.yaml": (CUSTOM_CODE, ()),
}


def _airbyte_accepts() -> dict[str, bool]:
    """File name -> whether it validates against Airbyte's current schema (the INDEX.md's last column)."""
    accepts: dict[str, bool] = {}
    with open(os.path.join(CORPUS or ".", "INDEX.md")) as handle:
        for line in handle:
            cells = line.rstrip("\n").split("\t")
            if len(cells) >= 2 and cells[0].endswith(".yaml"):
                accepts[cells[0]] = cells[-1] == "yes"
    return accepts


def _outcome(path: str) -> tuple[str, tuple[str, ...]]:
    checked = check_manifest(path)
    others = [d for d in checked.errors if d.code != "file-not-found"]
    codes = tuple(sorted(d.code for d in others))
    if not checked.errors:
        return ACCEPTED, ()
    if not others:
        return SCHEMA_FILES, ()
    if codes == ("custom-module-not-found",):
        [problem] = others
        # the clear error: the manifest's file and place, the module, the class, and where the module must be
        assert problem.file == path and problem.line > 0, problem.format()
        assert problem.message.startswith(("module `", "`")) and problem.fix, problem.format()
        assert "components" in problem.message and "class_name" in problem.path, problem.format()
        return CUSTOM_CODE, ()
    return REFUSED, codes


@pytest.mark.corpus
def test_every_manifest_of_the_corpus_gets_what_is_expected(capsys):
    names = [os.path.basename(path) for path in FILES]
    assert sorted(EXPECTED) == names  # a manifest added to the corpus gets a line above
    outcomes = {name: _outcome(path) for name, path in zip(names, FILES)}
    wrong = {name: (outcomes[name], EXPECTED[name]) for name in names if outcomes[name] != EXPECTED[name]}
    assert not wrong, "\n".join(f"{name}: got {got}, expected {want}" for name, (got, want) in wrong.items())
    accepts = _airbyte_accepts()
    # every manifest Airbyte's schema accepts is accepted here, but for what the corpus does not hold
    assert not [name for name in names if accepts[name] and outcomes[name][0] == REFUSED]
    count = {kind: sum(1 for name in names if outcomes[name][0] == kind and accepts[name])
             for kind in (ACCEPTED, SCHEMA_FILES, CUSTOM_CODE)}
    with capsys.disabled():
        print(f"\ncorpus: of {sum(accepts.values())} manifests Airbyte's schema accepts, {count[ACCEPTED]} validate, "
              f"{count[SCHEMA_FILES]} only lack schema files the corpus does not hold, {count[CUSTOM_CODE]} only lack "
              f"their custom components' module (one error each); {len(names) - sum(accepts.values())} Airbyte "
              "rejects")
