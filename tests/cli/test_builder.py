"""``manifest-builder``: refusals before anything listens (exit 2), and a real start, answer and stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from framework.cli.builder import main

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_folder_a_bad_config_and_a_bad_port_exit_2_with_the_fix(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere" / "manifest.yaml"), "--no-browser"]) == 2
    assert "does not exist; create it first" in capsys.readouterr().err
    assert main([str(tmp_path), "--no-browser"]) == 2
    assert "is a folder" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("[1]")
    assert main([str(tmp_path / "manifest.yaml"), "--config", str(tmp_path / "config.json"), "--no-browser"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err
    assert main([str(tmp_path / "manifest.yaml"), "--port", "70000", "--no-browser"]) == 2
    assert "is not a port" in capsys.readouterr().err


def test_it_prints_its_loopback_url_serves_a_new_manifest_and_stops_on_ctrl_c(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"api_key": "k-123456"}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "framework.cli.builder", str(tmp_path / "new.yaml"),
                                "--config", str(config), "--no-browser"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, process.stderr.read() if process.poll() is not None else "")
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "api/session", timeout=30) as response:
            shown = json.loads(response.read())
        assert shown["manifest_text"] == "" and shown["manifest_path"] == str(tmp_path / "new.yaml")
        assert json.loads(shown["config_text"]) == {"api_key": "k-123456"}  # no spec yet: nothing is known secret
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


def test_the_builder_never_loads_spark():
    code = ("import sys, framework.cli.builder, framework.builder.server, framework.builder.session, "
            "framework.builder.runs; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert out.strip() == "[]"
