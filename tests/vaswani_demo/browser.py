"""The demo in a real browser, for the browser tests: the app served on a free port, Debian chromium headless,
one page open on it, English, 1280 x 1000; and `show`, which brings a control that sits in another tab or in a
closed accordion onto the screen (Gradio mounts neither until they are opened)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.vaswani_demo.test_app import CHROMIUM, CHROMIUM_ARGS, _free_port
from vaswani_demo import build_app, launch_app
from vaswani_demo.texts import page_text

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


#: The tabs of the page, by the ``id`` of their ``gr.Tab`` (the tab's button is ``#<elem_id>-button``).
TABS = {
    "translate": "tab-translate",
    "steps": "tab-steps",
    "head": "tab-head",
    "positions": "tab-positions",
    "ablation": "tab-ablation",
    "causes": "tab-causes",
    "bertviz": "tab-bertviz",
}

#: The closed accordions of the page, by the text key of their label.
ACCORDIONS = ("decoding.label", "options.label", "about.label", "more.label")


def open_tab(page: Any, tab: str) -> None:
    """Select the tab `tab` (a key of `TABS`) and wait until its panel is shown."""
    if tab not in TABS:
        raise ValueError(f"no tab {tab!r}; the page has {sorted(TABS)}")
    expect = pytest.importorskip("playwright.sync_api").expect
    button = page.locator(f"#{TABS[tab]}-button")
    if not button.is_visible():  # a narrow screen: Gradio moved the tab into its "more tabs" menu
        language = page.evaluate("document.documentElement.lang") or "en"
        page.locator(".overflow-menu > button").click()
        label = page_text(language, f"tab.{tab}")
        button = page.locator(".overflow-dropdown button").filter(has_text=label)
    button.click()
    expect(page.locator(f"#{TABS[tab]}")).to_be_visible(timeout=60_000)


def open_accordion(page: Any, label_key: str, language: str = "en") -> None:
    """Open the accordion labelled by the page text `label_key` in `language`, if it is closed (a click on an open
    one would close it)."""
    if label_key not in ACCORDIONS:
        raise ValueError(f"no accordion {label_key!r}; the page has {list(ACCORDIONS)}")
    expect = pytest.importorskip("playwright.sync_api").expect
    button = page.locator("button.label-wrap").filter(has_text=page_text(language, label_key)).first
    expect(button).to_be_visible(timeout=60_000)
    if "open" not in (button.get_attribute("class") or "").split():
        button.click()
    expect(button).to_have_class(re.compile(r"\bopen\b"), timeout=60_000)


def show(page: Any, tab: str, accordion: str | None = None, language: str = "en") -> None:
    """Bring the controls of `tab`, and those in its accordion labelled by the text key `accordion`, on screen."""
    open_tab(page, tab)
    if accordion is not None:
        open_accordion(page, accordion, language)
