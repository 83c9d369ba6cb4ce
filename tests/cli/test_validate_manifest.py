"""validate-manifest as a user runs it: the installed console script, in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import EXAMPLE, REPO

SCRIPT = shutil.which("validate-manifest", path=os.path.dirname(sys.executable)) or "validate-manifest"


def run(*args, cwd=None):
    return subprocess.run([SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_valid_manifest_exits_zero():
    result = run(str(EXAMPLE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
    assert "1 file checked: 0 errors, 0 warnings" in result.stderr


def test_errors_exit_one_with_file_line_col(write_manifest):
    path = write_manifest("version: 1\nstreams:\n  - name: a\n    retriever: {requester: {url_base: x}, record_selector: {extractor: {field_path: []}}}\n    primary_ky: id\ncheck: {stream_names: [a]}\n")
    result = run(path)
    assert result.returncode == 1
    assert f"{path}:5:5: error: unknown field `primary_ky` in DeclarativeStream" in result.stdout
    assert "did you mean `primary_key`?" in result.stdout


def test_json_format_for_tools(write_manifest):
    path = write_manifest("version: 1\nstreams: []\ncheck: {stream_names: []}\nextra: 1\n")
    result = run("--format", "json", "--strict", path)
    assert result.returncode == 1
    problems = json.loads(result.stdout)
    assert problems and {"file", "line", "column", "path", "code", "severity", "message"} <= set(problems[0])
    assert any(p["code"] == "unknown-field" and p["path"] == "extra" for p in problems)


def test_warnings_alone_exit_zero(tmp_path):
    shutil.copytree(EXAMPLE.parent, tmp_path / "shop")
    path = tmp_path / "shop" / "manifest.yaml"
    path.write_text(path.read_text().replace("check:\n", "check:\n  description: first stream\n", 1))
    result = run(str(path))
    assert result.returncode == 0, result.stdout
    assert f"{path}:" in result.stdout
    assert "warning: unknown field `description` in CheckStream is ignored" in result.stdout
    assert "0 errors, 1 warning" in result.stderr
    assert run("--strict", str(path)).returncode == 1


def test_usage_errors_exit_two(tmp_path):
    assert run().returncode == 2
    assert run(str(tmp_path / "missing.yaml")).returncode == 2
    assert run("--format", "xml", str(EXAMPLE)).returncode == 2


def test_bad_inputs_never_traceback(tmp_path):
    cases = {
        "broken.yaml": b"a: [1, 2\n",
        "tabs.yaml": b"version: 1\nstreams:\n\t- a\n",
        "dup.yaml": b"version: 1\nversion: 2\n",
        "empty.yaml": b"",
        "binary.yaml": bytes(range(256)),
        "ref.yaml": b"version: 1\nstreams: ['#/definitions/nope']\ncheck: {stream_names: [a]}\n",
        "internals.yaml": b"version: 1\nstreams:\n  - name: a\n    retriever: {requester: {url_base: \"{{ config.__class__.__init__.__globals__ }}\"}, record_selector: {extractor: {field_path: []}}}\ncheck: {stream_names: [a]}\n",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        result = run(str(tmp_path / name))
        assert result.returncode == 1, name
        assert "Traceback" not in result.stdout + result.stderr, name
        first = result.stdout.splitlines()[0]
        assert first.startswith(str(tmp_path / name) + ":"), (name, first)
        assert ": error: " in first, (name, first)


def test_big_file_gets_a_clear_error(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as handle:
        handle.write(b"a: " + b"x" * (50 * 1024 * 1024) + b"\n")
    result = run(str(path))
    assert result.returncode == 1
    assert "MiB" in result.stdout and "Traceback" not in result.stderr


def test_config_is_checked_with_secrets_masked(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": "http://x", "api_key": ["sekrit-value"], "start_date": "01/01/2024"}))
    result = run("--config", str(config), str(EXAMPLE))
    assert result.returncode == 1
    assert "sekrit-value" not in result.stdout
    assert "start_date" in result.stdout
    ok = run("--config", str(EXAMPLE.parent / "config.json"), str(EXAMPLE))
    assert ok.returncode == 0, ok.stdout


def test_several_files_at_once(write_manifest):
    bad = write_manifest("version: 1\n", name="bad.yaml")
    result = run(str(EXAMPLE), bad)
    assert result.returncode == 1
    assert "2 files checked" in result.stderr


def test_never_imports_pyspark():
    code = (
        "import sys\nfrom framework.cli.validate import main\n"
        f"rc = main(['--quiet', {str(EXAMPLE)!r}])\n"
        "assert 'pyspark' not in sys.modules, 'pyspark imported'\nsys.exit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


# Custom components: checked from their source, never imported or run.

CUSTOM_MANIFEST = """\
version: 6.7.0
streams:
  - name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      requester:
        url_base: https://api.example.com
      record_selector:
        extractor:
          type: CustomRecordExtractor
          class_name: components.ItemsExtractor
          field_path: [data]
check:
  stream_names: [items]
"""

COMPONENTS = """\
import json
from dataclasses import dataclass

open(__file__ + ".ran", "w").close()  # would show that validate-manifest ran the module


@dataclass
class ItemsExtractor:
    field_path: list

    def extract_records(self, response):
        return json.loads(response.text)["data"]
"""


def custom(tmp_path, components=COMPONENTS, manifest=CUSTOM_MANIFEST):
    (tmp_path / "manifest.yaml").write_text(manifest)
    if components is not None:
        (tmp_path / "components.py").write_text(components)
    return str(tmp_path / "manifest.yaml")


def test_custom_component_that_fits_its_source_validates_without_running_it(tmp_path):
    result = run(custom(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "components.py.ran").exists()


def test_missing_components_file_is_an_error_at_the_class_name(tmp_path):
    path = custom(tmp_path, components=None)
    result = run(path)
    assert result.returncode == 1
    wanted = tmp_path / "components.py"
    assert f"{path}:11:23: error: `components.ItemsExtractor` names a class in `components.py` beside the manifest, " \
           f"but {wanted} does not exist" in result.stdout
    assert f"fix: create {wanted} defining `class ItemsExtractor`" in result.stdout


def test_missing_class_suggests_a_close_name(tmp_path):
    result = run(custom(tmp_path, components=COMPONENTS.replace("class ItemsExtractor", "class ItemExtractor")))
    assert result.returncode == 1
    assert f"11:23: error: class `ItemsExtractor` is not defined in {tmp_path / 'components.py'}" in result.stdout
    assert "did you mean `ItemExtractor`? (`components.ItemExtractor`)" in result.stdout


def test_missing_method_is_an_error_naming_the_kind(tmp_path):
    result = run(custom(tmp_path, components=COMPONENTS.replace("def extract_records", "def extract")))
    assert result.returncode == 1
    assert "11:23: error: class `ItemsExtractor`" in result.stdout
    assert "has no `extract_records`, which a record extractor needs" in result.stdout


def test_unknown_key_is_a_warning_with_did_you_mean(tmp_path):
    result = run(custom(tmp_path, manifest=CUSTOM_MANIFEST.replace("field_path: [data]", "field_pth: [data]")))
    assert result.returncode == 0, result.stdout
    assert "12:11: warning: `field_pth` is not a field of class `ItemsExtractor`" in result.stdout
    assert "fix: did you mean `field_path`?" in result.stdout


def test_a_package_that_is_not_installed_is_named(tmp_path):
    result = run(custom(tmp_path, components="import surely_absent_package_z\n" + COMPONENTS))
    assert result.returncode == 1
    assert "11:23: error: `components.ItemsExtractor` needs the package `surely_absent_package_z` " \
           f"({tmp_path / 'components.py'}:1 imports it), which is not installed" in result.stdout


def test_a_class_name_of_the_older_form_without_type_is_checked_too(tmp_path):
    manifest = CUSTOM_MANIFEST.replace("          type: CustomRecordExtractor\n", "")
    result = run(custom(tmp_path, components=COMPONENTS.replace("def extract_records", "def extract"),
                        manifest=manifest))
    assert result.returncode == 1
    assert "10:23: error: class `ItemsExtractor`" in result.stdout and "record extractor" in result.stdout


def _airbyte_cdk_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("airbyte_cdk") is not None


@pytest.mark.skipif(_airbyte_cdk_installed(), reason="airbyte-cdk is installed here: the extra is not missing")
def test_a_component_on_airbyte_cdk_without_the_extra_names_the_extra(tmp_path):
    components = ("from airbyte_cdk.sources.declarative.extractors import DpathExtractor\n\n"
                  "class ItemsExtractor(DpathExtractor):\n    pass\n")
    result = run(custom(tmp_path, components=components))
    assert result.returncode == 1
    assert "11:23: error: `components.ItemsExtractor` needs airbyte-cdk " \
           f"({tmp_path / 'components.py'}:1 imports `airbyte_cdk`), which is not installed" in result.stdout
    assert "    fix: pip install 'manifest-framework[airbyte]'" in result.stdout
    assert "field_path" not in result.stdout  # the airbyte base's fields cannot be seen: keys are not judged


def test_a_yaml_config_is_refused_by_the_rule_run_manifest_follows(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("base_url: http://x\napi_key: k\nstart_date: '2024-01-01'\n")
    result = run("--config", str(config), str(EXAMPLE))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{config}:1:1: not valid JSON" in result.stderr and "must be a JSON object" in result.stderr


def test_the_config_is_read_once_so_a_pipe_works():
    with open(EXAMPLE.parent / "config.json", "rb") as handle:
        result = subprocess.run([SCRIPT, "--config", "/dev/stdin", str(EXAMPLE)], stdin=handle,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_one_file_that_crashes_the_checker_does_not_hide_the_others(write_manifest, monkeypatch, capsys):
    import framework.manifest
    from framework.cli import validate

    real = framework.manifest.check_manifest

    def check(path, strict=False, config=None):
        if path.endswith("crash.yaml"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, strict=strict, config=config)

    monkeypatch.setattr(framework.manifest, "check_manifest", check)
    crash = write_manifest("version: 6.7.0\n", name="crash.yaml")
    bad = write_manifest("version: 1\n", name="bad.yaml")
    assert validate.main([crash, str(EXAMPLE), bad]) == 1
    out, err = capsys.readouterr()
    assert f"{crash}:1:1: error: validate-manifest could not check this file (RecursionError" in out
    assert f"{bad}:" in out and "3 files checked" in err


# Start-up cost: a check imports only what checking needs. jsonschema only when a spec looks wrong
# (framework/manifest/spec_shape.py); the runtime's HTTP, JSON, date and file libraries never.
RUNTIME_ONLY = ("jsonschema", "dateutil", "requests", "urllib3", "orjson", "pyarrow", "pyspark", "py4j", "pandas",
                "multiprocessing", "xmltodict", "jwt", "cryptography", "anyascii", "boto3", "fastavro")


def test_a_check_imports_nothing_the_runtime_alone_needs():
    files = [str(EXAMPLE), *sorted(str(p) for p in (REPO / "manifests").glob("*.yaml"))]
    code = (
        "import sys\nfrom framework.cli.validate import main\n"
        f"rc = main(['--quiet', *{files!r}])\n"
        f"print(rc, sorted({{m.split('.')[0] for m in sys.modules}} & set({RUNTIME_ONLY!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


def test_a_spec_that_looks_wrong_is_checked_by_jsonschema(write_manifest):
    text = EXAMPLE.read_text()
    spec = "connection_specification:\n    $schema: http://json-schema.org/draft-07/schema#\n    type: object\n"
    assert spec in text
    bad = write_manifest(text.replace(spec, spec.replace("type: object", "type: objekt")))
    code = (
        "import sys\nfrom framework.cli.validate import main\n"
        f"rc = main(['--quiet', {bad!r}])\n"
        "print(rc, 'jsonschema' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert result.stdout.strip().splitlines()[-1] == "1 True", result.stdout + result.stderr
    assert "connection_specification is not a valid JSON Schema: 'objekt'" in result.stdout


def test_a_cold_check_collects_no_garbage_and_scans_no_plugins():
    """What keeps a cold check cheap, asserted rather than timed: the garbage collector never runs
    while the checker is imported and checks (it is off before the models' classes are made), pydantic does
    not scan the installed distributions for plugins, and the program leaves the collector off on its way
    out (a last collection would only walk everything once more); a caller passing ``argv`` gets it back on."""
    manifest = str(REPO / "manifests" / "github.yaml")
    code = (
        "import gc, sys\nimport importlib.metadata as metadata\n"
        "scans = []\nreal = metadata.entry_points\n"
        "metadata.entry_points = lambda **kw: scans.append(kw.get('group')) or real(**kw)\n"
        "import traceback\nruns = []\n"
        "from framework.cli.validate import main\n"
        "early = 'framework.models' in sys.modules  # the models are made inside main, the collector off\n"
        "def collecting(phase, info):  # a collection inside validate-manifest's code, before it gives the\n"
        "    stack = traceback.extract_stack()  # collector back (framework.cli.lean) to a caller that goes on\n"
        "    if phase == 'start' and any(f.filename.endswith('validate.py') for f in stack) \\\n"
        "            and not any(f.filename.endswith(('lean.py', 'contextlib.py')) for f in stack):\n"
        "        runs.append(info['generation'])\n"
        "gc.callbacks.append(collecting)\n"
        f"rc = main(['--quiet', {manifest!r}])\n"
        "print(rc, early, runs, scans, gc.isenabled())\n"
        f"sys.argv = ['validate-manifest', '--quiet', {manifest!r}]\n"
        "print(main(), gc.isenabled())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                            check=False)
    assert result.stdout.splitlines() == ["0 False [] [] True", "0 False"], result.stdout + result.stderr
    assert "PYDANTIC_DISABLE_PLUGINS" not in env


def test_a_loop_without_a_bound_is_a_warning_at_its_place(tmp_path):
    shutil.copytree(EXAMPLE.parent, tmp_path / "shop")
    path = tmp_path / "shop" / "manifest.yaml"
    text = path.read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip().startswith("url_base:"))
    indent = text.splitlines()[line - 1].split("url_base:")[0]
    looping = (f"{indent}request_headers:\n{indent}  X-Pad: \"{{% for a in 'x' * config['n'] %}}"
               "{% for b in 'x' * 1000000 %}{% endfor %}{% endfor %}\"\n")
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[:line] + [looping] + lines[line:]))
    result = run(str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{path}:{line + 2}:" in result.stdout
    assert "warning: template in `request_headers`: a loop over a value whose length comes from `config['n']`" \
        in result.stdout
    assert "nested loops of" not in result.stdout  # the inner loop alone is within the budget
