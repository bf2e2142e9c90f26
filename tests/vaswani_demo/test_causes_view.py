"""The page's "What causes it?" tab and "why this word and not that one" (`vaswani_demo.causes_view`): the handlers
answer with the plain functions' results, special tokens shown as text; and in a real browser (marked ``browser``),
after a translation, the tab fills in its first sentence, offers the course pairs, draws the heatmaps and the lens
of the banco pair, says what brings "bank" back, and names both token lists for sentences of different lengths;
the step-by-step view offers the step's candidates and contrasts one. Saves ``test-artifacts/demo-causes.png``.

The model is the shipped checkpoint (the module's tests skip without it)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("gradio")

from tests.vaswani_demo.browser import ARTIFACTS, demo_page, show  # noqa: E402
from tests.vaswani_demo.test_app import CHROMIUM  # noqa: E402
from vaswani_demo.causes import COURSE_PAIRS  # noqa: E402
from vaswani_demo.causes_view import causes_outputs, figure_id, foil_choices, other_figures  # noqa: E402
from vaswani_inspect.patching import SITES  # noqa: E402

#: `backend` (tests/vaswani_demo/conftest.py): the shipped checkpoint.
DEMO_MODEL = "shipped"

BANCO, SOFA, DIRECTION = COURSE_PAIRS[0]


def test_special_tokens_are_shown_as_text_and_a_refusal_draws_nothing(backend):
    summary, first, result = causes_outputs(
        backend, BANCO, "Me senté en el banco del parque.", DIRECTION, language="es"
    )
    assert "&gt;&gt;en&lt;&lt;" in summary and "&lt;/s&gt;" in summary and "<" not in summary
    assert first is None and result is None and other_figures(None) == (None,) * (len(SITES) - 1)
    assert foil_choices(None, 1)["choices"] == []


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_browser_the_tab_after_a_translation(backend):
    with demo_page(backend) as (page, expect):
        page.locator("#source-text textarea").fill(BANCO)
        page.locator("#translate-button").click()
        expect(page.locator("#translation textarea")).to_have_value(re.compile("bank"), timeout=120_000)
        show(page, "causes")
        expect(page.locator("#causes-clean textarea")).to_have_value(BANCO, timeout=60_000)
        expect(page.locator("#causes-summary")).to_contain_text("pick a course pair")
        page.locator("#causes-pairs button").first.click()  # the banco pair
        expect(page.locator("#causes-corrupted textarea")).to_have_value(SOFA, timeout=60_000)
        page.locator("#causes-button").click()
        summary = page.locator("#causes-summary")
        expect(summary).to_contain_text("encoder output, layer", timeout=120_000)
        expect(summary).to_contain_text("banco [sofá]")
        expect(summary).to_contain_text("cross-attention, layer")
        for site in SITES:
            expect(page.locator(f"#{figure_id(site)} img").first).to_be_visible(timeout=60_000)
        expect(page.locator("#causes-lens img").first).to_be_visible(timeout=120_000)
        expect(page.locator("#causes-lens-note")).to_contain_text("“bank”")
        expect(page.locator("#causes-decoder-lens table")).to_contain_text("I sat on the bank of the square.")
        page.locator("#causes-corrupted textarea").fill("Me senté en el banco del parque.")
        page.locator("#causes-button").click()
        expect(summary).to_contain_text("the first reads 14 (>>en<< Me sent·é en el banco de la", timeout=60_000)
        expect(summary).to_contain_text("the second 11")
        page.screenshot(path=str(ARTIFACTS / "demo-causes.png"), full_page=True)
        show(page, "steps")
        expect(page.locator("#steps-candidates img").first).to_be_visible(timeout=120_000)
        for step in range(2, 6):  # to the step that writes "bank"
            page.locator("#steps-next").click()
            expect(page.locator("#steps-where textarea")).to_have_value(re.compile(f"Step {step} "), timeout=60_000)
        page.locator("#why-foil input").first.click()
        bench = page.locator('#why-foil [role="option"]').first
        expect(bench).to_have_attribute("aria-label", re.compile("^bench"), timeout=60_000)
        bench.click()
        page.locator("#why-button").click()
        expect(page.locator("#why-summary")).to_contain_text("“bank” rather than “bench”", timeout=120_000)
        expect(page.locator("#steps-why img").first).to_be_visible(timeout=60_000)
