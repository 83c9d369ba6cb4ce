"""run-manifest's --max-response-size and --request-deadline: read, refused with exit 2 when they are no size or
no number of seconds, and handed on to every requester of the sync through the environment."""

from __future__ import annotations

import argparse

import pytest

from framework.cli.response_flags import add_response_flags, apply_response_flags
from framework.cli.run import main
from framework.components.http.response_limits import limits_from_environment


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="run-manifest")
    add_response_flags(parser)
    return parser.parse_args(list(argv))


def test_the_flags_reach_the_limits_every_requester_starts_from() -> None:
    environ: dict[str, str] = {}
    apply_response_flags(parse("--max-response-size", "512MiB", "--request-deadline", "90"), environ)
    limits = limits_from_environment(environ)
    assert (limits.max_bytes, limits.deadline) == (512 << 20, 90.0)


def test_without_the_flags_nothing_is_set() -> None:
    environ: dict[str, str] = {}
    apply_response_flags(parse(), environ)
    assert environ == {}


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--max-response-size", "lots", "--max-response-size is 'lots', which is not a size"),
    ("--request-deadline", "0", "--request-deadline is '0'; give a positive number of seconds"),
])
def test_a_bad_value_exits_2_saying_what_to_give(flag: str, value: str, said: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["manifest.yaml", flag, value])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


def test_the_help_shows_the_defaults_in_force() -> None:
    from framework.cli.response_flags import HELP_MAX_RESPONSE_SIZE, HELP_REQUEST_DEADLINE
    from framework.components.http.response_limits import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_DEADLINE

    assert HELP_MAX_RESPONSE_SIZE == f"{DEFAULT_MAX_RESPONSE_BYTES >> 20} MiB"
    assert HELP_REQUEST_DEADLINE == f"{DEFAULT_REQUEST_DEADLINE:g}"
