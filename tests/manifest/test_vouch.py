"""The quick build that stands in for pydantic's validator where it can (framework/manifest/vouch.py).

It may say no to a valid manifest (then pydantic builds it); it must never say yes to one pydantic refuses, and
what it builds must equal what pydantic builds (values, types, the fields given). Held over every manifest file
of the repository (examples, manifests, the tests' own), the corpora when MANIFEST_CORPUS /
PYPI_MANIFEST_CORPUS are set, every manifest the other tests of this folder check (see conftest.py), and
manifests mutated at random: wrong types, unknown keys, keys left out, other component types.
"""

from __future__ import annotations

import copy
import glob
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from quick_build_twin import assert_same_as_pydantic, full_build

from framework.manifest.components import Placement, Preparation
from framework.manifest.references import Origin, resolve_references
from framework.manifest.vouch import quick_build, vouches
from framework.manifest.yaml_source import read_document
from framework.models import REGISTRY, DeclarativeStream, DynamicDeclarativeStream, ParentFieldPath, RequestOption

REPO = Path(__file__).resolve().parents[2]


def _files() -> list[str]:
    found = [str(p) for folder in ("examples", "manifests", "tests") for p in (REPO / folder).rglob("*.yaml")]
    for variable, pattern in (("MANIFEST_CORPUS", "*.yaml"), ("PYPI_MANIFEST_CORPUS", "**/manifest.yaml")):
        corpus = os.environ.get(variable)
        if corpus and os.path.isdir(corpus):
            found += glob.glob(os.path.join(corpus, pattern), recursive=True)
    return sorted(found)


def _prepared(path: str) -> Any:
    doc = read_document(path)
    if doc.data is None:
        return None
    data, origin, _ = resolve_references(doc)
    return Preparation(Placement(doc, origin if data is not None else Origin(()))).run(data)


def _accepted(data: Any) -> bool:
    return full_build(data) is not None




FILES = _files()


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, REPO) if p.startswith(str(REPO)) else
                         os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p))
def test_builds_what_pydantic_builds_from_every_file(path):
    data = _prepared(path)
    if data is not None:
        assert_same_as_pydantic(data)


def test_vouches_for_nearly_every_valid_file():
    """Else it saves nothing: the full check would run anyway."""
    valid = [path for path in FILES if (data := _prepared(path)) is not None and _accepted(data)]
    vouched = [path for path in valid if vouches(_prepared(path))]
    assert len(valid) > 20
    assert len(vouched) >= 0.9 * len(valid), sorted(set(valid) - set(vouched))
    for name in ("examples/shop/manifest.yaml", "manifests/github.yaml"):
        assert str(REPO / name) in vouched


# Valid manifests to mutate: the example, the GitHub connector, and the parity manifests (most components).
SEEDS = [data for path in FILES if path.startswith(str(REPO)) and "/corpus" not in path
         and (data := _prepared(path)) is not None and vouches(data)]

# Values of every kind a YAML file can give, and component mappings of other types
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                   st.sampled_from(["", "x", "{{ config['a'] }}", "P1D", "GET", "body_json", "header", "1"]),
                   st.lists(st.sampled_from(["a", 1, None]), max_size=2),
                   st.dictionaries(st.sampled_from(["a", "type", "name"]), st.sampled_from(["x", 1]), max_size=2),
                   st.sampled_from(sorted(REGISTRY)).map(lambda kind: {"type": kind}))


def _places(node: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _places(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _places(value, path + (index,))
    return found


def _parent(data: Any, path: tuple) -> Any:
    for step in path[:-1]:
        data = data[step]
    return data


@st.composite
def mutated(draw: Any) -> Any:
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in _places(data) if p]
        if not places:
            break
        path = draw(st.sampled_from(places))
        parent = _parent(data, path)
        how = draw(st.sampled_from(["replace", "delete", "add", "retype"]))
        if how == "replace":
            parent[path[-1]] = draw(VALUES)
        elif how == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "name", "type", "path", "field_name", "$parameters", "step"]))] = \
                draw(VALUES)
        elif how == "retype" and isinstance(parent, dict) and "type" in parent:
            parent["type"] = draw(st.sampled_from(sorted(REGISTRY)))
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_builds_what_pydantic_builds_from_a_mutated_manifest(data):
    assert_same_as_pydantic(data)


def test_says_no_where_it_cannot_be_sure():
    option = {"type": "RequestOption", "inject_into": "header", "field_name": "x"}
    assert vouches(option, RequestOption)
    assert not vouches({**option, "field_name": 3}, RequestOption)  # pydantic never turns a number into text
    assert not vouches({**option, "inject_into": "path"}, RequestOption)  # not one of the Literal's values
    assert not vouches({**option, "extra": 1}, RequestOption)  # extra="forbid"
    assert not vouches({**option, "field_path": ["a"]}, RequestOption)  # its model validator refuses it
    assert not vouches({"type": "RequestOption", "field_name": "x"}, RequestOption)  # a required field left out
    assert not vouches("RequestOption", RequestOption)
    # field validators run on the built value: here one refuses an empty path
    parent = {"type": "ParentFieldPath", "parent_path": ["id"], "record_path": ["parent_id"]}
    assert ParentFieldPath.__pydantic_decorators__.field_validators
    assert vouches(parent, ParentFieldPath)
    assert not vouches({**parent, "parent_path": []}, ParentFieldPath)
    # a `mode="before"` validator runs on the mapping first: DynamicDeclarativeStream's gives a template its name
    assert DynamicDeclarativeStream.__pydantic_decorators__.model_validators["_template_name"].info.mode == "before"
    assert not vouches({"type": "DynamicDeclarativeStream", "stream_template": {}, "components_resolver": {}},
                       DynamicDeclarativeStream)
    stream = {"type": "DeclarativeStream", "name": "s", "retriever": {"type": "SimpleRetriever", "record_selector": {
        "type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
        "requester": {"type": "HttpRequester", "url_base": "https://x", "path": "/"}}}
    assert vouches(stream, DeclarativeStream) == _accepted_as(stream, DeclarativeStream)


def _accepted_as(data: Any, model: Any) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


def test_a_cold_check_builds_no_validator_for_a_valid_manifest():
    """What a cold start saves: the core schema of every model, and pydantic's plugin loader."""
    import subprocess
    import sys

    code = ("import sys\nfrom framework.cli.validate import main\n"
            f"rc = main(['--quiet', {str(REPO / 'examples' / 'shop' / 'manifest.yaml')!r}])\n"
            "from framework.models import DeclarativeSource\n"
            "print(rc, DeclarativeSource.__pydantic_complete__, 'pydantic.plugin._loader' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert result.stdout.strip() == "0 False False", result.stdout + result.stderr


def test_components_nested_past_python_s_limit_are_left_to_pydantic():
    """pydantic reports a recursion limit as a validation error; the walk must not crash before it can."""
    from framework.models import CompositeErrorHandler

    handler: dict = {"type": "DefaultErrorHandler"}
    for _ in range(3000):
        handler = {"type": "CompositeErrorHandler", "error_handlers": [handler]}
    assert quick_build(handler, CompositeErrorHandler) is None
    with pytest.raises(ValidationError):
        CompositeErrorHandler.model_validate(handler)
