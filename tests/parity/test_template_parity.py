"""Parity of every macro, filter and global with airbyte-cdk's interpolation.

Each case is a template and its context. airbyte-cdk evaluates all of them in
one subprocess (``JinjaInterpolation().eval``, whose text it reads back as a
Python literal), and ours evaluates them with ``TemplateEngine.evaluate(...,
"any")``, which reads text the same way. A case is either:

* ``SAME``: both give the same value (same type, same ``repr``), or both fail;
* ``CDK_REFUSES``: airbyte-cdk fails, or hands back the template text unchanged
  (it does that when a macro raises ``TypeError``); we may read the input (the
  extensions tests/parity/README.md lists). The test checks that the CDK still
  refuses it, so an extension never hides a difference.
* ``DIFFERS``: a difference tests/parity/README.md explains (both give a value,
  not the same one); the test checks it is still there.

Macros that read the clock are compared through values that do not change
within a run (a year, a length, a comparison). ``test_every_macro_and_filter_has_a_case``
fails when a macro, filter or global has no case.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from framework.interpolation import FILTERS, GLOBALS, TemplateEngine

CDK_PYTHON = os.environ.get("AIRBYTE_CDK_PYTHON", "")
SAME, CDK_REFUSES, DIFFERS = "same", "cdk-refuses", "differs"

CASES: list[tuple[str, dict[str, Any], str]] = [
    # macros
    ("{{ now_utc().year > 2000 }}", {}, SAME),
    ("{{ now_utc().tzinfo is not none }}", {}, SAME),
    ("{{ today_utc().year > 2000 }}", {}, SAME),
    ("{{ today_utc() | string | length }}", {}, CDK_REFUSES),
    ("{{ today_utc() | length }}", {}, SAME),
    ("{{ today_with_timezone('Pacific/Tarawa').year > 2000 }}", {}, SAME),
    ("{{ today_with_timezone('Mars/Base') }}", {}, SAME),
    ("{{ timestamp(1646006400) }}", {}, SAME),
    ("{{ timestamp(1658505815.223235) }}", {}, SAME),
    ("{{ timestamp(-12.9) }}", {}, SAME),
    ("{{ timestamp('2022-02-28') }}", {}, SAME),
    ("{{ timestamp('2022-02-28T00:00:00Z') }}", {}, SAME),
    ("{{ timestamp('2022-02-28 00:00:00Z') }}", {}, SAME),
    ("{{ timestamp('2022-02-28T00:00:00-08:00') }}", {}, SAME),
    ("{{ timestamp('2022-02-28T00:00:00.250Z') }}", {}, SAME),
    ("{{ timestamp(config.start) }}", {"config": {"start": "2024-01-02T03:04:05+02:00"}}, SAME),
    ("{{ timestamp('1646006400') }}", {}, CDK_REFUSES),
    ("{{ timestamp('Feb 28 2022') }}", {}, CDK_REFUSES),
    ("{{ timestamp(now_utc()) > 0 }}", {}, CDK_REFUSES),
    ("{{ max(2, 3) }}", {}, SAME),
    ("{{ max([2, 3]) }}", {}, SAME),
    ("{{ max('a', 'b') }}", {}, SAME),
    ("{{ max([]) }}", {}, SAME),
    ("{{ min(2, 3) }}", {}, SAME),
    ("{{ min([4, 1, 9]) }}", {}, SAME),
    ("{{ day_delta(1, '%Y') | length }}", {}, SAME),
    ("{{ day_delta(-1) | length }}", {}, SAME),
    ("{{ day_delta(25, format='%Y-%m-%d') > '2000' }}", {}, SAME),
    ("{{ duration('P1D') }}", {}, SAME),
    ("{{ duration('P6DT23H') }}", {}, SAME),
    ("{{ duration('PT0.5S') }}", {}, SAME),
    ("{{ duration('P1M') }}", {}, SAME),
    ("{{ duration('P1Y2M') }}", {}, SAME),
    ("{{ duration('one day') }}", {}, SAME),
    ("{{ (now_utc() - duration('P1D')) < now_utc() }}", {}, SAME),
    ("{{ format_datetime('2022-01-01T13:45:30Z', '%Y/%m/%d %H') }}", {}, SAME),
    ("{{ format_datetime('2022-01-01T13:45:30+02:00', '%Y-%m-%dT%H:%M:%S%z') }}", {}, SAME),
    ("{{ format_datetime(config.start_date, '%Y-%m-%dT%H:%M:%S.%fZ') }}",
     {"config": {"start_date": "2021-05-06T07:08:09.123Z"}}, SAME),
    ("{{ format_datetime(1646006400, '%Y-%m-%d') }}", {}, SAME),
    ("{{ format_datetime(1646006400123, '%Y-%m-%d %H:%M', '%ms') }}", {}, SAME),
    ("{{ format_datetime('01/02/2022', '%Y-%m-%d', '%m/%d/%Y') }}", {}, SAME),
    ("{{ format_datetime('Sat, 01 Jan 2022 10:00:00 +0100', '%Y-%m-%dT%H:%M', '%a, %d %b %Y %H:%M:%S %z') }}",
     {}, SAME),
    ("{{ format_datetime('2022-01-01', '%s') }}", {}, SAME),
    ("{{ format_datetime('2022-01-01', '%ms') }}", {}, SAME),
    ("{{ format_datetime('2022-01-01T00:00:00.123456Z', '%Y-%m-%dT%H:%M:%S.%_msZ') }}", {}, SAME),
    ("{{ format_datetime(str_to_datetime('2022-01-01'), '%Y %j') }}", {}, SAME),
    ("{{ format_datetime('not a date', '%Y') }}", {}, SAME),
    ("{{ format_datetime('2022-13-01', '%Y', '%Y-%m-%d') }}", {}, SAME),
    ("{{ format_datetime(1646006400.5, '%Y-%m-%d') }}", {}, CDK_REFUSES),
    ("{{ format_datetime('1646006400', '%Y-%m-%d') }}", {}, CDK_REFUSES),
    ("{{ format_datetime('1646006400123', '%Y-%m-%d', '%ms') }}", {}, CDK_REFUSES),
    ("{{ format_datetime(today_utc(), '%Y') | length }}", {}, CDK_REFUSES),
    ("{{ str_to_datetime('2022-01-14') }}", {}, SAME),
    ("{{ str_to_datetime('20220114') }}", {}, SAME),
    ("{{ str_to_datetime('2022-01-01 13:45:30') }}", {}, SAME),
    ("{{ str_to_datetime('2022-01-01T13:45:30+05:30') }}", {}, SAME),
    ("{{ str_to_datetime('2022-01-01T13:45:30.123456Z') }}", {}, SAME),
    ("{{ str_to_datetime('2022-W01-1') }}", {}, SAME),
    ("{{ str_to_datetime('2022-01-01T24:00:00') }}", {}, SAME),
    ("{{ str_to_datetime('2022-01-14').isoformat() }}", {}, SAME),
    ("{{ str_to_datetime('Jan 1 2022') }}", {}, CDK_REFUSES),
    ("{{ sanitize_url('https://example.com/path?query=value&a=b c') }}", {}, SAME),
    ("{{ sanitize_url(config.u) }}", {"config": {"u": "a/b?c=d é~ #%"}}, SAME),
    ("{{ sanitize_url('') }}", {}, SAME),
    ("{{ sanitize_url(5) }}", {}, CDK_REFUSES),
    ("{{ camel_case_to_snake_case('CamelCase') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('camelCaseValue') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('HTTPServerError') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('already_snake') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('ÉtéCase') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('A') }}", {}, SAME),
    ("{{ camel_case_to_snake_case('') }}", {}, SAME),
    ("{{ generate_uuid() | length }}", {}, SAME),
    ("{{ generate_uuid()[14] }}", {}, SAME),
    ("{{ generate_uuid() != generate_uuid() }}", {}, SAME),
    # Jinja globals airbyte-cdk keeps
    ("{{ dict(a=1, b='x') }}", {}, SAME),
    ("{% set ns = namespace(total=0) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% endfor %}"
     "{{ ns.total }}", {}, SAME),
    ("{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}", {}, SAME),
    ("{% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}, SAME),
    ("{{ lipsum(2, false, 5, 6) | length > 10 }}", {}, SAME),
    ("{{ range(3) | list }}", {}, SAME),
    # filters
    ("{{ 'Test client_secret' | hash() }}", {}, SAME),
    ("{{ 'Test client_secret' | hash('md5') }}", {}, SAME),
    ("{{ 'Test client_secret' | hash('md5', salt='salt') }}", {}, SAME),
    ("{{ 'x' | hash('sha256', '') }}", {}, SAME),
    ("{{ 'x' | hash('sha1') }}", {}, SAME),
    ("{{ 'x' | hash('sha512') }}", {}, SAME),
    ("{{ 'x' | hash('sha3_256') }}", {}, SAME),
    ("{{ 'x' | hash('blake2b') }}", {}, SAME),
    ("{{ 5 | hash }}", {}, SAME),
    ("{{ {'a': 1} | hash }}", {}, SAME),
    ("{{ 'x' | hash('nope') }}", {}, SAME),
    ("{{ 'x' | hash('MD5') }}", {}, CDK_REFUSES),
    ("{{ 'Test client_secret' | base64encode }}", {}, SAME),
    ("{{ 'é€' | base64encode }}", {}, SAME),
    ("{{ '' | base64encode }}", {}, SAME),
    ("{{ 5 | base64encode }}", {}, CDK_REFUSES),
    ("{{ 'ZmFrZSByZWZyZXNoX3Rva2VuIHZhbHVl' | base64decode }}", {}, SAME),
    ("{{ 'w6nigqw=' | base64decode }}", {}, SAME),
    ("{{ 'abc' | base64decode }}", {}, SAME),
    ("{{ '/w==' | base64decode }}", {}, SAME),
    ("{{ 'user:pass' | base64binascii_decode }}", {}, SAME),
    ("{{ 'é' | base64binascii_decode }}", {}, SAME),
    ("{{ 1 | string }}", {}, SAME),
    ("{{ 'text' | string }}", {}, SAME),
    ("{{ [1, 'a'] | string }}", {}, SAME),
    ("{{ {'a': 1, 'b': [true, none]} | string }}", {}, SAME),
    ("{{ record | string }}", {"record": {"id": 1, "name": "é"}}, SAME),
    ("{{ none | string }}", {}, SAME),
    ("{{ record | string }}", {"record": {"quote": 'say "hi"', "path": "a\\b"}}, DIFFERS),
    ("id={{ [1, 2] | string }}", {}, DIFFERS),
    ("{{ 'goodbye, cruel world' | regex_search('goodbye,\\\\s(.*)$') }}", {}, SAME),
    ("{{ 'page=12&x' | regex_search('page=(\\\\d+)') }}", {}, SAME),
    ("{{ 'abc' | regex_search('b') }}", {}, SAME),
    ("{{ 'abc' | regex_search('z(.)') }}", {}, SAME),
    ("{{ 'ab' | regex_search('(x)?b') }}", {}, SAME),
    ("{{ 'abc' | regex_search('(') }}", {}, SAME),
    ("{{ headers.link | regex_search('<([^>]+)>; rel=\"next\"') }}",
     {"headers": {"link": '<https://x.example.com/p?page=2>; rel="next"'}}, SAME),
    ("{{ 'hello world' | regex_replace('world', 'universe') }}", {}, SAME),
    ("{{ 'hello-world_foo' | regex_replace('[_-]', ' ') }}", {}, SAME),
    ("{{ 'a1b22' | regex_replace('(\\\\d+)', '<\\\\1>') }}", {}, SAME),
    ("{{ 'John Smith' | regex_replace('(?P<first>\\\\w+) (?P<last>\\\\w+)', '\\\\g<last>, \\\\g<first>') }}",
     {}, SAME),
    ("{{ 'abc' | regex_replace('', '-') }}", {}, SAME),
    ("{{ 'abc' | regex_replace('x', 'y') }}", {}, SAME),
    ("{{ 'abc' | regex_replace('(', 'y') }}", {}, SAME),
    ("{{ 'abc' | regex_replace('b', '\\\\9') }}", {}, SAME),
    ("{{ 'message' | hmac('key') }}", {}, SAME),
    ("{{ 'message' | hmac('key', 'sha256') }}", {}, SAME),
    ("{{ 42 | hmac(7) }}", {}, SAME),
    ("{{ 'message' | hmac('key', 'md5') }}", {}, SAME),
    # Jinja's own tests and filters, unchanged on both sides
    ("{{ 3 is integer }}", {}, SAME),
    ("{{ 'a' is string and 2 is number and none is none }}", {}, SAME),
    ("{{ [1] | tojson }}", {}, SAME),
    ("{{ 'a,b' | replace(',', ';') | upper }}", {}, SAME),
]

_CDK_SCRIPT = r"""
import json, sys
from airbyte_cdk.sources.declarative.interpolation.jinja import JinjaInterpolation

interpolation = JinjaInterpolation()
answers = []
for template, context in json.load(sys.stdin):
    context = dict(context)
    config = context.pop("config", {})
    try:
        value = interpolation.eval(template, config, **context)
    except Exception as exc:
        answers.append(["error", type(exc).__name__])
        continue
    if value == template:
        answers.append(["source", None])
    else:
        answers.append(["ok", [type(value).__name__, repr(value)]])
json.dump(answers, sys.stdout)
"""


def _cdk_available() -> bool:
    if not CDK_PYTHON or not os.path.exists(CDK_PYTHON):
        return False
    probe = subprocess.run([CDK_PYTHON, "-c", "import airbyte_cdk"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def cdk_answers() -> list[list[Any]]:
    if not _cdk_available():
        pytest.skip("template parity needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk "
                    "(for example /work/main/.venv-airbyte/bin/python)")
    cases = [[template, context] for template, context, _ in CASES]
    done = subprocess.run([CDK_PYTHON, "-c", _CDK_SCRIPT], input=json.dumps(cases), capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    answers: list[list[Any]] = json.loads(done.stdout)
    assert len(answers) == len(CASES)
    return answers


def _ours(engine: TemplateEngine, template: str, context: dict[str, Any]) -> list[Any]:
    try:
        value = engine.evaluate(template, context, "any")
    except Exception as exc:  # noqa: BLE001 - any failure is compared as a failure
        return ["error", type(exc).__name__]
    return ["ok", [type(value).__name__, repr(value)]]


pytestmark = pytest.mark.parity


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case[0][:60] for case in CASES])
def test_template_gives_airbyte_cdk_result(index: int, cdk_answers: list[list[Any]]) -> None:
    template, context, expected = CASES[index]
    theirs = cdk_answers[index]
    ours = _ours(TemplateEngine(), template, context)
    if expected == CDK_REFUSES:
        assert theirs[0] in ("error", "source"), f"airbyte-cdk now reads {template!r}: {theirs}"
        return
    if expected == DIFFERS:
        assert theirs[0] == ours[0] == "ok" and theirs != ours, f"{template!r}: {theirs} / {ours}"
        return
    if theirs[0] == "ok":
        assert ours == theirs, template
    else:  # both must fail: airbyte-cdk raised or handed the template back
        assert ours[0] == "error", f"{template!r}: airbyte-cdk fails ({theirs}), ours gives {ours}"


def test_every_macro_and_filter_has_a_case() -> None:
    used = " ".join(template for template, _, _ in CASES)
    missing = [name for name in GLOBALS + FILTERS if name not in used]
    assert not missing, f"no parity case for: {missing}"
