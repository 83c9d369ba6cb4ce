"""manifest-builder in a real browser (headless Chromium), against the example shop API: the issue's steps
(open, a typo shown at its line, fixed, a test read, an inferred schema accepted, saved, a save refused when
the file changed on disk) and building the three-stream example connector from an empty manifest.

Every step leaves a screenshot in the test's temp folder (``screenshots/``); with
``BUILDER_SCREENSHOTS_DIR=docs/images/builder`` they are the pictures of docs/builder.md.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

import pytest
from builder.browser import REPO, Page, browser_missing, builder, start_chrome

from framework.cli.validate import main as validate_manifest

if browser_missing() is None:
    from selenium.webdriver.support.ui import Select

pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing()))

SHOP = REPO / "examples" / "shop"


def _shop_api() -> type:
    spec = importlib.util.spec_from_file_location("shop_api_builder", SHOP / "api.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["shop_api_builder"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.ShopApi


@pytest.fixture(scope="module")
def shop():
    with _shop_api()() as running:
        yield running


@pytest.fixture(scope="module")
def driver():
    chrome = start_chrome()
    yield chrome
    chrome.quit()


def _folder(tmp_path: Path, shop, manifest_text: str | None) -> tuple[Path, Path]:
    """A connector folder: the manifest (``None``: none yet), the orders schema and a config for ``shop``."""
    folder = tmp_path / "connector"
    (folder / "schemas").mkdir(parents=True)
    shutil.copy(SHOP / "schemas" / "orders.json", folder / "schemas" / "orders.json")
    config = json.loads((SHOP / "config.json").read_text())
    config["base_url"] = shop.url.rstrip("/")
    # the API's data lies in the 60 days before now: a start 25 days ago makes one window of 30 days, the
    # test read's first unit, hold the newest changes
    config["start_date"] = (date.today() - timedelta(days=25)).isoformat()
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    manifest = folder / "manifest.yaml"
    if manifest_text is not None:
        manifest.write_text(manifest_text)
    return manifest, folder / "config.json"


def test_edit_test_read_infer_and_save_in_the_browser(driver, shop, tmp_path, capsys):
    manifest, config = _folder(tmp_path, shop, (SHOP / "manifest.yaml").read_text())
    page = Page(driver, tmp_path / "screenshots")
    with builder(manifest, config) as url:
        page.open(url)
        assert page.status() == "valid", page.problems()
        assert page.streams() == ["accounts", "orders", "events"]
        assert "demo-key-not-secret" not in page.find("#config").get_attribute("value")  # the secret is masked
        page.shot("01-open")

        # the key typed over its placeholder is masked once the config editor is left, and kept: the test read
        # below authenticates with it
        page.replace('"********"', '"demo-key-not-secret"', editor="config")
        assert "demo-key-not-secret" in page.find("#config").get_attribute("value")  # not masked while typed
        page.find("#manifest").click()
        page.wait(lambda: '"api_key": "********"' in page.find("#config").get_attribute("value"),
                  "the typed key masked")

        Select(page.find("#stream")).select_by_value("events")

        # a typo: the error appears at its line, in the gutter and in the list, with its fix
        line = page.replace("type: SimpleRetriever", "type: SimpleRetreiver")
        page.wait(lambda: "error" in page.gutter_class(line), f"the error mark at line {line}")
        assert any(f"line {line}" in problem for problem in page.problems()), page.problems()
        assert "valid" != page.status()
        page.shot("02-typo")

        page.replace("type: SimpleRetreiver", "type: SimpleRetriever")
        page.wait_valid()
        assert "error" not in page.gutter_class(line)
        page.wait(lambda: page.streams(), "the streams back in the picker")
        assert page.find("#stream").get_attribute("value") == "events"  # chosen again once the manifest is valid
        page.shot("03-fixed")

        # drop a field from the accounts' inline schema: the test read finds it and the inference adds it back
        page.replace('          country: { type: ["null", string] }\n', "")
        page.wait_valid()
        assert page.test_read("accounts", pages=2) == "done", page.find("#run-status").text
        page.shot("04-test-read")
        pages = page.all("#results .page")
        assert len(pages) == 1  # about 50 accounts: one page of 100
        assert "/accounts" in page.find("#results .request-line").text
        rows = page.all("#results .page[open] table.records tbody tr")
        assert rows and "country" in [th.text for th in page.all("#results .page[open] table.records th")]

        page.find("#infer").click()
        page.wait(lambda: '"country"' in page.find("#schema-diff").text, "the inferred schema's diff")
        assert "country" in page.find("#schema-added").text
        page.shot("05-inferred-schema")
        page.find("#accept").click()
        page.wait(lambda: "country:" in page.text, "the accepted schema in the manifest")
        page.wait_valid()
        page.shot("06-accepted")

        page.find("#save").click()
        page.wait(lambda: "Saved" in page.find("#message").text, "the save")
        page.shot("07-saved")
        saved = manifest.read_text()
        assert saved == page.text and "country:" in saved
        assert "# Connector for the example shop API" in saved  # the comments stay
        assert Path(str(manifest) + ".bak").read_text() == (SHOP / "manifest.yaml").read_text()  # the file as opened
        assert validate_manifest([str(manifest)]) == 0
        capsys.readouterr()

        # the file changes on disk meanwhile: the save is refused and says why
        manifest.write_text(saved + "# edited elsewhere\n")
        page.caret(len(page.text))
        page.type("# edited here\n")
        page.find("#save").click()
        page.wait(lambda: "conflict" in (page.find("#message").get_attribute("class") or ""), "the refused save")
        assert "changed on disk" in page.find("#message").text
        assert manifest.read_text().endswith("# edited elsewhere\n")
        page.shot("08-conflict")


def _chunks(text: str) -> list[tuple[str, list[str]]]:
    """The example manifest cut where a stream is complete: (text, the streams the manifest has then)."""
    head, streams = text.split("\nstreams:\n", 1)
    accounts, rest = streams.split("\n  - type: DeclarativeStream\n    name: orders\n", 1)
    orders, events = rest.split("\n  - type: DeclarativeStream\n    name: events\n", 1)
    return [(head + "\nstreams:\n" + accounts, ["accounts"]),
            ("\n  - type: DeclarativeStream\n    name: orders\n" + orders, ["accounts", "orders"]),
            ("\n  - type: DeclarativeStream\n    name: events\n" + events, ["accounts", "orders", "events"])]


def test_build_the_three_stream_example_from_an_empty_manifest(driver, shop, tmp_path, capsys):
    example = (SHOP / "manifest.yaml").read_text()
    manifest, config = _folder(tmp_path, shop, None)
    page = Page(driver, tmp_path / "screenshots")
    with builder(manifest, config) as url:
        page.open(url)
        assert page.text == ""
        assert page.streams() == []
        page.shot("10-empty")
        page.caret(0)
        for number, (chunk, streams) in enumerate(_chunks(example), start=1):
            page.caret(len(page.text))
            page.type(chunk)
            if number < 3:  # the example has its check and spec at the end: until then the builder asks for them
                page.wait(lambda: "missing required field `check`" in " ".join(page.problems()),
                          "the missing check said")
            page.shot(f"1{number}-typed-{streams[-1]}")
        page.wait_valid()
        page.wait(lambda: page.streams() == ["accounts", "orders", "events"], "the three streams in the picker")
        # the spec marks api_key secret: the config on the screen shows it masked from then on
        page.wait(lambda: "demo-key-not-secret" not in page.find("#config").get_attribute("value"),
                  "the API key masked once the spec marks it secret")
        assert '"api_key": "********"' in page.find("#config").get_attribute("value")
        assert page.text == example

        assert page.test_read("events", pages=2) == "done", page.find("#run-status").text
        assert page.all("#results table.records tbody tr"), page.find("#results").text[:2000]
        page.shot("14-events")
        assert page.test_read("accounts", pages=1) == "done", page.find("#run-status").text
        assert page.all("#results table.records tbody tr"), page.find("#results").text[:2000]
        assert page.test_read("orders", pages=1, partition=0) == "done", page.find("#run-status").text
        requests = [line.text for line in page.all("#results .request-line")]
        assert any("/accounts/" in line and "/orders" in line for line in requests), requests
        assert page.all("#results table.records tbody tr"), page.find("#results").text[:2000]
        page.shot("15-orders-partition")

        page.find("#save").click()
        page.wait(lambda: "Saved" in page.find("#message").text, "the save")
        assert manifest.read_text() == example
        assert validate_manifest([str(manifest)]) == 0
        capsys.readouterr()


def test_stop_a_test_read_that_waits_on_the_api(driver, tmp_path):
    """The API allows one request per 50 s: the second page waits on its 429, and Stop ends the read."""
    with _shop_api()(rate_limit=0.02) as slow:
        manifest, config = _folder(tmp_path, slow, (SHOP / "manifest.yaml").read_text())
        page = Page(driver, tmp_path / "screenshots")
        with builder(manifest, config) as url:
            page.open(url)
            page.wait_valid()
            Select(page.find("#stream")).select_by_value("events")
            field = page.find("#pages")
            field.clear()
            field.send_keys("3")
            page.find("#test").click()
            page.wait(lambda: page.find("#run-status").get_attribute("data-status") == "running"
                      and page.find("#stop").is_enabled(), "the running test read")
            page.find("#stop").click()
            page.wait(lambda: page.find("#run-status").get_attribute("data-status") == "stopped", "the stopped read")
            assert page.find("#run-status").text.startswith("stopped")
            assert page.find("#test").is_enabled() and not page.find("#stop").is_enabled()
            page.shot("09-stopped")
