"""Normalization into PostgreSQL over Spark Connect: the server's JDBC driver runs the statements and writes.

The landed files come from a classic sync in this process; ``normalize-output --remote`` runs in a
subprocess (see conftest.py) and its tables are compared, through ``psql``, with those a classic
session makes from a copy of the same files.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from spark.test_pipeline import MANIFEST, config_for, serve

from connect.test_connect import _env, command
from framework.cli.normalize import main as normalize_main
from framework.cli.run import main as run_main

pytestmark = [pytest.mark.spark, pytest.mark.postgres]


def destination(tmp_path: Path, name: str, output: Path, postgres, schema: str, password: str | None = None) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"output": str(output), "normalization": {
        "enabled": True, "target": "postgres", "jdbc_url": postgres.jdbc_url, "jdbc_user": postgres.user,
        "jdbc_password": password or postgres.password, "jdbc_schema": schema}}))
    return str(path)


def schema_rows(postgres, schema: str) -> dict[str, list]:
    names = [row[0] for row in postgres.sql(
        f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{schema}' ORDER BY 1")]
    found = {}
    for table in names:
        columns = [row[0] for row in postgres.sql(
            f"SELECT column_name FROM information_schema.columns WHERE table_schema = '{schema}' "
            f"AND table_name = '{table}' AND column_name <> '_airbyte_normalized_at' ORDER BY ordinal_position")]
        listed = ", ".join(f'"{c}"::text' for c in columns)
        found[table] = sorted(postgres.sql(f'SELECT {listed} FROM "{schema}"."{table}"'), key=repr)
    return found


def test_normalize_output_over_connect_fills_postgres_as_a_classic_session_does(connect_server, spark, postgres,
                                                                                  fake_api, tmp_path):
    shop = serve(fake_api)
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))
    landed = tmp_path / "landed"
    assert run_main([str(manifest), "--config", str(config), "--output", str(landed), "--streams", "items,orders",
                     "--quiet"], out=io.BytesIO()) == 0
    classic_out, remote_out = tmp_path / "classic", tmp_path / "remote"
    shutil.copytree(landed, classic_out)
    shutil.copytree(landed, remote_out)
    classic, remote = f"c_{uuid.uuid4().hex[:10]}", f"r_{uuid.uuid4().hex[:10]}"

    assert normalize_main(["--destination", destination(tmp_path, "classic", classic_out, postgres, classic),
                           "--quiet"]) == 0
    done = subprocess.run(command("framework.cli.normalize", "--remote", connect_server.url, "--destination",
                                  destination(tmp_path, "remote", remote_out, postgres, remote)),
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=240)

    assert done.returncode == 0, done.stderr[-3000:]
    over_connect = schema_rows(postgres, remote)
    assert {"items", "_airbyte_raw_items", "orders", "_airbyte_raw_orders"} <= set(over_connect)
    assert len(over_connect["items"]) == 8
    assert over_connect == schema_rows(postgres, classic)
    assert not [t for t in over_connect if t.startswith("_airbyte_tmp_")]  # every staging table was dropped

    # a login that fails says so, without the password, and leaves the tables as they were
    wrong = "not-the-password-" + uuid.uuid4().hex[:6]
    done = subprocess.run(command("framework.cli.normalize", "--remote", connect_server.url, "--destination",
                                  destination(tmp_path, "wrong", remote_out, postgres, remote, wrong),
                                  "--full-refresh"),
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=240)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "password authentication failed" in done.stderr and wrong not in done.stderr
    assert schema_rows(postgres, remote) == over_connect
