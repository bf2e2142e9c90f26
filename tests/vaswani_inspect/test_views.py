"""Offline, escaped bertviz pages: static checks, and (marked `browser`) checks in headless Chromium; the registry of
views, which the report and the demo read (a view registered in a test appears everywhere)."""

import html
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vaswani_inspect import AttentionRecord, extract, head_view_html, model_view_html, save_html, write_report
from vaswani_inspect.testing import tiny_model
from vaswani_inspect.views import DRAWING_NOTE, VIEW_REGISTRY, View, register_view, view_names

CHROMIUM = Path("/usr/bin/chromium")
PAYLOAD = "</script><script>window.__pwned=1</script>"
ESCAPED_PAYLOAD = "\\u003c/script\\u003e\\u003cscript\\u003ewindow.__pwned=1\\u003c/script\\u003e"


@pytest.fixture(scope="module")
def mismatched(tokenizer):
    model = tiny_model(len(tokenizer), decoder_layers=3, decoder_attention_heads=2)
    return extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")


def _hostile(record: AttentionRecord) -> AttentionRecord:
    source = list(record.source_tokens)
    target = list(record.target_tokens)
    source[2] = PAYLOAD
    target[1] = PAYLOAD
    return replace(record, source_tokens=source, target_tokens=target, source_text=PAYLOAD, target_text=PAYLOAD)


def _params(page: str) -> list[dict]:
    blocks = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.DOTALL)
    return [json.loads(block) for block in blocks]


@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_page_is_self_contained(record, view):
    page = view(record)
    assert "cdnjs" not in page and "require.min.js" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "<script src" not in page
    assert "d3js.org v5.7.0" in page and "jQuery v3.7.1" in page
    assert "window.require = window.requirejs" in page


@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_the_page_says_it_is_drawing_before_its_views(record, view):
    page = view(record, "encoder")
    assert page.index(f'<p id="vaswani-drawing" role="status">{DRAWING_NOTE}</p>') < page.index("<section")


@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_token_text_is_escaped(record, view):
    page = view(_hostile(record))
    assert PAYLOAD not in page
    assert "window.__pwned=1</script>" not in page
    assert ESCAPED_PAYLOAD in page
    (params,) = _params(page)
    assert PAYLOAD in params["attention"][0]["right_text"]  # JSON.parse gives the token back unchanged


def test_weights_are_rounded_integers(record):
    (params,) = _params(head_view_html(record, "cross", decimals=3))
    assert params["attn_scale"] == 1000
    (entry,) = params["attention"]
    assert entry["name"] == "Cross"
    weights = np.asarray(entry["attn"], dtype=np.float64) / params["attn_scale"]
    np.testing.assert_allclose(weights, np.round(record.cross.astype(np.float64), 3), atol=1e-9)
    assert entry["left_text"] == [t.replace("▁", " ") for t in record.target_tokens]
    assert entry["right_text"] == [t.replace("▁", " ") for t in record.source_tokens]


def test_same_shapes_use_one_bertviz_view_with_its_selector(record):
    page = head_view_html(record)
    assert page.count('<section class="view"') == 1 and 'id="filter"' in page
    (params,) = _params(page)
    assert [e["name"] for e in params["attention"]] == ["Encoder", "Decoder", "Cross"]


@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_different_encoder_decoder_shapes_render_one_view_per_kind(mismatched, view):
    page = view(mismatched)
    assert page.count('<section class="view"') == 3
    params = _params(page)
    layers_heads = [(len(p["attention"][0]["attn"]), len(p["attention"][0]["attn"][0])) for p in params]
    assert layers_heads == [(2, 4), (3, 2), (3, 2)]


def test_bad_view_arguments(record):
    with pytest.raises(TypeError, match="batch size 1"):
        head_view_html([record, record])
    with pytest.raises(ValueError, match="Unknown attention kind"):
        head_view_html(record, "self")
    with pytest.raises(ValueError, match="layer 2 does not exist"):
        head_view_html(record, layer=2)
    with pytest.raises(ValueError, match="head 9 does not exist"):
        head_view_html(record, "cross", heads=[0, 9])
    with pytest.raises(ValueError, match="display_mode"):
        model_view_html(record, display_mode="blue")
    with pytest.raises(ValueError, match="decimals"):
        head_view_html(record, decimals=9)


def _probe_page(record: AttentionRecord, kind: str = "all") -> str:
    """The page of the test's view: it names the record and the kind it was asked for."""
    return (
        f"<!DOCTYPE html><html><head><title>{record.source_text} \u2013 probe view</title></head><body>"
        f"<h2>{kind} attention (probe view)</h2><p>{len(record.source_tokens)} source tokens</p></body></html>"
    )


def _probe_height(record: AttentionRecord, kind: str) -> int:
    return 300 + 10 * record.num_layers(kind) + len(record.key_tokens(kind))


@pytest.fixture
def probe_view():
    """A view registered for one test (the steps of docs/extending.md, "Add a view"), removed afterwards."""
    labels, glosses = {"en": "Probe view", "es": "Vista de prueba"}, {"es": "prueba"}
    view = register_view(View("probe", _probe_page, _probe_height, labels, glosses))
    try:
        yield view
    finally:
        del VIEW_REGISTRY["probe"]


def test_registering_refuses_a_taken_or_bad_name_and_a_view_without_english():
    with pytest.raises(ValueError, match="already registered"):
        register_view(View("head", head_view_html, _probe_height, {"en": "Head view"}))
    with pytest.raises(ValueError, match="lower-case identifier"):
        register_view(View("Probe view", _probe_page, _probe_height, {"en": "Probe view"}))
    with pytest.raises(ValueError, match="no English label"):
        register_view(View("probe", _probe_page, _probe_height, {"es": "Vista de prueba"}))
    assert view_names() == ("head", "model")


def test_a_registered_view_is_in_the_report(probe_view, record, tmp_path):
    written = write_report(record, tmp_path / "report", image_format="svg")
    assert list(written)[:3] == ["head_view", "model_view", "probe_view"]
    assert written["probe_view"] == tmp_path / "report" / "probe_view.html"
    assert written["probe_view"].read_text(encoding="utf-8") == _probe_page(record)
    assert '<a href="probe_view.html">probe_view</a>' in written["index"].read_text(encoding="utf-8")


def test_a_registered_view_is_offered_drawn_and_embedded_by_the_demo(probe_view, record, model, tokenizer):
    pytest.importorskip("gradio")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio as gr

    from vaswani_demo import drawing, embed, settings
    from vaswani_demo.checks import view_options
    from vaswani_demo.choices import DemoChoices
    from vaswani_demo.layout import build_layout, page_i18n, page_translations
    from vaswani_demo.texts import Refusal, choices

    # offered: the page's control and its labels, and the /view endpoint's checks
    assert settings.VIEWS == ("head", "model", "probe")
    assert choices("es", "view")[-1] == ("Vista de prueba", "probe")
    demo_choices = DemoChoices.from_model(model, tokenizer, "tiny")
    assert page_translations(demo_choices)["en"]["choice.view.probe"] == "Probe view"
    with gr.Blocks():
        layout = build_layout(demo_choices, page_i18n(demo_choices))
    assert [value for _, value in layout.view.choices] == ["head", "model", "probe"]
    assert view_options("probe", "cross") == {"view": "probe", "kind": "cross"}
    with pytest.raises(Refusal) as refused:
        view_options("neuron")
    assert refused.value.told("en") == 'The bertviz view must be "head", "model" or "probe", got \'neuron\'.'
    assert '"model" (modelo) o "probe" (prueba); se recibió' in refused.value.told("es")

    # drawn through the dispatch, in the page's language, in a frame of the view's own height
    frame = drawing.view(record, "probe", "cross", "es")
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    assert "<h2>cross attention (vista de prueba)</h2>" in page and "\u2013 vista de prueba</title>" in page
    assert 'title="bertviz, vista de prueba: Cross-attention"' in frame
    assert f"height:{_probe_height(record, 'cross')}px" in frame
    assert embed.view_height(record, "probe", "decoder") == _probe_height(record, "decoder")


def test_forty_token_pair_page_size():
    rng = np.random.default_rng(0)
    n, layers, heads = 40, 2, 4
    weights = rng.dirichlet(np.ones(n), size=(layers, heads, n))
    tokens = [f"▁w{i}" for i in range(n)]
    record = AttentionRecord(tokens, tokens, list(range(n)), list(range(n)), weights, weights, weights)
    size = len(head_view_html(record).encode("utf-8"))
    assert size < 700_000, f"head view of a 40-token pair is {size} bytes"


# --------------------------------------------------------------------------------------------------------------
# In the browser
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def _open(browser, path: Path):
    """Open a local page with every non-local request aborted and recorded; returns (page, blocked, errors)."""
    page = browser.new_page()
    blocked: list[str] = []
    errors: list[str] = []

    def route(route):
        if route.request.url.startswith(("file:", "data:", "about:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    return page, blocked, errors


@pytest.mark.browser
def test_browser_harness_detects_script_injection(browser, tmp_path):
    """Control: the same payload pasted into an inline script (as bertviz does) does run."""
    naive = tmp_path / "naive.html"
    naive.write_text(f'<html><body><script>const params = {{"t": "{PAYLOAD}"}};</script></body></html>')
    page, blocked, _ = _open(browser, naive)
    assert page.evaluate("window.__pwned") == 1 and blocked == []
    page.close()


@pytest.mark.browser
@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_offline_page_draws_without_requests_or_injection(browser, record, tmp_path, view):
    path = save_html(view(_hostile(record)), tmp_path / "view.html")
    page, blocked, errors = _open(browser, path)
    page.wait_for_selector("section.view svg", timeout=15000)
    # The note shown while the views draw is gone once they are drawn.
    page.wait_for_selector("#vaswani-drawing", state="detached", timeout=15000)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert blocked == [] and errors == []
    assert page.evaluate("document.querySelectorAll('section.view svg line').length") > 0
    if view is head_view_html:
        texts = page.evaluate("Array.from(document.querySelectorAll('svg text')).map(t => t.textContent)")
        assert PAYLOAD in texts  # drawn as text, not run
        page.select_option("select#filter", "2")  # Cross
        page.select_option("select#layer", "1")
        assert page.evaluate("document.querySelectorAll('section.view svg line').length") > 0
    assert page.evaluate("typeof window.__pwned") == "undefined" and errors == [] and blocked == []
    page.close()


@pytest.mark.browser
@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_mismatched_shapes_draw_every_view(browser, mismatched, tmp_path, view):
    path = save_html(view(mismatched), tmp_path / "view.html")
    page, blocked, errors = _open(browser, path)
    page.wait_for_selector("section.view svg", timeout=15000)
    counts = page.evaluate(
        "Array.from(document.querySelectorAll('section.view')).map(s => s.querySelectorAll('svg line').length)"
    )
    assert len(counts) == 3 and all(c > 0 for c in counts)
    assert blocked == [] and errors == []
    page.close()
