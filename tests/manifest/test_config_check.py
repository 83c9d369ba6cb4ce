import json

from framework.manifest.config_check import check_config, secret_values
from framework.masking import Masker

SPEC = {
    "type": "object",
    "required": ["api_key", "start_date"],
    "properties": {
        "api_key": {"type": "string", "airbyte_secret": True},
        "start_date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "credentials": {
            "type": "object",
            "properties": {"password": {"type": "integer", "airbyte_secret": True}},
        },
    },
}


def write(tmp_path, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2))
    return str(path)


def test_valid_config_has_no_problems(tmp_path):
    assert check_config(SPEC, write(tmp_path, {"api_key": "k", "start_date": "2024-01-01"})) == []


def test_missing_required_and_wrong_pattern(tmp_path):
    problems = check_config(SPEC, write(tmp_path, {"start_date": "yesterday"}))
    assert {p.code for p in problems} == {"config-required", "config-pattern"}
    pattern = next(p for p in problems if p.code == "config-pattern")
    assert pattern.path == "start_date" and pattern.line == 2


def test_secret_values_never_appear(tmp_path):
    config = {"api_key": 12345678, "start_date": "2024-01-01", "credentials": {"password": "hunter2-secret"}}
    problems = check_config(SPEC, write(tmp_path, config))
    assert problems
    text = " ".join(p.message for p in problems)
    assert "hunter2-secret" not in text and "12345678" not in text
    assert "****" in text


def test_mask_and_secret_values():
    found = secret_values(SPEC, {"api_key": "abc", "credentials": {"password": 5}, "start_date": "2024-01-01"})
    assert {"abc", "5"} <= found and not any("2024" in value for value in found)
    assert Masker.of({"abc", "abcd"})("key abc and abcd") == "key **** and ****"
