import time

import pytest

from framework.manifest.yaml_source import MAX_BYTES, MAX_DEPTH, parse_text, read_document


def codes(doc):
    return [p.code for p in doc.problems]


def test_positions_of_keys_and_values_are_one_based():
    doc = parse_text(b"a: 1\nb:\n  c: [x, y]\n")
    assert doc.data == {"a": 1, "b": {"c": ["x", "y"]}}
    assert doc.key_at[("b", "c")] == (3, 3)
    assert doc.value_at[("b", "c", 1)] == (3, 10)
    assert doc.where(("b", "c", 5)) == (3, 6)  # nearest known ancestor


def test_dates_stay_strings():
    doc = parse_text(b"start: 2022-01-01\nwhen: 2022-01-01T00:00:00Z\n")
    assert doc.data == {"start": "2022-01-01", "when": "2022-01-01T00:00:00Z"}


def test_duplicate_key_is_reported_at_the_second_key():
    doc = parse_text(b"a: 1\nb: 2\na: 3\n")
    [problem] = doc.problems
    assert problem.code == "duplicate-key"
    assert (problem.line, problem.column) == (3, 1)
    assert "line 1" in problem.message


def test_tab_indentation_is_named():
    doc = parse_text(b"a:\n\tb: 1\n")
    [problem] = doc.problems
    assert problem.code == "tab-indent" and problem.line == 2
    assert "spaces" in problem.fix


def test_tabs_inside_block_scalars_are_content():
    doc = parse_text(b"a: |\n  x\ty\nb: 1\n")
    assert not doc.problems
    assert doc.data["a"] == "x\ty\n"


def test_broken_yaml_has_a_place():
    doc = parse_text(b"a: [1, 2\nb: 3\n")
    [problem] = doc.problems
    assert problem.code == "yaml-syntax" and problem.line >= 1 and problem.column >= 1


def test_empty_and_comment_only_files():
    assert codes(parse_text(b"")) == ["empty-file"]
    assert codes(parse_text(b"# nothing\n\n")) == ["empty-file"]


def test_binary_and_non_utf8_files():
    assert codes(parse_text(b"\x89PNG\r\n\x1a\n\x00\x00")) == ["binary-file"]
    assert codes(parse_text(b"a: \xff\xfe\n")) == ["not-utf8"]


def test_oversized_file_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    doc = read_document(str(path))
    assert codes(doc) == ["file-too-large"]
    assert "50.0 MiB" in doc.problems[0].message and MAX_BYTES < 50 * 1024 * 1024


def test_alias_bomb_is_bounded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i-1}'] * 10)}]")
    doc = parse_text("\n".join(lines).encode())
    assert codes(doc) == ["too-many-nodes"]
    assert doc.problems[0].line >= 1 and doc.problems[0].column > 1  # at the anchor expanded when it crossed


def test_an_alias_bomb_is_refused_before_it_is_expanded():
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]  # 9**12 values
    started = time.perf_counter()
    doc = parse_text("\n".join(lines))
    assert codes(doc) == ["too-many-nodes"] and doc.data is None
    assert time.perf_counter() - started < 1.0  # counted over the shared nodes, never expanded


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 1_000, 100_000])
def test_deep_nesting_is_a_located_error_not_a_crash(levels):
    flow = parse_text("version: 6.7.0\nx: " + "[" * levels + "]" * levels)
    assert codes(flow) == ["too-deep"]
    assert (flow.problems[0].line, flow.problems[0].column) == (2, 3 + MAX_DEPTH)  # the root mapping is the first level
    block = parse_text("x:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(min(levels, 2_000))) + "  b: 1\n")
    assert codes(block) == ["too-deep"]


def test_nesting_through_aliases_counts_too():
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, MAX_DEPTH + 2)]
    doc = parse_text("\n".join(lines))
    assert codes(doc) == ["too-deep"]
    assert codes(parse_text("\n".join(lines[:MAX_DEPTH - 2]))) == []


def test_unreadable_path():
    doc = read_document("/nonexistent/manifest.yaml")
    assert codes(doc) == ["file-unreadable"]
