"""The alignment section's explanation methods: which source words each target word comes from, by the method the
page's selector names (`vaswani_inspect.attribution.METHODS`, attention first), and the source-vs-prefix bar under
the translation.

"attention" is the section as it was: the cross-attention of the layer, head and shift chosen
(`vaswani_demo.drawing`). Any other method draws its `Attribution` (`vaswani_demo.attribution_drawing`): the word
heatmap, the lines and the word pairs come from its matrix, the layer, head and shift choices do not apply (the note
under the selector says so), and the subword heatmap stays the cross-attention's. The bar shows the chosen method's
source share when it measures one (`SHARE_METHODS`), else ALTI+'s (`settings.SHARE_FALLBACK`), and its title
names the method it comes from (`share_method`). Rollout's share is never drawn: it is a constant of the method
(1 - 0.5 ** decoder layers for every word, `settings.SHARE_CONSTANT_METHODS`), so for rollout the bar is ALTI+'s
too, titled as measured by another method.

Each (translation, method) is computed once (`ModelRunner.explain`) and kept in the page session's cache (a dict
``{method: Attribution}`` in a ``gr.State``, valid while its attributions explain the session's record), so that
redrawing with another layer, unit or punctuation choice runs nothing. `explained_outputs` is the plain function;
`explanation_handlers` are the page's (Gradio) functions, which answer in the request's language and turn a
failure into one warning line on the page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr

# The module, not its functions: each call looks its function up, so that a test can replace one.
import vaswani_demo.drawing as drawing
from vaswani_inspect.attribution.registry import method_names

from .answers import request_language, warn_on_page
from .attribution_drawing import attribution_heatmap, attribution_lines, attribution_pairs, share_figure, shown_matrix
from .backend import DemoBackend
from .checks import alignment_options, shown
from .choices import DemoChoices
from .measurements import faithfulness_sentence
from .settings import MEASUREMENTS_FILE, SHARE_CONSTANT_METHODS, SHARE_FALLBACK
from .texts import DEFAULT_LANGUAGE, Named, Refusal, message

__all__ = [
    "ExplanationError",
    "cached_explanations",
    "explanation_handlers",
    "explained_outputs",
    "method_choice",
    "method_note",
    "share_method",
]

logger = logging.getLogger(__name__)

#: The session's explanations: method -> `Attribution` of the session's record.
Explanations = dict[str, Any]


class ExplanationError(Exception):
    """A method could not explain the translation; ``str(error)`` is the sentence for the user, already in the
    request's language."""


def method_choice(value: Any, offered: tuple[str, ...]) -> str:
    """`value` when it is one of the `offered` methods ("attention" when empty), else a `Refusal`."""
    if value is None or value == "":
        return "attention"
    if not isinstance(value, str) or value not in offered:
        raise Refusal("option.method", methods=", ".join(offered), value=shown(value))
    return value


def share_method(method: str) -> str:
    """The method whose source-vs-prefix share the page draws when `method` is chosen: `method` itself when it
    measures one (`SHARE_METHODS`, rollout's constant excepted), else `SHARE_FALLBACK` (ALTI+)."""
    if method in method_names(measures_share=True) and method not in SHARE_CONSTANT_METHODS:
        return method
    return SHARE_FALLBACK


def cached_explanations(cache: Any, record: Any) -> Explanations:
    """The attributions of `cache` that explain `record` (a new translation starts an empty cache)."""
    if not isinstance(cache, Mapping):
        return {}
    return {method: found for method, found in cache.items() if getattr(found, "record", None) is record}


def _explanation(backend: DemoBackend, record: Any, method: str, cache: Explanations, language: str) -> Any:
    """`method`'s attribution of `record`: from `cache`, else computed (and added to `cache`)."""
    if method not in cache:
        result = backend.runner.explain(record, method, language=language)
        if not result.ok:
            raise ExplanationError(result.status)
        cache[method] = result.attribution
    return cache[method]


def explained_outputs(
    backend: DemoBackend,
    record: Any,
    cache: Any = None,
    method: Any = None,
    layer: Any = None,
    head: Any = None,
    unit: Any = None,
    shift: Any = None,
    skip_punctuation: Any = None,
    *,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[Any, Any, list[list[Any]], Any, Explanations]:
    """What the alignment section shows for `method`: (heatmap, alignment lines, word pairs, source-vs-prefix bar,
    the session's explanations); titles in `language`. The attention's pictures follow the layer, head, unit,
    shift and punctuation choices (`vaswani_demo.drawing`); another method's follow the punctuation choice, and
    its subword heatmap is the attention's.

    Raises:
        Refusal: no translation yet (`record` is None), or a choice out of range or not offered.
        ExplanationError: the method (or the bar's) could not be computed; its message is in `language`.
    """
    if record is None:
        raise Refusal("api.first")
    options = alignment_options(backend.choices, layer, head, unit, shift, skip_punctuation)
    method = method_choice(method, backend.choices.methods)
    shift, skip, unit = options["shift"], options["skip_punctuation"], options["unit"]
    cache = cached_explanations(cache, record)
    share = None  # an empty translation has no word whose share could be drawn
    if len(record.target_tokens) > 1:
        share = share_figure(_explanation(backend, record, share_method(method), cache, language), method, language)
    if method == "attention":
        figure, pairs = drawing.alignment(record, layer, head, unit, shift, skip, language)
        return figure, drawing.alignment_links(record, layer, head, shift, skip, language), pairs, share, cache
    attribution = _explanation(backend, record, method, cache, language)
    matrix = shown_matrix(attribution, skip)
    if unit == "words":
        figure = attribution_heatmap(attribution, matrix, language, skip)
    else:  # the subword heatmap is the cross-attention's, whatever the method
        figure, _ = drawing.alignment(record, layer, head, unit, shift, skip, language)
    lines = attribution_lines(attribution, matrix, language)
    return figure, lines, attribution_pairs(attribution, matrix), share, cache


def method_note(choices: DemoChoices, method: Any, language: str = DEFAULT_LANGUAGE) -> str:
    """The sentences under the selector, in `language` (Markdown): what `method` reads, which controls do not
    apply to it, whether it runs the model, and how faithful it measured on this model
    (`vaswani_demo.measurements.faithfulness_sentence`; for a page of several models, that it is not told)."""
    method = method if method in choices.methods else "attention"
    first = [f"**{Named('method', method).told(language)}**: {message(language, f'method.about.{method}')}"]
    if method != "attention":
        first.append(message(language, "method.controls"))
    if method in method_names(runs_model=True):
        first.append(message(language, "method.runs"))
    if len({serving.model_name for serving in choices.serving.values()}) > 1:  # each folder measures its own model
        measured = message(language, "measured.several", method=Named("method", method), file=MEASUREMENTS_FILE)
    else:
        measured = faithfulness_sentence(choices.measurements, method, language)
    return " ".join(first) + "\n\n" + measured


def explanation_handlers(backend: DemoBackend) -> tuple[Callable[..., tuple[Any, ...]], Callable[..., str]]:
    """The page's (alignment section for the chosen method; the note under the selector). The first draws nothing
    for no record yet and turns any failure into one warning line in the page's language (and, for a failure that
    is not the method's own sentence, a traceback in the log), never an error dialog."""

    def explained_alignment(
        record: Any,
        cache: Any,
        method: str,
        layer: str,
        head: str,
        unit: str,
        shift: bool,
        skip_punctuation: bool,
        request: gr.Request | None = None,
    ) -> tuple[Any, ...]:
        language = request_language(request)
        try:
            return explained_outputs(
                backend, record, cache, method, layer, head, unit, shift, skip_punctuation, language=language
            )
        except Exception as error:  # noqa: BLE001 - told on the page
            if isinstance(error, ExplanationError):
                warn_on_page(str(error))
            elif isinstance(error, Refusal):
                if error.key != "api.first":
                    warn_on_page(error.told(language))
            else:
                logger.exception("The demo could not draw the explanation for the page")
                warn_on_page(message(language, "failed.alignment", error=type(error).__name__))
            return None, None, [], None, cached_explanations(cache, record)

    def describe_method(method: str, request: gr.Request | None = None) -> str:
        return method_note(backend.choices, method, request_language(request))

    return explained_alignment, describe_method
