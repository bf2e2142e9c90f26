"""The page's style and browser scripts (`vaswani_demo.page_script`) in a real browser (Debian's chromium, marked
``browser``), in one visit on the tiny model: before any translation every empty figure, the step box and a download
say what to do; after one, on a phone (390 x 844) every figure fits its box or scrolls inside it (the beam tree),
the bertviz frame stays in its box and nothing makes the page scroll sideways; the encoder self-attention heatmap
is on the translate tab and downloads; and the presentation mode, in Spanish on a 1920 x 1080 projector, enlarges
the labels and the figures, not only the text boxes."""

from __future__ import annotations

import pytest

from tests.vaswani_demo.browser import ARTIFACTS, demo_page, show
from tests.vaswani_demo.test_app import CHROMIUM
from vaswani_demo.texts import PAGE

#: Every figure of the page that a translation draws, with the tab it is on.
FIGURES = {
    "translate": ("alignment-links", "alignment-plot", "encoder-attention-plot"),
    "steps": ("steps-target", "steps-candidates", "steps-attention", "steps-tree"),
}

#: For each figure of the tab shown: (its box's width, its scrolling container's width and scroll width, the
#: image's left and right edges, the container's left and right edges).
_BOXES_JS = """(ids) => ids.map((id) => {
  const box = document.getElementById(id);
  const holder = box.querySelector(".matplotlib");
  const image = box.querySelector("img");
  const shown = holder.getBoundingClientRect(), drawn = image.getBoundingClientRect();
  return {id, overflow: getComputedStyle(holder).overflowX, width: holder.clientWidth, scroll: holder.scrollWidth,
          image: [drawn.left, drawn.right], holder: [shown.left, shown.right]};
})"""


def _translate(page, expect, text: str) -> None:
    show(page, "translate")
    page.locator("#source-text textarea").fill(text)
    page.locator("#translate-button").click()
    expect(page.locator("#encoder-attention-plot img").first).to_be_visible(timeout=120_000)


def _page_width(page) -> int:
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_every_figure_fits_says_what_to_do_and_grows_for_a_projector(backend):
    with demo_page(backend) as (page, expect):
        # Before any translation: the steps' box, every empty figure and a download say what to do.
        show(page, "steps")
        english = PAGE["en"]
        assert page.locator("#steps-where textarea").get_attribute("placeholder") == english["steps.empty"]
        told = page.evaluate("""() => getComputedStyle(document.querySelector("#steps-tree .empty"), "::after")
                                .content""")
        assert english["figure.empty"] in told
        page.locator("#steps-tree-png").click()
        expect(page.locator(".vaswani-download-note")).to_have_text(english["download.empty"], timeout=10_000)
        legend_size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#tabs button')).fontSize)")

        _translate(page, expect, "el gato negro")
        with page.expect_download() as saved:
            page.locator("#encoder-attention-plot-svg").click()
        assert saved.value.suggested_filename == "encoder-self-attention.svg"

        # A phone: each figure fits its box, or (wider) scrolls inside it, from its left edge; nothing is wider
        # than the screen.
        page.set_viewport_size({"width": 390, "height": 844})
        for tab, figures in FIGURES.items():
            show(page, tab)
            for elem_id in figures:
                expect(page.locator(f"#{elem_id} img").first).to_be_visible(timeout=60_000)
            page.wait_for_timeout(300)
            for box in page.evaluate(_BOXES_JS, list(figures)):
                assert box["holder"][0] >= 0 and box["holder"][1] <= 390, box
                if box["scroll"] > box["width"] + 1:  # wider than its box: it scrolls, and starts at its left edge
                    assert box["overflow"] == "auto" and box["image"][0] >= box["holder"][0] - 1, box
                else:
                    assert box["image"][0] >= box["holder"][0] - 1 and box["image"][1] <= box["holder"][1] + 1, box
            assert _page_width(page) <= 390, tab
        where = page.evaluate(
            "(() => { const box = document.querySelector('#steps-where textarea'); "
            "return [box.scrollHeight, box.clientHeight, box.value]; })()"
        )
        assert where[2] and where[0] <= where[1] + 8, where  # the whole sentence shows (less than half a line hidden)
        tree = page.evaluate(_BOXES_JS, ["steps-tree"])[0]
        assert tree["scroll"] > tree["width"], "the tree is shrunk to the phone's width, not scrolled"
        page.screenshot(path=str(ARTIFACTS / "demo-phone-steps.png"), full_page=True)
        show(page, "bertviz")
        frame = page.locator("#bertviz iframe")
        expect(frame).to_be_visible(timeout=60_000)
        expect(page.frame_locator("#bertviz iframe").locator("svg").first).to_be_attached(timeout=60_000)
        right = page.evaluate("document.querySelector('#bertviz iframe').getBoundingClientRect().right")
        assert right <= 390 and _page_width(page) <= 390

        # The presentation mode on a projector, in Spanish: labels and figures grow too.
        page.set_viewport_size({"width": 1920, "height": 1080})
        page.goto(page.url.split("?")[0] + "?lang=es&present=1", wait_until="domcontentloaded")
        expect(page.locator("#source-text textarea")).to_be_visible(timeout=60_000)
        _translate(page, expect, "el gato negro")
        present_size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#tabs button')).fontSize)")
        assert present_size >= 1.25 * legend_size
        expect(page.locator("#alignment-plot img").first).to_be_visible(timeout=60_000)
        page.wait_for_timeout(300)
        for elem_id in FIGURES["translate"]:
            width, height, natural, box = page.evaluate(
                """(id) => { const image = document.querySelector("#" + id + " img");
                   const drawn = image.getBoundingClientRect();
                   const box = document.getElementById(id).clientWidth;
                   return [drawn.width, drawn.height, image.naturalWidth, box]; }""",
                elem_id,
            )
            # Enlarged to its box's width, or (a square heatmap on the whole row) to most of the screen's height.
            assert width >= natural - 1 and (width >= box - 40 or height >= 0.85 * 1080), (elem_id, width, height, box)
        page.screenshot(path=str(ARTIFACTS / "demo-present-es.png"), full_page=True)
