"""The demo in class: the course examples' translations, the page's language (switch, ``?lang=``, cookie), the
figures (titles a student reads, punctuation left out, SVG for download), the head control under the model's
aligner, the step-by-step view and the localised bertviz page. No browser: the browser checks are in
test_texts.py."""

from __future__ import annotations

import asyncio
import os

import pytest

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
import torch  # noqa: E402

from tests.helpers import near_ties  # noqa: E402
from vaswani_demo import DemoBackend, drawing, steps_view  # noqa: E402
from vaswani_demo.answers import request_language  # noqa: E402
from vaswani_demo.components import figure  # noqa: E402
from vaswani_demo.embed import localised_view  # noqa: E402
from vaswani_demo.events import head_controls, translate_outputs  # noqa: E402
from vaswani_demo.page_script import PAGE_HEAD, PageHeadInjector, download_js  # noqa: E402
from vaswani_demo.settings import EXAMPLES, FAILURE_EXAMPLES  # noqa: E402
from vaswani_demo.texts import page_language_cookie  # noqa: E402

torch.set_num_threads(1)  # the shipped model is small, and the machine is shared

#: What the shipped model translates each course example to, with the demo's default decoding (beam 4).
COURSE = {
    "el gato negro": "the black cat",
    "the black cat": "el gato negro",
    "El gato se comió el ratón.": "The cat ate the mouse.",
    "The cat ate the mouse.": "El gato comió el ratón.",
    "El ratón comió al gato.": "The mouse ate the cat.",
    "The mouse ate the cat.": "El ratón comió el gato.",
    "El gato come pescado fresco.": "The cat eats fresh fish.",
    "The cat eats fresh fish.": "El gato come pescado fresco.",
    "El banco aprobó el crédito.": "The bank approved the credit.",
    "I sat on the bench in the square": "me senté en el banco en la plaza",
}
#: The course examples whose beam ends in a near tie (`CLEAR_MARGIN`): any of these translations is the model's.
NEAR_TIES = {"The mouse ate the cat.": {"El ratón comió el gato.", "El ratón comió al gato."}}
#: The failures the page offers to discuss, and what the model gets wrong.
FAILURES = {
    "The bank approved the loan": "el banco aprobó el présto",
    "Me senté en el banco de la plaza": "I sat on the bank of the square",
}


#: `backend` (tests/vaswani_demo/conftest.py): the shipped checkpoint, on the demo's default backend (CTranslate2
#: where installed, as the page serves).
DEMO_MODEL = "shipped"


@pytest.fixture(scope="module")
def record(backend: DemoBackend):
    result, _ = translate_outputs(backend, "El gato se comió el ratón.", "es-en")
    return result.record


@pytest.fixture(scope="module")
def trace(backend: DemoBackend, record):
    return steps_view.trace_of_record(backend, record)


# ------------------------------------------------------------------------------------------------ course examples


def test_every_course_example_translates_as_pinned(backend: DemoBackend):
    assert {text for text, _ in EXAMPLES} == set(COURSE) and {text for text, _ in FAILURE_EXAMPLES} == set(FAILURES)
    for text, direction in (*EXAMPLES, *FAILURE_EXAMPLES):
        _, (translation, status, *_) = translate_outputs(backend, text, direction)
        assert translation in NEAR_TIES.get(text, {{**COURSE, **FAILURES}[text]}), (text, status)
    # Both directions among the examples that work, and the failures really are failures.
    assert {direction for _, direction in EXAMPLES} == {"es-en", "en-es"}
    assert "présto" in FAILURES["The bank approved the loan"]


def test_each_pinned_translation_wins_its_beam_clearly(backend: DemoBackend):
    """A translation is pinned as the one output only where PyTorch's beam prefers it to the next hypothesis by
    `CLEAR_MARGIN`, so that no machine or backend chooses otherwise; a near tie is pinned as its set."""
    model, tokenizer = backend.runner.model, backend.runner.tokenizer
    for text, direction in (*EXAMPLES, *FAILURE_EXAMPLES):
        pinned = NEAR_TIES.get(text, {{**COURSE, **FAILURES}[text]})
        assert near_ties(model, tokenizer, text, direction) == pinned, text


# ------------------------------------------------------------------------------------------------ page language


class _Request:
    def __init__(self, **headers: str) -> None:
        self.headers = headers


def test_the_page_language_cookie_wins_over_accept_language():
    assert page_language_cookie("a=1; vaswani_lang=es; b=2") == "es"
    assert page_language_cookie("vaswani_lang=fr") is None and page_language_cookie(None) is None
    # An English browser that prefers Spanish: the page chose English, so the status lines are English too.
    chosen = _Request(cookie="vaswani_lang=en", **{"accept-language": "es-ES,es;q=0.9"})
    assert request_language(chosen) == "en"
    assert request_language(_Request(**{"accept-language": "es-ES,es;q=0.9"})) == "es"  # an API client
    assert request_language(_Request(cookie="vaswani_lang=xx", **{"accept-language": "es"})) == "es"


def test_the_head_script_goes_first_into_the_page_html_only():
    async def app(scope, receive, send):
        kind = b"text/html; charset=utf-8" if scope["path"] == "/" else b"application/json"
        body = b"<html><head><title>t</title></head></html>" if scope["path"] == "/" else b'{"a": "<head>"}'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind),
                                                                            (b"content-length", b"1")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body[:10], "more_body": True})
        await send({"type": "http.response.body", "body": body[10:]})

    def get(path: str) -> tuple[dict, bytes]:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        async def receive() -> dict:
            return {"type": "http.request"}

        scope = {"type": "http", "method": "GET", "path": path}
        asyncio.run(PageHeadInjector(app)(scope, receive, send))
        return dict(sent[0]["headers"]), b"".join(message.get("body", b"") for message in sent[1:])

    headers, body = get("/")
    assert body.startswith(b"<html><head>" + PAGE_HEAD.encode()) and body.endswith(b"<title>t</title></head></html>")
    assert headers[b"content-length"] == str(len(body)).encode()
    headers, body = get("/config")
    assert body == b'{"a": "<head>"}'
    assert "vaswani_lang=" in PAGE_HEAD and 'params.get("lang")' in PAGE_HEAD and 'params.get("present")' in PAGE_HEAD


def test_figure_downloads_are_named_and_checked():
    script = download_js("steps-tree", "beam-tree", "png")
    assert '"#steps-tree img"' in script and '"beam-tree.png"' in script and "canvas" in script
    assert '"beam-tree.svg"' in download_js("steps-tree", "beam-tree", "svg")
    with pytest.raises(ValueError, match="'svg' or 'png'"):
        download_js("steps-tree", "beam-tree", "pdf")


# ------------------------------------------------------------------------------------------------------ figures


def test_the_alignment_heatmap_speaks_to_students_and_drops_punctuation(record):
    shown, _ = drawing.alignment(record, None, None, "words", None, True, "es")
    ax = shown.axes[0]
    assert ax.get_title().startswith("Qué palabra de la fuente mira cada palabra traducida\n(")
    columns = [label.get_text() for label in ax.get_xticklabels()]
    rows = [label.get_text() for label in ax.get_yticklabels()]
    assert columns == ["El", "gato", "se", "comió", "el", "ratón"] and rows == ["The", "cat", "ate", "the", "mouse"]
    assert ax.images[0].get_array().shape == (5, 6)  # no row or column of zeros for "."
    kept, _ = drawing.alignment(record, None, None, "words", None, False, "en")
    assert [label.get_text() for label in kept.axes[0].get_yticklabels()][-1] == "."
    assert kept.axes[0].get_title().startswith("Which source word each translated word looks at")


def test_a_figure_reaches_the_browser_as_svg(record):
    with gr.Blocks():
        plot = figure("x", "alignment-plot")
    shown, _ = drawing.alignment(record)
    assert plot.postprocess(shown).plot.startswith("data:image/svg+xml;base64,")


def test_the_head_control_is_off_while_the_model_aligner_reads():
    update = head_controls()
    head, shift = update("model")
    assert head["interactive"] is False and shift["interactive"] is False and "choose a layer" in head["info"]
    head, shift = update("0", _Request(cookie="vaswani_lang=es"))
    assert head["interactive"] is True and shift["interactive"] is True and head["info"].startswith("Qué cabeza")


def test_bertviz_speaks_the_page_language(record):
    page = drawing.view(record, "head", "encoder", "es")
    assert "vista de cabezas" in page and "Capa: &lt;select" in page and "capas × 4 cabezas" in page
    assert "Layer: &lt;select" not in page and "(head view)" not in page and "overflow: auto" in page
    assert "Layer: <select" in localised_view("<head></head>Layer: <select", "en")


# ------------------------------------------------------------------------------------------------ step by step


def test_the_trace_retraces_the_translation(record, trace):
    assert trace.text == record.target_text == "The cat ate the mouse."
    assert len(trace.steps) == len(trace.target_pieces) - 1 and trace.num_beams == 4


def test_each_step_is_drawn_and_told_in_the_page_language(trace):
    where, candidates, attention, target = steps_view.step_outputs(trace, 2, "es")
    assert where == "Paso 2 de 7: el modelo eligió “cat” (probabilidad 0,98)."
    bars = candidates.axes[0]
    assert [label.get_text() for label in bars.get_yticklabels()][-1] == "cat"  # the most probable on top
    assert bars.get_title(loc="left") == "Paso 2: candidatos para la palabra siguiente"
    assert len({patch.get_facecolor() for patch in bars.patches}) == 2  # the piece taken stands out
    words = [label.get_text() for label in attention.axes[0].get_xticklabels()]
    assert words == trace.source_words and attention.axes[0].get_title(loc="left") == "Dónde mira en el original"
    # The future is greyed: <s> and "The" seen, "cat" being written, the rest hatched grey.
    boxes = target.axes[0].patches
    assert [text.get_text() for text in target.axes[0].texts][:3] == ["<s>", "The", "cat"]
    assert [box.get_hatch() for box in boxes] == [None, None, None] + ["//"] * (len(trace.target_pieces) - 3)
    # Out of range: clamped to the last step.
    assert steps_view.step_outputs(trace, 99, "en")[0].startswith("Step 7 of 7: the model ended the sentence")
    assert steps_view.step_outputs(None, 1, "en")[0].startswith("Translate a sentence")


def test_the_step_figures_are_small_svgs(trace):
    import io

    import matplotlib

    for shown in (*steps_view.step_outputs(trace, 3, "en")[1:], steps_view.tree_output(trace, "en")):
        assert not shown.get_layout_engine()  # laid out by hand: a layout engine costs more than the drawing
        svg = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # as the page sets it (`build_app`)
            shown.savefig(svg, format="svg")
        assert len(svg.getvalue()) < 100_000


def test_the_beam_tree_is_the_toolkits_in_the_page_language(trace):
    tree = steps_view.tree_output(trace, "es")
    assert tree.axes[0].get_title(loc="left") == "Búsqueda en haz: 4 hipótesis por paso"
    labels = [text.get_text() for text in tree.axes[0].texts]
    assert "mouse" in labels and "</s>" in labels
    assert steps_view.tree_output(None, "es") is None


def test_after_a_translation_the_view_starts_at_step_one(backend, record):
    trace, slider, previous, following, where, *figures = steps_view.traced_outputs(backend, record, "en")
    assert slider["maximum"] == len(trace.steps) and slider["value"] == 1 and slider["interactive"] is True
    assert previous["interactive"] is False and following["interactive"] is True
    assert where.startswith("Step 1 of 7") and len(figures) == 3 and all(shown is not None for shown in figures)
    assert steps_view.traced_outputs(backend, None, "es")[4].startswith("Traduce una oración")
