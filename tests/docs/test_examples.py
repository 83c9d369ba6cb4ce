"""Every fenced code block in README.md and docs/*.md is checked, by its language tag.

The convention (for every Markdown file there, including new ones):

* Every fenced block carries a language tag. An untagged block fails with
  its ``file:line``; use ``text`` for output, tables and anything else that
  is not checked.
* ``yaml`` with a top-level ``version`` or ``streams`` key is a full
  manifest: it must pass ``validate-manifest`` with no errors (warnings are
  allowed). It is checked as a copy in an empty temporary folder, so files it
  names relative to itself (``JsonFileSchemaLoader``) do not exist there: put
  ``<!-- doc-test: skip-files -->`` on the line before the block (blank lines
  between are fine) to ignore those ``file-not-found`` errors.
* Any other ``yaml`` must parse (the manifest reader's rules: no tabs, no
  duplicate keys). When it is a mapping whose ``type`` is a supported
  component, it must also be a valid component of that type (types implied,
  ``$parameters`` applied and templates checked as in a manifest); a snippet
  that holds a ``$ref`` cannot be resolved on its own and is only parsed.
* ``json`` must parse. A block of object members (``"key": value``, as when
  showing one key of a larger document) is parsed inside ``{}``.
* ``bash``, ``sh``, ``shell``, ``console``: every command that invokes
  ``run-manifest``, ``validate-manifest`` or ``normalize-output`` must be
  accepted by that command's argument parser. A command may follow a ``$ ``
  prompt, ``NAME=value`` assignments, a path (``.venv/bin/run-manifest``), or
  be written ``python -m framework.cli.<run|validate|normalize>``; ``\\``
  continues a line, ``#`` starts a comment, ``|``, ``&&``, ``||`` and ``;``
  separate commands and redirections (``> out.jsonl``, ``2>&1``) are ignored.
  In ``console`` blocks only lines after a ``$ `` prompt are commands (the
  rest is output). ``normalize-output`` lines are checked once
  ``framework/cli/normalize.py`` exists.
* ``python`` must compile.
* ``text`` and any other tag are not checked.

Nothing here starts Spark or makes a request.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP_FILES = "<!-- doc-test: skip-files -->"
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    file: str  # relative to the repo
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    skip_files: bool = False

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "manifests").glob("*.md"))]


def blocks_of(path: Path, root: Path = REPO) -> list[Block]:
    """The fenced blocks of a Markdown file (CommonMark fences: ``` or ~~~, closed by a longer-or-equal run)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    name = str(path.relative_to(root))
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None or ("`" in opening["fence"] and "`" in opening["info"]):
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        language = opening["info"].strip().split(" ")[0].split("{")[0].lower() if opening["info"].strip() else ""
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = _FENCE.match(lines[end])
            if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence) \
                    and not closing["info"].strip():
                break
            text = lines[end]
            body.append(text[min(indent, len(text) - len(text.lstrip(" "))):])  # up to the fence's indent
            end += 1
        previous = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        found.append(Block(name, index + 1, language, "\n".join(body) + "\n", previous == SKIP_FILES))
        index = end + 1
    return found


ALL_BLOCKS = [block for path in markdown_files() if path.exists() for block in blocks_of(path)]


def test_the_docs_are_there_and_have_blocks():
    names = {block.file for block in ALL_BLOCKS}
    for expected in ("README.md", "docs/manifest-guide.md", "docs/cluster.md", "docs/reference.md"):
        assert (REPO / expected).exists(), f"{expected} is missing"
    assert {"README.md", "docs/manifest-guide.md", "docs/cluster.md"} <= names, names


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: f"{b.where}:{b.language or 'untagged'}")
def test_block(block: Block, tmp_path: Path) -> None:
    if not block.language:
        pytest.fail(f"{block.where}: a fenced block without a language tag; add one (```text when it is "
                    "not code); see tests/docs/test_examples.py for what each tag is checked for")
    check = CHECKS.get(block.language)
    if check is not None:
        check(block, tmp_path)


# ------------------------------------------------------------------ yaml


def check_yaml(block: Block, tmp_path: Path) -> None:
    from framework.manifest.yaml_source import parse_text

    doc = parse_text(block.text, block.where)
    # A block of comments only (an editor's modeline, say) is empty, and fine.
    problems = [p for p in doc.problems if p.severity == "error" and p.code != "empty-file"]
    if problems:
        pytest.fail(f"{block.where}: the YAML does not parse:\n" + _lines(problems, block))
    data = doc.data
    if isinstance(data, dict) and ("version" in data or "streams" in data):
        _check_manifest(block, tmp_path)
    elif isinstance(data, dict) and isinstance(data.get("type"), str):
        _check_component(block, doc)


def _check_manifest(block: Block, tmp_path: Path) -> None:
    from framework.manifest import check_manifest

    copy = tmp_path / "manifest.yaml"
    copy.write_text(block.text, encoding="utf-8")
    checked = check_manifest(str(copy))
    errors = [d for d in checked.errors if not (block.skip_files and d.code == "file-not-found")]
    if errors:
        hint = f" (or mark it `{SKIP_FILES}` if only its files are missing)" \
            if any(d.code == "file-not-found" for d in errors) else ""
        pytest.fail(f"{block.where}: this manifest fails validate-manifest{hint}:\n" + _lines(errors, block))


def _check_component(block: Block, doc: Any) -> None:
    from pydantic import ValidationError

    from framework.manifest.checks import run_checks
    from framework.manifest.components import Placement, Preparation
    from framework.manifest.references import resolve_references
    from framework.models import REGISTRY

    model = REGISTRY.get(doc.data["type"])
    if model is None or "$ref" in block.text:
        return
    data, origin, problems = resolve_references(doc)
    place = Placement(doc, origin)
    preparation = Preparation(place)
    prepared = preparation.component(data, (), (model,), model.type_name(), {}, {})
    problems = problems + preparation.problems + run_checks(preparation.sites, prepared, place, None)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        pytest.fail(f"{block.where}: not a valid {model.type_name()}:\n" + _lines(errors, block))
    try:
        model.model_validate(prepared)
    except ValidationError as exc:
        pytest.fail(f"{block.where}: not a valid {model.type_name()}: {exc}")


def _lines(diagnostics: list, block: Block) -> str:
    """Diagnostics with their line in the Markdown file (the block's text starts one line after the fence)."""
    out = []
    for d in diagnostics:
        line = block.line + d.line if d.line else block.line
        out.append(f"  {block.file}:{line}: {d.severity}: {d.message}" + (f" (fix: {d.fix})" if d.fix else ""))
    return "\n".join(out)


# ------------------------------------------------------------------ json


_MEMBERS = re.compile(r'^\s*"[^"]*"\s*:')


def check_json(block: Block, tmp_path: Path) -> None:
    text = block.text
    if _MEMBERS.match(text):
        text = "{" + text + "}"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{block.file}:{block.line + exc.lineno}: the JSON does not parse: {exc.msg}")


# ------------------------------------------------------------------ python


def check_python(block: Block, tmp_path: Path) -> None:
    try:
        compile(block.text, block.where, "exec")
    except SyntaxError as exc:
        pytest.fail(f"{block.file}:{block.line + (exc.lineno or 0)}: the Python does not compile: {exc.msg}")


# ------------------------------------------------------------------ shell

# Command name -> module of its argument parser (``_parser()``).
COMMANDS = {
    "run-manifest": "framework.cli.run",
    "validate-manifest": "framework.cli.validate",
    "normalize-output": "framework.cli.normalize",
}
MODULES = {module: name for name, module in COMMANDS.items()}
_OPERATORS = {"|", "||", "&&", ";", "&", "|&"}
_REDIRECT = re.compile(r"(?<![\w=])\d*(?:>>|>|<)(?:&\d+|\s*[^\s|;&]+)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def command_lines(block: Block) -> list[tuple[int, str]]:
    """``(line number in the file, command text)`` of each logical command line of a shell block."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(block.text.splitlines(), block.line + 1):
        line = raw.rstrip()
        if not pending:
            start = number
            stripped = line.lstrip()
            if block.language == "console":
                if not stripped.startswith("$ "):
                    continue
                line = stripped[2:]
            elif stripped.startswith("$ "):
                line = stripped[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def invocations(command: str) -> list[tuple[str, list[str]]]:
    """The ``(command name, arguments)`` of every run-manifest/validate-manifest/normalize-output in a line."""
    lexer = shlex.shlex(_REDIRECT.sub(" ", command), posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    found = []
    simple: list[str] = []
    for token in tokens + [";"]:
        if token not in _OPERATORS:
            simple.append(token)
            continue
        words = simple
        simple = []
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if not words:
            continue
        name = words[0].rsplit("/", 1)[-1]
        if name in COMMANDS:
            found.append((name, words[1:]))
        elif re.fullmatch(r"python3?(\.\d+)?", name) and words[1:2] == ["-m"] and len(words) > 2 \
                and words[2] in MODULES:
            found.append((MODULES[words[2]], words[3:]))
    return found


def parser_of(name: str) -> Any:
    """The argparse parser of a command, or None when its module does not exist (yet)."""
    module = COMMANDS[name]
    if importlib.util.find_spec(module) is None:
        return None
    loaded = importlib.import_module(module)
    for builder in ("_parser", "parser", "build_parser"):
        if callable(getattr(loaded, builder, None)):
            return getattr(loaded, builder)()
    pytest.fail(f"{module} has no `_parser()` building its argparse parser; the docs test needs one to check "
                f"`{name}` command lines")


def check_shell(block: Block, tmp_path: Path) -> None:
    for line, command in command_lines(block):
        try:
            calls = invocations(command)
        except ValueError as exc:  # unbalanced quotes
            pytest.fail(f"{block.file}:{line}: the shell line does not split ({exc}): {command}")
        for name, args in calls:
            parser = parser_of(name)
            if parser is None:
                continue
            errors = io.StringIO()
            code: Any = 0
            try:
                with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
                    parser.parse_args(args)
            except SystemExit as exc:
                code = exc.code
            if code not in (0, None):  # --help exits 0
                message = (errors.getvalue().strip().splitlines() or [""])[-1]
                pytest.fail(f"{block.file}:{line}: `{name}` rejects this command line: {message}\n"
                            f"  {command.strip()}")


CHECKS = {
    "yaml": check_yaml,
    "yml": check_yaml,
    "json": check_json,
    "python": check_python,
    "py": check_python,
    "bash": check_shell,
    "sh": check_shell,
    "shell": check_shell,
    "console": check_shell,
}


# ------------------------------------------------------------------ the checker itself


def _block(language: str, text: str, skip_files: bool = False) -> Block:
    return Block("doc.md", 10, language, text, skip_files)


def test_untagged_blocks_are_found_with_their_line(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n\n```\nplain\n```\n\n  ````yaml\n  a: 1\n  ````\n", encoding="utf-8")
    found = blocks_of(doc, root=tmp_path)
    assert [(b.line, b.language, b.text) for b in found] == [(3, "", "plain\n"), (7, "yaml", "a: 1\n")]


def test_shell_commands_are_found_after_prompts_assignments_and_paths():
    text = ("$ AWS_PROFILE=x .venv/bin/run-manifest m.yaml --config c.json \\\n"
            "    --protocol > out.jsonl 2>&1   # a comment\n"
            "make demo && validate-manifest a.yaml | tee log\n"
            "python -m framework.cli.validate --strict a.yaml\n")
    calls = [call for _, line in command_lines(_block("bash", text)) for call in invocations(line)]
    assert calls == [("run-manifest", ["m.yaml", "--config", "c.json", "--protocol"]),
                     ("validate-manifest", ["a.yaml"]),
                     ("validate-manifest", ["--strict", "a.yaml"])]
    console = "$ run-manifest m.yaml --spec\nrun-manifest: output, not a command\n"
    assert [line for _, line in command_lines(_block("console", console))] == ["run-manifest m.yaml --spec"]


@pytest.mark.parametrize("language, text", [
    ("bash", "run-manifest manifest.yaml --config c.json --protocol [--state s.json]\n"),
    ("bash", "run-manifest manifest.yaml --protocol --check\n"),
    ("bash", "validate-manifest --format xml m.yaml\n"),
    ("json", '{"a": 1,}\n'),
    ("python", "def broken(:\n"),
    ("yaml", "a: 1\na: 2\n"),
    ("yaml", "type: DatetimeBasedCursor\ncursor_field: updated_at\n"),
    ("yaml", "type: RequestOption\ninject_into: header\nfield_name: \"{{ record.id }}\"\n"),
    ("yaml", "version: 6.7.0\nstreams: []\n"),
    ("yaml", "type: ApiKeyAuthenticator\napi_token: \"{{ config['key'] }}\"\n"),
])
def test_bad_blocks_fail(language, text, tmp_path):
    with pytest.raises(pytest.fail.Exception):
        CHECKS[language](_block(language, text), tmp_path)


SCHEMA_FILE_MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: JsonFileSchemaLoader, file_path: schemas/items.json}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://api.example.com", path: /items}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
check: {type: CheckStream, stream_names: [items]}
"""


def test_missing_files_fail_unless_the_block_is_marked(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="skip-files"):
        check_yaml(_block("yaml", SCHEMA_FILE_MANIFEST), tmp_path)
    check_yaml(_block("yaml", SCHEMA_FILE_MANIFEST, skip_files=True), tmp_path)


def test_good_blocks_pass(tmp_path):
    check_yaml(_block("yaml", "type: RequestOption\ninject_into: header\nfield_name: X-Page\n"), tmp_path)
    check_yaml(_block("yaml", "type: DefaultPaginator\npagination_strategy: {type: PageIncrement}\n"), tmp_path)
    check_json(_block("json", '"cursor": {"updated_at": "2024-01-01"}\n'), tmp_path)
    check_shell(_block("console", "$ run-manifest m.yaml --config c.json --protocol --streams a,b\n"), tmp_path)
