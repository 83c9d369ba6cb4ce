"""framework.cli.termination: SIGTERM and SIGHUP raised as Ctrl-C is, their exit codes, the handlers put back;
and the commands' answer to them (run-manifest, normalize-output)."""

from __future__ import annotations

import os
import signal

import pytest

from framework.cli import normalize, run
from framework.cli.termination import Terminated, exit_code, interruption, terminating_as_interrupt


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_the_signal_is_raised_as_an_interrupt_with_its_exit_code(signum, code):
    with pytest.raises(KeyboardInterrupt) as raised, terminating_as_interrupt():
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0)  # a bytecode boundary: Python runs the handler here at the latest
    assert isinstance(raised.value, Terminated) and raised.value.signum == signum
    assert exit_code(raised.value) == code
    assert interruption(raised.value) == f"terminated by {signal.Signals(signum).name}"


def test_ctrl_c_keeps_its_code_and_words():
    assert exit_code(KeyboardInterrupt()) == 130 and interruption(KeyboardInterrupt()) == "interrupted"


def test_a_second_signal_during_the_cleanup_is_ignored_and_the_handlers_are_put_back():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    cleaned = False
    with pytest.raises(Terminated), terminating_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # Kubernetes may send it again before SIGKILL
            signal.sigtimedwait([], 0)
            cleaned = True
    assert cleaned
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)) == before


def test_run_manifest_answers_143_with_one_line(monkeypatch, capsys, tmp_path):
    def stopped(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)

    monkeypatch.setattr(run, "_run", stopped)
    code = run.main([str(tmp_path / "manifest.yaml"), "--config", str(tmp_path / "config.json"),
                     "--output", str(tmp_path / "out")])
    assert code == 143
    assert capsys.readouterr().err == ("run-manifest: terminated by SIGTERM; the files and state saved so far are "
                                       "complete (no partial file is visible), and running the same command again "
                                       "continues from the saved state\n")


def test_normalize_output_answers_129_to_sighup(monkeypatch, capsys, tmp_path):
    def stopped(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGHUP)
        signal.sigtimedwait([], 0)

    monkeypatch.setattr(normalize, "run", stopped)
    code = normalize.main(["--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 129, err
    assert err.startswith("normalize-output: terminated by SIGHUP; a stream's tables are published all at once")
