"""Two sentences side by side: one word in two contexts (`vaswani_inspect.contexts.compare_contexts`).

The two boxes start at the course's pair ("El banco aprobó el crédito." / "Me senté en el banco de la plaza.", the
word "banco") when a Spanish source is served; the button translates both with the model that serves the chosen
direction and shows the translations, the toolkit's figure of the word's attention rows and of how similar its
vectors are at each encoder layer (`vaswani_inspect.position_plots`), and that similarity in words.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from hf_vaswani.data.word_alignment import words
from vaswani_inspect.contexts import compare_contexts
from vaswani_inspect.position_plots import plot_contexts

from .answers import request_language, warn_on_page
from .components import download_buttons, figure
from .settings import MAX_CHARS
from .texts import DEFAULT_LANGUAGE, decimal, message

__all__ = ["BANCO", "ContextsLayout", "contexts_outputs", "contexts_section", "wire_contexts"]

logger = logging.getLogger(__name__)

#: The course's pair: (first sentence, second sentence, word), Spanish.
BANCO = ("El banco aprobó el crédito.", "Me senté en el banco de la plaza.", "banco")


@dataclass
class ContextsLayout:
    """The view's components."""

    direction: gr.Radio
    first: gr.Textbox
    second: gr.Textbox
    word: gr.Textbox
    button: gr.Button
    first_translation: gr.Textbox
    second_translation: gr.Textbox
    summary: gr.Markdown
    figure: gr.Plot


def contexts_section(
    directions: tuple[str, ...], i18n: gr.I18n, downloads: dict[str, tuple[gr.Button, gr.Button]]
) -> ContextsLayout:
    """Add the view's components to the current ``gr.Blocks``; their download buttons go into `downloads`. The
    boxes start at the course's pair where a direction from Spanish is served (that direction chosen)."""
    gr.Markdown(i18n("contexts.intro"), elem_classes=["vaswani-hide-in-presentation"])
    spanish = [direction for direction in directions if direction.startswith("es-")]
    first, second, word = BANCO if spanish else ("", "", "")
    direction = gr.Radio(
        [(i18n(f"choice.direction.{value}"), value) for value in directions],
        value=(spanish or list(directions))[0],
        label=i18n("contexts.direction.label"),
        interactive=len(directions) > 1,
        elem_id="contexts-direction",
    )
    with gr.Row(equal_height=False):
        first_box = gr.Textbox(
            first, label=i18n("contexts.first.label"), max_length=MAX_CHARS, elem_id="contexts-first"
        )
        second_box = gr.Textbox(
            second, label=i18n("contexts.second.label"), max_length=MAX_CHARS, elem_id="contexts-second"
        )
    with gr.Row(equal_height=False):
        word_box = gr.Textbox(word, label=i18n("contexts.word.label"), max_length=60, elem_id="contexts-word", scale=2)
        button = gr.Button(
            i18n("contexts.button"), variant="primary", elem_id="contexts-button", scale=1, min_width=160
        )
    with gr.Row(equal_height=False):
        first_translation = gr.Textbox(
            label=i18n("contexts.first_translation"), interactive=False, elem_id="contexts-first-translation"
        )
        second_translation = gr.Textbox(
            label=i18n("contexts.second_translation"), interactive=False, elem_id="contexts-second-translation"
        )
    summary = gr.Markdown(i18n("contexts.empty"), elem_id="contexts-summary")
    shown = figure(i18n("contexts.figure"), "contexts-figure", show_label=False)
    downloads["contexts-figure"] = download_buttons(i18n, "contexts-figure")
    return ContextsLayout(
        direction, first_box, second_box, word_box, button, first_translation, second_translation, summary, shown
    )


def similarity_text(similarities: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """The word's cosine similarity across the two sentences by encoder layer, in words (entry 0 the embedding)."""
    values = [
        message(
            language,
            "contexts.embedding" if layer == 0 else "contexts.layer",
            layer=layer,
            value=decimal(language, value),
        )
        for layer, value in enumerate(similarities)
    ]
    return message(language, "contexts.layers", values="; ".join(values))


def contexts_outputs(
    backend: Any, direction: Any, first: Any, second: Any, word: Any, *, language: str = DEFAULT_LANGUAGE
) -> tuple[Any, Any, Any, Any]:
    """(first translation, second translation, summary, figure); a sentence in the summary (and no figure) for
    what cannot be compared: an empty box, a sentence the model cannot read, a word not in both."""
    texts = [str(first or "").strip(), str(second or "").strip()]
    word = str(word or "").strip()
    if not all(texts) or not word:
        return "", "", message(language, "contexts.none"), None
    if direction not in backend.runner.routes:
        direction = backend.choices.directions[0]
    for text, which in zip(texts, ("contexts.first", "contexts.second")):
        refused, _ = backend.runner.check_text(text, direction, language=language)
        if refused:
            return "", "", refused, None
        if word.casefold() not in {candidate.casefold() for candidate in words(text)}:
            return "", "", message(language, "contexts.missing", word=word, which=message(language, which)), None
    served = backend.runner.served(direction)
    try:
        with served.encoding(direction):
            compared = compare_contexts(served.model, served.tokenizer, texts[0], texts[1], word, direction=direction)
    except Exception as error:  # noqa: BLE001 - the page says what went wrong, the log has the traceback
        logger.exception("The demo could not compare %r and %r on %r", *texts, word)
        return "", "", message(language, "contexts.failed", error=type(error).__name__), None
    return (
        compared.first.translation,
        compared.second.translation,
        similarity_text(compared.similarity, language),
        plot_contexts(compared, language=language),
    )


def wire_contexts(contexts: ContextsLayout, backend: Any, events: dict[str, Any]) -> None:
    """Attach the view's button (it translates: in the translations' queue, `events`)."""

    def compare(direction: Any, first: Any, second: Any, word: Any, request: gr.Request | None = None) -> tuple:
        outputs = contexts_outputs(backend, direction, first, second, word, language=request_language(request))
        if outputs[3] is None and outputs[2] != message(request_language(request), "contexts.none"):
            warn_on_page(outputs[2])
        return outputs

    inputs = [contexts.direction, contexts.first, contexts.second, contexts.word]
    outputs = [contexts.first_translation, contexts.second_translation, contexts.summary, contexts.figure]
    contexts.button.click(compare, inputs=inputs, outputs=outputs, **events)
