"""The Iceberg catalog settings: checked, each bad one named with its fix, and every secret masked."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from framework.errors import ConfigError
from framework.tables.iceberg import open_iceberg_table
from framework.tables.iceberg_catalog import IcebergCatalogSettings, file_io_properties, masker_for

SECRET = "s3cr3t-client-secret"


def test_the_default_is_the_sqlite_catalog_and_it_needs_its_file():
    assert IcebergCatalogSettings.of({"path": "/out/_airbyte_state/iceberg_catalog.db"}).type == "sqlite"
    with pytest.raises(ConfigError, match=r"`format.catalog.path` is missing: the SQLite catalog needs the file"):
        IcebergCatalogSettings.of(None)


def test_an_unknown_catalog_type_names_the_setting_and_the_choices():
    with pytest.raises(ConfigError, match=r"`format.catalog.type` is 'glue': Iceberg catalogs are sqlite or rest "
                                          r"\(Glue, Nessie, Polaris and Unity are REST catalogs"):
        IcebergCatalogSettings.of({"type": "glue"})


def test_a_rest_catalog_needs_an_http_uri():
    with pytest.raises(ConfigError, match=r"`format.catalog.uri` is 'polaris:8181': a REST catalog needs"):
        IcebergCatalogSettings.of({"type": "rest", "uri": "polaris:8181"})
    settings = IcebergCatalogSettings.of({"type": "rest", "uri": "https://polaris.example.com/api/catalog",
                                          "warehouse": "lake", "credential": f"client:{SECRET}"})
    assert SECRET not in repr(settings) and settings.describe() == "the REST catalog https://polaris.example.com/api/catalog"


def test_deltalakes_storage_options_become_pyicebergs_fileio_properties():
    props = file_io_properties({"AWS_ACCESS_KEY_ID": "key", "aws_secret_access_key": "secret", "AWS_REGION": "eu-west-1",
                                "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true",
                                "s3.connect-timeout": "5"})
    assert props == {"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO", "s3.access-key-id": "key",
                     "s3.secret-access-key": "secret", "s3.region": "eu-west-1", "s3.endpoint": "http://127.0.0.1:9000",
                     "s3.path-style-access": "true", "s3.connect-timeout": "5"}
    assert "s3.path-style-access" not in file_io_properties({"AWS_REGION": "eu-west-1"})


def test_the_masker_hides_the_catalogs_credentials_and_the_stores_keys():
    settings = IcebergCatalogSettings.of({"type": "rest", "uri": "http://x", "credential": f"client:{SECRET}",
                                          "token": "bearer-token-value"})
    mask = masker_for(settings, {"AWS_SECRET_ACCESS_KEY": "aws-secret-key"})
    text = mask(f"client:{SECRET} {SECRET} bearer-token-value aws-secret-key")
    assert SECRET not in text and "bearer-token-value" not in text and "aws-secret-key" not in text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_rest_catalog_is_a_clear_error_naming_the_uri(tmp_path):
    uri = f"http://127.0.0.1:{_free_port()}"
    table = open_iceberg_table(str(tmp_path / "users"), "demo", "users", {"type": "rest", "uri": uri,
                               "token": "bearer-token-value"}, {})
    with pytest.raises(ConfigError) as raised:
        table.exists()
    message = str(raised.value)
    assert message.startswith(f"destination setting `format.catalog.uri`: cannot open the REST catalog {uri} (")
    assert "check that it is reachable and its credentials are right" in message
    assert "bearer-token-value" not in message


class _RefusingCatalog(BaseHTTPRequestHandler):
    """A REST catalog that refuses the client and quotes its credentials back, as a careless server may."""

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        self._answer(401, {"error": "invalid_client", "error_description": f"unknown client: {body}"})

    def do_GET(self):  # noqa: N802
        self._answer(401, {"error": {"message": f"bad token {self.headers.get('Authorization')}",
                                     "type": "NotAuthorizedException", "code": 401}})

    def _answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("secret", [{"credential": f"client:{SECRET}"}, {"token": SECRET}])
def test_credentials_a_refusing_catalog_quotes_back_are_masked(tmp_path, secret):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingCatalog)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"http://127.0.0.1:{server.server_address[1]}"
        table = open_iceberg_table(str(tmp_path / "users"), "demo", "users", {"type": "rest", "uri": uri, **secret}, {})
        with pytest.raises(ConfigError) as raised:
            table.last_state("demo/users")
    finally:
        server.shutdown()
    message = str(raised.value)
    assert "cannot open the REST catalog" in message and "****" in message, message
    assert SECRET not in message


def test_a_settings_model_with_secret_strings_gives_its_secrets():
    from pydantic import BaseModel, SecretStr

    class Rest(BaseModel):
        type: str = "rest"
        uri: str = "https://catalog.example.com"
        warehouse: str | None = None
        credential: SecretStr | None = None
        token: SecretStr | None = None

    settings = IcebergCatalogSettings.of(Rest(credential=SecretStr(f"client:{SECRET}")))
    assert settings.credential == f"client:{SECRET}" and settings.token == "" and settings.warehouse == ""
    assert SECRET in settings.secrets()


def test_without_pyiceberg_the_error_says_what_to_install(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyiceberg" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs pyiceberg, which is not installed: pip install 'manifest-framework\[tables\]'"):
        open_iceberg_table(str(tmp_path / "users"), "demo", "users", {"path": str(tmp_path / "c.db")}, {})
