"""framework.cli.lean: the collector and pydantic's plugin scan during a command, and what is left at its end."""

from __future__ import annotations

import subprocess
import sys

from conftest import EXAMPLE, REPO


def _in_a_fresh_process(code: str) -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_caller_that_goes_on_gets_the_collector_and_the_environment_back():
    lines = _in_a_fresh_process(
        "import gc, os\nfrom framework.cli.lean import lean_start\n"
        "with lean_start(program=False) as was:\n"
        "    print(was, gc.isenabled(), os.environ.get('PYDANTIC_DISABLE_PLUGINS'))\n"
        "print(gc.isenabled(), os.environ.get('PYDANTIC_DISABLE_PLUGINS'), gc.get_freeze_count() == 0)\n"
        "os.environ['PYDANTIC_DISABLE_PLUGINS'] = 'mine'\n"
        "with lean_start(program=False):\n"
        "    print(os.environ['PYDANTIC_DISABLE_PLUGINS'])\n"
        "print(os.environ['PYDANTIC_DISABLE_PLUGINS'])\n")
    assert lines == ["True False __all__", "True None True", "mine", "mine"]


def test_the_program_ends_with_the_collector_off_and_its_objects_frozen():
    """A last collection at the interpreter's end would walk every object of the run once more (2 % of a cold
    check, 0.1 to 0.3 s after a protocol read, 0.3 s after a 200,000-record sync): both programs, in every
    mode, leave it nothing to walk."""
    lines = _in_a_fresh_process(
        "import gc, sys\n"
        "from framework.cli import run, validate\n"
        f"sys.argv = ['run-manifest', {str(EXAMPLE)!r}, '--spec']\n"
        "rc = run.main(None, out=open('/dev/null', 'wb'))\n"
        "print(rc, gc.isenabled(), gc.get_freeze_count() > 1000)\n"
        f"sys.argv = ['validate-manifest', '--quiet', {str(EXAMPLE)!r}]\n"
        "gc.unfreeze(); gc.enable()\n"
        "print(validate.main(), gc.isenabled(), gc.get_freeze_count() > 1000)\n"
        "gc.unfreeze(); gc.enable()\n"
        f"print(run.main([{str(EXAMPLE)!r}, '--spec'], out=open('/dev/null', 'wb')), gc.isenabled())\n")
    assert lines == ["0 False True", "0 False True", "0 True"]
