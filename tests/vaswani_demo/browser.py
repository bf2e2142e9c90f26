"""The demo in a real browser, for the browser tests: the app served on a free port, Debian chromium headless,
one page open on it, English, 1280 x 1000."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.vaswani_demo.test_demo import CHROMIUM, CHROMIUM_ARGS, _free_port
from vaswani_demo import build_app, launch_app

#: Where the browser tests leave their screenshots.
ARTIFACTS = ROOT / "test-artifacts"


@contextlib.contextmanager
def demo_page(backend: Any) -> Iterator[tuple[Any, Any]]:
    """(page, playwright's `expect`) on the demo of `backend`, its source box shown; closed afterwards."""
    playwright = pytest.importorskip("playwright.sync_api")
    app = build_app(backend=backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                playwright.expect(page.locator("#source-text textarea")).to_be_visible(timeout=60_000)
                yield page, playwright.expect
            finally:
                browser.close()
    finally:
        app.close()
