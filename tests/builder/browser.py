"""Support for the builder's browser tests: headless Chromium (Debian's chromium and chromedriver) driven by
Selenium, the ``manifest-builder`` command in a process of its own, and a screenshot per step.

Screenshots go to the test's temp folder (``screenshots/``, the CI artifact) and, when
``BUILDER_SCREENSHOTS_DIR`` is set, also there (``BUILDER_SCREENSHOTS_DIR=docs/images/builder`` makes the
pictures of docs/builder.md).
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("BUILDER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BUILDER_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 30.0  # seconds a step may take on a loaded machine before the test gives up (a bound, not a measure)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing: `apt-get install -y chromium chromium-driver` (scripts/ensure-chromium.sh)" \
                   f" installs Debian's {package}"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[test]'"
    return None


def start_chrome() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@contextmanager
def builder(manifest: Path, config: Path) -> Iterator[str]:
    """The URL of ``manifest-builder MANIFEST --config CONFIG --no-browser``, running while the block runs."""
    code = "import sys; from framework.cli.builder import main; sys.exit(main())"
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(manifest), "--config", str(config), "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True).start()
    seen: list[str] = []
    url = None
    try:
        deadline = time.monotonic() + WAIT
        while url is None and time.monotonic() < deadline and process.poll() is None:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(line)
            found = re.search(r"http://[\w.\[\]:-]+/?", line)
            url = found.group(0) if found else None
        assert url, f"manifest-builder printed no URL: {''.join(seen)!r}"
        yield url if url.endswith("/") else url + "/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


class Page:
    """The builder's page in the browser, with the steps the tests take and a screenshot per step."""

    def __init__(self, driver: Any, shots: Path) -> None:
        self.driver = driver
        self.shots = shots
        shots.mkdir(parents=True, exist_ok=True)
        self.public = Path(os.environ["BUILDER_SCREENSHOTS_DIR"]) if os.environ.get("BUILDER_SCREENSHOTS_DIR") \
            else None

    def open(self, url: str) -> None:
        self.driver.get(url)
        self.wait(lambda: self.driver.execute_script("return document.body.dataset.ready === 'true'"), "the page")
        self.wait_valid_or_checked()

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait(self, ready: Callable[[], Any], what: str) -> Any:
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, WAIT, poll_frequency=0.1).until(lambda _: ready())
        except TimeoutException:
            self.driver.save_screenshot(str(self.shots / "failed.png"))  # the page as the step left it
            raise AssertionError(f"waited {WAIT:.0f} s for {what}; the page says: {self.find('body').text[:2000]}"
                                 ) from None

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        if self.public is not None:
            self.public.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.public / path.name)
        return path

    # ---- the manifest editor ----

    @property
    def text(self) -> str:
        return str(self.driver.execute_script("return document.getElementById('manifest').value"))

    def status(self) -> str:
        return str(self.find("#validation-status").text)

    def wait_valid_or_checked(self) -> str:
        self.wait(lambda: self.status() and self.status() != "checking…", "the manifest's check")
        return self.status()

    def wait_valid(self) -> None:
        self.wait(lambda: self.status() == "valid", "the manifest to be valid")

    def type(self, text: str) -> None:
        """Type at the caret, key by key (a newline is Enter)."""
        self.find("#manifest").send_keys(text)

    def caret(self, offset: int, end: int | None = None) -> None:
        self.driver.execute_script(
            "const t = document.getElementById('manifest'); t.focus(); t.setSelectionRange(arguments[0], arguments[1]);",
            offset, offset if end is None else end)

    def replace(self, old: str, new: str, editor: str = "manifest") -> int:
        """Select the first ``old`` in an editor (``manifest`` or ``config``) and type ``new`` over it; the line
        it was on (1-based)."""
        from selenium.webdriver.common.keys import Keys

        text = str(self.find(f"#{editor}").get_attribute("value"))
        at = text.index(old)
        self.driver.execute_script(
            "const t = document.getElementById(arguments[0]); t.focus(); t.setSelectionRange(arguments[1], arguments[2]);",
            editor, at, at + len(old))
        self.find(f"#{editor}").send_keys(new or Keys.BACKSPACE)
        return text[:at].count("\n") + 1

    def gutter_class(self, line: int) -> str:
        return str(self.find(f"#gutter div[data-line='{line}']").get_attribute("class") or "")

    def problems(self) -> list[str]:
        return [item.text for item in self.all("#problems li:not(.none)")]

    # ---- the test read ----

    def streams(self) -> list[str]:
        return [option.get_attribute("value") for option in self.all("#stream option")]

    def test_read(self, stream: str, pages: int = 1, partition: int | None = None) -> str:
        from selenium.webdriver.support.ui import Select

        self.wait(lambda: stream in self.streams(), f"stream {stream} in the picker")
        Select(self.find("#stream")).select_by_value(stream)
        if partition is not None:
            field = self.find("#partition")
            field.clear()
            field.send_keys(str(partition))
        field = self.find("#pages")
        field.clear()
        field.send_keys(str(pages))
        self.find("#test").click()
        self.wait(lambda: self.find("#run-status").get_attribute("data-status") in ("done", "failed", "stopped"),
                  f"the test read of {stream}")
        return str(self.find("#run-status").get_attribute("data-status"))
