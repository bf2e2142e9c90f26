"""Offline, escaped bertviz pages: static checks, and (marked `browser`) checks in headless Chromium."""

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vaswani_inspect import AttentionRecord, extract, head_view_html, model_view_html, save_html
from vaswani_inspect.testing import tiny_model

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
