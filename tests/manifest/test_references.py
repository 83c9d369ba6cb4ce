import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.manifest import check_manifest_text
from framework.manifest.references import _Resolver, _TooLarge, resolve_references
from framework.manifest.yaml_source import parse_text


def resolve(text: str):
    doc = parse_text(text.encode())
    data, origin, problems = resolve_references(doc)
    return doc, data, origin, problems


def test_ref_merges_with_local_keys_overriding():
    _, data, _, problems = resolve(
        "definitions:\n  base: {a: 1, b: 2}\nthing:\n  $ref: '#/definitions/base'\n  b: 3\n"
    )
    assert not problems
    assert data["thing"] == {"a": 1, "b": 3}


def test_string_refs_old_and_new_forms():
    _, data, _, problems = resolve(
        "definitions:\n  x: {a: 1}\nlist:\n  - '#/definitions/x'\n  - '*ref(definitions.x)'\n"
    )
    assert not problems
    assert data["list"] == [{"a": 1}, {"a": 1}]


def test_nested_refs_and_list_indexes():
    _, data, _, problems = resolve(
        "definitions:\n  a: {$ref: '#/definitions/b', z: 0}\n  b: {y: [10, 20]}\nv: '#/definitions/b/y/1'\nw:\n  $ref: '#/definitions/a'\n"
    )
    assert not problems
    assert data["v"] == 20
    assert data["w"] == {"y": [10, 20], "z": 0}


def test_json_pointer_escapes():
    _, data, _, problems = resolve("definitions:\n  'a/b': {k: 1}\nv: {$ref: '#/definitions/a~1b'}\n")
    assert not problems and data["v"] == {"k": 1}


def test_unknown_ref_suggests_the_close_name():
    _, _, _, [problem] = resolve("definitions:\n  requester: {a: 1}\nv: {$ref: '#/definitions/requestr'}\n")
    assert problem.code == "unknown-ref"
    assert problem.line == 3
    assert "#/definitions/requester" in problem.fix


def test_cycles_are_detected_not_looped():
    _, _, _, problems = resolve("definitions:\n  a: {$ref: '#/definitions/b'}\n  b: {$ref: '#/definitions/a'}\nv: '#/definitions/a'\n")
    assert problems and {p.code for p in problems} == {"ref-cycle"}
    messages = " ".join(p.message for p in problems)  # the cycle, entered at either end
    assert ("definitions.a -> definitions.b -> definitions.a" in messages
            or "definitions.b -> definitions.a -> definitions.b" in messages), messages


def test_self_reference_is_a_cycle():
    _, _, _, problems = resolve("definitions:\n  a: {x: '#/definitions/a'}\n")
    assert {p.code for p in problems} == {"ref-cycle"}


def test_origins_point_at_the_definition_lines():
    doc, data, origin, _ = resolve("definitions:\n  base:\n    a: 1\nthing:\n  $ref: '#/definitions/base'\n  b: 2\n")
    a_origin = origin.child("thing").child("a")
    b_origin = origin.child("thing").child("b")
    assert doc.where(a_origin.src) == (3, 8)
    assert doc.where(b_origin.src) == (6, 6)


def test_ref_to_a_non_mapping_with_siblings_is_an_error():
    _, _, _, [problem] = resolve("definitions:\n  v: 5\nx: {$ref: '#/definitions/v', y: 1}\n")
    assert problem.code == "bad-ref"


def _ref_bomb(levels: int, width: int) -> str:
    lines = ["definitions:", "  d0: {v: 'x'}"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"'#/definitions/d{level - 1}'"] * width)
        lines.append(f"  d{level}: [{refs}]")
    lines.append(f"streams: '#/definitions/d{levels}'")
    return "\n".join(lines) + "\n"


def test_a_definition_referenced_twice_is_resolved_once_and_shared():
    _, data, origin, problems = resolve(
        "definitions:\n  base: {a: {deep: [1, 2]}}\nx: '#/definitions/base'\ny: '#/definitions/base'\n"
        "z: {$ref: '#/definitions/base', b: 1}\n")
    assert not problems
    assert data["x"] is data["y"] is data["definitions"]["base"]
    assert data["z"]["a"] is data["x"]["a"] and data["z"] == {"a": {"deep": [1, 2]}, "b": 1}
    assert origin.child("x").child("a").src == ("definitions", "base", "a")


def test_a_reference_bomb_is_refused_quickly_at_its_place():
    start = time.perf_counter()
    _, data, _, problems = resolve(_ref_bomb(levels=12, width=10))  # 10^12 values once expanded
    assert time.perf_counter() - start < 2
    assert data is None
    [problem] = problems
    assert problem.code == "ref-too-large" and "expand to more than" in problem.message
    assert problem.line > 2  # the definition where the expansion crosses the bound, not the top of the file


def test_a_reference_bomb_stops_validate_manifest_quickly():
    start = time.perf_counter()
    checked = check_manifest_text(_ref_bomb(levels=12, width=10))
    assert time.perf_counter() - start < 3
    assert "ref-too-large" in {d.code for d in checked.errors}


def test_a_large_expansion_under_the_bound_resolves():
    _, data, _, problems = resolve(_ref_bomb(levels=4, width=10))  # 10^4 leaves: fine
    assert not problems and len(data["streams"]) == 10
    data, _, problems = resolve_with_bound(_ref_bomb(levels=4, width=10), 5_000)
    assert data is None and [p.code for p in problems] == ["ref-too-large"]


def resolve_with_bound(text: str, bound: int):
    resolver = _Resolver(parse_text(text.encode()), max_expanded=bound)
    try:
        return resolver.resolve(resolver.doc.data, (), ()) + (resolver.problems,)
    except _TooLarge as exc:
        resolver.report(exc.src, "ref-too-large", str(exc), None)
        return None, None, resolver.problems


def _expand(value, definitions):
    """The tree a manifest's references stand for, expanded the naive way (each reference copied)."""
    if isinstance(value, str) and value.startswith("#/definitions/"):
        return _expand(definitions[value.rsplit("/", 1)[1]], definitions)
    if isinstance(value, list):
        return [_expand(item, definitions) for item in value]
    if isinstance(value, dict):
        base = {}
        if "$ref" in value:
            base = dict(_expand(definitions[value["$ref"].rsplit("/", 1)[1]], definitions))
        base.update({key: _expand(item, definitions) for key, item in value.items() if key != "$ref"})
        return base
    return value


@st.composite
def _acyclic_definitions(draw):
    definitions = {}
    for index in range(draw(st.integers(1, 6))):
        earlier = [f"#/definitions/d{i}" for i in range(index)]
        leaf = st.integers(0, 9) | (st.sampled_from(earlier) if earlier else st.integers(0, 9))
        body = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), leaf | st.lists(leaf, max_size=3), max_size=3))
        if earlier and draw(st.booleans()):
            body["$ref"] = draw(st.sampled_from(earlier))
        definitions[f"d{index}"] = body
    return definitions


@given(_acyclic_definitions())
@settings(max_examples=60, deadline=None)
def test_the_shared_result_equals_the_naive_expansion(definitions):
    top = {"definitions": definitions, "streams": [f"#/definitions/{name}" for name in definitions]}
    _, data, _, problems = resolve(json.dumps(top))
    assert not problems
    assert data == _expand(top, definitions)
