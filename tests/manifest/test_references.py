from framework.manifest.references import resolve_references
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
    assert "definitions.a -> definitions.b -> definitions.a" in " ".join(p.message for p in problems)


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
