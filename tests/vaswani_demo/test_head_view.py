"""The "Inside one head" view (`vaswani_demo.head_view`): what it draws is `head_computation`'s numbers for the head
and word chosen, dropping ÷√d_k redraws the weights and changes the entropy it tells, it speaks the page's language
and says what to do before any translation; in Chromium, a click on a word draws that word's computation."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

gr = pytest.importorskip("gradio")

from tests.vaswani_demo.browser import ARTIFACTS, demo_page, show  # noqa: E402
from tests.vaswani_demo.test_app import CHROMIUM  # noqa: E402
from vaswani_demo.head_view import UNSCALED, head_outputs, head_view  # noqa: E402
from vaswani_demo.testing import TINY_SENTENCES  # noqa: E402
from vaswani_demo.texts import message  # noqa: E402
from vaswani_inspect.head_computation import head_computation  # noqa: E402


@pytest.fixture(scope="module")
def translated(backend):
    """A record of the tiny model's translation of a tiny sentence, teacher-forced on its text as the view reads it
    (the random model's pieces do not all come back from their text)."""
    from vaswani_inspect.extract import extract

    direction = backend.choices.directions[0]
    result = backend.runner.translate(TINY_SENTENCES[0], direction)
    assert result.ok, result.status
    served = backend.runner.served(direction)
    return extract(
        served.model, served.tokenizer, result.record.source_text, result.record.target_text, direction=direction
    )


def _drawn(figure, name: str) -> np.ndarray:
    """The numbers drawn in the figure's axes `name` (`vaswani_inspect.head_plots` names each): bar widths, or the
    heat strip's image."""
    (ax,) = [ax for ax in figure.axes if ax.get_label() == name]
    if ax.containers:
        return np.array([bar.get_width() for bar in ax.containers[0]])
    return np.asarray(ax.images[0].get_array())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_the_view_draws_the_head_computation_of_the_chosen_word(backend, translated, kind):
    served = backend.runner.served(translated.direction)
    view = head_view(backend, translated, kind, 1, 1, 2)
    expected = head_computation(
        served.model,
        served.tokenizer,
        translated.source_text,
        direction=translated.direction,
        target=translated.target_text,
        kind=kind,
        layer=1,
        head=1,
        query=2,
    )
    assert (view.kind, view.layer, view.head, view.query) == (kind, 1, 1, 2)
    # The raw dot products of every key, then the weights (0 where the mask hides a key).
    np.testing.assert_allclose(_drawn(view.computation, "scores"), expected.scores, atol=1e-6)
    np.testing.assert_allclose(_drawn(view.computation, "weights"), expected.weights, atol=1e-6)
    np.testing.assert_allclose(_drawn(view.computation, "query")[0], expected.query, atol=1e-6)
    np.testing.assert_allclose(_drawn(view.concatenation, "head_output")[0], expected.head_output, atol=1e-6)
    # The weights are the record's attention row: the view reads the translation shown.
    np.testing.assert_allclose(expected.weights, getattr(translated, kind)[1, 1, 2], atol=1e-5)
    assert (view.mask is not None) == (kind == "decoder")
    words = [label for label, _ in view.queries]
    assert len(words) == len(expected.query_tokens) and not any("▁" in word for word in words)


@pytest.mark.slow
def test_dropping_the_scale_redraws_the_weights_and_tells_both_entropies(backend, translated):
    scaled = head_view(backend, translated, "encoder", 0, 0, 1, False)
    unscaled = head_view(backend, translated, "encoder", 0, 0, 1, True)
    reference = scaled.scaled.with_scale(UNSCALED)
    np.testing.assert_allclose(_drawn(unscaled.computation, "weights"), reference.weights, atol=1e-6)
    assert not np.allclose(_drawn(scaled.computation, "weights"), reference.weights)
    assert scaled.shown.entropy != unscaled.shown.entropy
    for view in (scaled, unscaled):
        told = re.search(r"\*\*([\d.]+) nats\*\* with the model's scaling, \*\*([\d.]+) nats\*\* without", view.summary)
        assert told, view.summary
        assert [float(value) for value in told.groups()] == [
            round(scaled.shown.entropy, 2),
            round(unscaled.shown.entropy, 2),
        ]
    assert "Shown: without ÷√d_k." in unscaled.summary and "Shown: with the model's scaling." in scaled.summary


@pytest.mark.slow
def test_the_view_speaks_the_page_language_and_says_what_to_do_first(backend, translated):
    *_, summary, computation, concatenation, mask, mask_box = head_outputs(backend, None, "encoder", 0, 0, 0, False)
    assert summary == message("en", "head.none") and computation is concatenation is mask is None
    assert mask_box["visible"] is False
    spanish = head_outputs(backend, None, "cross", 0, 0, 0, False, language="es")[3]
    assert spanish.startswith("Traduce una oración")
    layer, head, query, summary, *_ = head_outputs(backend, translated, "cross", 0, 0, 0, False, language="es")
    assert "capa 0, cabeza 0" in summary and "Entropía de los pesos" in summary
    assert query["value"] == "0"  # the word chosen
    assert (
        head_outputs(backend, translated, "cross", 0, 0, 0, False, language="es", reset=True)[2]["value"] == "1"
    )  # a new
    # record or kind starts at the first output piece (row 0 is the start token)


@pytest.mark.slow
def test_opening_the_tab_again_draws_nothing_new(backend, translated):
    from vaswani_demo.head_view import drawn_key, head_handler

    refresh = head_handler(backend, reset=True, skip_drawn=True)
    *first, drawn = refresh(translated, "encoder", 0, 0, None, False, None)
    assert drawn == drawn_key(translated) and first[4] is not None
    again = refresh(translated, "encoder", 0, 0, None, False, drawn)
    assert all(isinstance(value, type(gr.skip())) for value in again)


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_browser_a_click_on_a_word_draws_its_head(backend):
    with demo_page(backend) as (page, expect):
        show(page, "head")
        expect(page.locator("#head-summary")).to_contain_text("Translate a sentence on the first tab", timeout=60_000)
        show(page, "translate")
        page.locator("#source-text textarea").fill(TINY_SENTENCES[0])
        page.locator("#translate-button").click()
        expect(page.locator("#translation textarea")).not_to_have_value("", timeout=120_000)
        show(page, "head")
        figure = page.locator("#head-computation img")
        expect(figure).to_be_visible(timeout=60_000)
        words = page.locator("#head-query label")
        expect(words.nth(2)).to_be_visible(timeout=60_000)
        drawn = figure.get_attribute("src")
        started = time.perf_counter()
        words.nth(2).click()
        expect(figure).not_to_have_attribute("src", drawn, timeout=60_000)
        seconds = time.perf_counter() - started
        expect(page.locator("#head-summary")).to_contain_text("(position 2)")
        expect(page.locator("#head-concat img")).to_be_visible()
        # The decoder's self-attention draws its causal mask too.
        page.locator("#head-kind label").nth(1).click()
        expect(page.locator("#head-mask img")).to_be_visible(timeout=60_000)
        expect(page.locator("#head-summary")).to_contain_text("Decoder self-attention, layer 0, head 0")
        page.screenshot(path=str(ARTIFACTS / "demo-head.png"), full_page=True)
        print(f"click to figure: {seconds:.2f} s")


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["marian", "t5"])
def test_the_view_works_on_another_architecture(architecture, tiny_architecture_folders):
    """T5 multiplies its scores by 1 and adds a relative position bias: nothing to drop, and the view says so."""
    from vaswani_demo import DemoBackend

    other = DemoBackend.load(str(tiny_architecture_folders[architecture]), backend="torch")
    try:
        direction = other.choices.directions[0]
        record = other.runner.translate("El gato se comió el ratón.", direction).record
        view = head_view(other, record, "encoder", 0, 0, 1)
        expected = head_computation(
            other.models[0].model,
            other.models[0].tokenizer,
            record.source_text,
            direction=direction,
            target=record.target_text,
            kind="encoder",
            layer=0,
            head=0,
            query=1,
        )
        np.testing.assert_allclose(_drawn(view.computation, "weights"), expected.weights, atol=1e-6)
        no_scale = "does not divide the scores by √d_k" in view.summary
        assert no_scale == (architecture == "t5"), view.summary
    finally:
        other.close()
