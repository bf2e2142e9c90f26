"""The alignment section's explanation methods (`vaswani_demo.explaining`): a selector with every method of
`vaswani_inspect.attribution.METHODS`, attention first; the heatmap, the lines and the word pairs of the chosen
method's matrix; the source-vs-prefix bar under the translation; one sentence on how faithful the method measured
(`vaswani_demo.measurements`, from the model folder's ``explanations.json``); each (translation, method) computed
once, in the runner's copy of the model; failures as one warning line in the page's language. Then the panel in a
real browser (Debian's chromium, marked ``browser``), clicked through every method.

Everything runs on the tiny random model (`vaswani_demo.testing.write_tiny_model`): the methods' numbers mean
nothing there, only the plumbing is checked (the shipped checkpoint's measurements file is read when it exists).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

pytest.importorskip("gradio")

import vaswani_demo.choices as choices_module  # noqa: E402
import vaswani_demo.runner as runner_module  # noqa: E402
from hf_vaswani.inference import load_translator  # noqa: E402
from tests.vaswani_demo.browser import ARTIFACTS, demo_page, open_accordion, show  # noqa: E402
from tests.vaswani_demo.test_app import CHROMIUM  # noqa: E402
from vaswani_demo import DemoBackend, build_app, drawing  # noqa: E402
from vaswani_demo.choices import DemoChoices  # noqa: E402
from vaswani_demo.explaining import (  # noqa: E402
    explained_outputs,
    explanation_handlers,
    method_choice,
    method_note,
    share_method,
)
from vaswani_demo.layout import page_translations  # noqa: E402
from vaswani_demo.measurements import faithfulness_sentence, read_measurements  # noqa: E402
from vaswani_demo.settings import MEASUREMENTS_FILE, SHARE_CONSTANT_METHODS, SHARE_FALLBACK  # noqa: E402
from vaswani_demo.testing import shipped_checkpoint, write_tiny_model  # noqa: E402
from vaswani_demo.texts import CHOICES, LANGUAGES, MESSAGES, PAGE, Refusal, decimal  # noqa: E402
from vaswani_inspect.alignment.links import word_lists  # noqa: E402
from vaswani_inspect.attribution import METHODS, MODEL_METHODS, SHARE_METHODS, attribute, attribution_links  # noqa: E402
from vaswani_inspect.attribution.gradients import GRADIENT_METHODS  # noqa: E402
from vaswani_inspect.extract import extract  # noqa: E402

SPANISH = SimpleNamespace(headers={"accept-language": "es-ES,es;q=0.9"})  # what request_language reads


@pytest.fixture(scope="module")
def record(backend: DemoBackend):
    """A teacher-forced record whose last words on both sides, ".", have pieces of their own."""
    return extract(
        backend.runner.model, backend.runner.tokenizer, "el gato negro .", "the black cat .", direction="es-en"
    )


def _fresh_record(backend: DemoBackend):
    """A record no explanation has been computed for yet (not the one the runner computed last)."""
    return backend.runner.translate("el gato negro", "es-en", 1, 8).record


def _label(method: str, language: str = "en") -> str:
    return CHOICES[language]["method"][method]


def _lowered(method: str, language: str = "en") -> str:
    """The method's label inside a sentence: lower-case first letter, unless its first word is in capitals."""
    label = _label(method, language)
    if any(character.isupper() for character in label.split(" ", 1)[0][1:]):
        return label
    return label[:1].lower() + label[1:]


# ---------------------------------------------------------------------------------------------- the selector


def test_the_selector_offers_every_method_attention_first(backend):
    app = build_app(backend=backend)
    components = {c.elem_id: c for c in app.blocks.values() if getattr(c, "elem_id", None)}
    assert {"method", "method-note", "methods-missing", "source-share"} <= set(components)
    selector = components["method"]
    assert [value for _, value in selector.choices] == list(METHODS) and selector.value == "attention"
    assert components["methods-missing"].visible is False  # captum is installed here
    translations = page_translations(backend.choices)
    for language in LANGUAGES:
        assert {f"choice.method.{method}" for method in METHODS} <= set(translations[language])
        assert translations[language]["method.note"] == method_note(backend.choices, "attention", language)
    # The page's selector is no API value: the endpoints and their values stay as documented.
    endpoints = app.get_api_info()["named_endpoints"]
    assert list(endpoints) == ["/translate", "/alignment", "/view", "/record"]
    assert [p["parameter_name"] for p in endpoints["/alignment"]["parameters"]] == [
        "layer", "head", "unit", "shift", "skip_punctuation"]  # fmt: skip
    assert method_choice(None, backend.choices.methods) == "attention"
    with pytest.raises(Refusal, match=r"^The explanation method must be one of attention, .*, got 'guess'\.$"):
        method_choice("guess", backend.choices.methods)


def test_without_captum_the_gradient_methods_are_not_offered(backend, monkeypatch: pytest.MonkeyPatch):
    real = choices_module.importlib.util.find_spec
    monkeypatch.setattr(
        choices_module.importlib.util, "find_spec", lambda name: None if name == "captum" else real(name)
    )
    without = DemoBackend(backend.runner.model, backend.runner.tokenizer, "tiny")
    try:
        assert without.choices.missing_methods == GRADIENT_METHODS
        assert without.choices.methods == tuple(m for m in METHODS if m not in GRADIENT_METHODS)
        app = build_app(backend=without)
        components = {c.elem_id: c for c in app.blocks.values() if getattr(c, "elem_id", None)}
        assert [value for _, value in components["method"].choices] == list(without.choices.methods)
        assert components["methods-missing"].visible is True
        assert "pip install 'hf-vaswani[explain]'" in PAGE["en"]["methods.missing"]
        with pytest.raises(Refusal, match="must be one of"):
            method_choice("saliency", without.choices.methods)
    finally:
        without.close()


def test_a_missing_library_is_named_with_how_to_install_it(backend, monkeypatch: pytest.MonkeyPatch):
    def no_captum(*args, **kwargs):
        raise ImportError("No module named 'captum'")

    record = _fresh_record(backend)
    monkeypatch.setattr(runner_module, "attribute", no_captum)
    for language in LANGUAGES:
        result = backend.runner.explain(record, "saliency", language=language)
        assert not result.ok and result.attribution is None
        assert (
            result.status.startswith(_label("saliency", language))
            and "pip install 'hf-vaswani[explain]'" in result.status
        )


@pytest.mark.parametrize("method", METHODS)
def test_method_note_says_which_controls_apply(backend, method: str):
    for language in LANGUAGES:
        note = method_note(backend.choices, method, language)
        assert note.startswith(f"**{_label(method, language)}**: {MESSAGES[language][f'method.about.{method}']}")
        assert (MESSAGES[language]["method.controls"] in note) == (method != "attention")
        assert (MESSAGES[language]["method.runs"] in note) == (method in MODEL_METHODS)
        assert note.endswith(faithfulness_sentence(backend.choices.measurements, method, language))


# ------------------------------------------------------------------------------------- what each method draws


def _drawn_lines(figure) -> int:
    return len(figure.axes[0].lines)


def test_every_method_draws_its_own_matrix(backend, record):
    model, tokenizer = backend.runner.model, backend.runner.tokenizer
    cache = None
    for method in METHODS:
        figure, lines, pairs, share, cache = explained_outputs(
            backend, record, cache, method, unit="words", skip_punctuation=False
        )
        drawn = share_method(method)
        assert drawn == (method if method in SHARE_METHODS and method != "rollout" else SHARE_FALLBACK)
        assert set(cache) >= {drawn} | ({method} - {"attention"})
        share_title = share.axes[0].get_title()
        assert f"({_lowered(drawn)}" in share_title and (drawn != method) == ("chosen" in share_title)
        heights = [bar.get_height() for bar in share.axes[0].patches]
        assert np.allclose(heights[: len(heights) // 2], np.nan_to_num(cache[drawn].source_share))
        if method == "attention":  # the section as it was: the attention reading of the controls
            assert pairs == drawing.word_pairs(record, skip_punctuation=False)
            assert figure.axes[0].get_title().startswith("Which source word each translated word looks at")
            continue
        explained = cache[method]
        direct = attribute(model, tokenizer, record, method=method, **runner_module.explanation_options(method, model))
        assert explained.method == method and np.allclose(explained.matrix, direct.matrix, atol=1e-6)
        links = sorted(attribution_links(explained.matrix), key=lambda link: (link[1], link[0]))  # target order
        expected = [
            [explained.target_words[j], explained.source_words[i], round(float(explained.matrix[j, i]), 3)]
            for i, j in links
        ]
        assert pairs == expected
        assert figure.axes[0].get_title() == f"{_label(method)}: source words per target word"
        assert len(figure.axes[0].patches) == len(links)  # each link boxed
        assert _drawn_lines(lines) == len(links) and _lowered(method) in lines.axes[0].get_title()
    # The subword heatmap stays the cross-attention's, whatever the method.
    tokens, _, _, _, _ = explained_outputs(backend, record, cache, "value_zeroing", unit="tokens")
    assert tokens.axes[0].get_title().startswith("Attention of each decoder step over the source pieces")


@pytest.mark.parametrize("method", ["attention_norm", "rollout", "value_zeroing", "saliency"])
def test_skip_punctuation_applies_to_every_method(backend, record, method: str):
    every, _, kept, _, cache = explained_outputs(backend, record, None, method, skip_punctuation=False)
    heatmap, lines, skipped, _, _ = explained_outputs(backend, record, cache, method, skip_punctuation=True)
    assert [row for row in kept if row[0] != "."] and any(row[0] == "." for row in kept)
    assert all("." not in row[:2] for row in skipped) and len(skipped) == len(kept) - 1
    assert _drawn_lines(lines) == len(skipped)
    # The heatmap has no "." row or column either, as the attention's has not (`drawing.word_heatmap`).
    for figure, dot in ((every, True), (heatmap, False)):
        ax = figure.axes[0]
        rows = [label.get_text() for label in ax.get_yticklabels()]
        columns = [label.get_text() for label in ax.get_xticklabels()]
        assert ("." in rows, "." in columns) == (dot, dot), (rows, columns)
    assert rows == [word for word in word_lists(record)[1].words if word != "."]
    attention, _, _, _, _ = explained_outputs(backend, record, cache, "attention", skip_punctuation=True)
    assert [label.get_text() for label in attention.axes[0].get_yticklabels()] == rows


def test_rollouts_constant_share_is_never_drawn(backend, record):
    """Rollout's share is 1 - 0.5 ** decoder layers for every word: its bar is ALTI+'s, which varies from word to
    word and from sentence to sentence."""
    model, tokenizer = backend.runner.model, backend.runner.tokenizer
    rollout = attribute(model, tokenizer, record, method="rollout").source_share
    assert np.allclose(rollout[~np.isnan(rollout)], 1 - 0.5**model.config.decoder_layers)
    assert "rollout" in SHARE_CONSTANT_METHODS and share_method("rollout") == SHARE_FALLBACK == "alti_plus"
    heights = {}
    for text in ("el gato negro duerme en la casa", "la casa roja"):
        shown = backend.runner.translate(text, "es-en", 1, 12).record
        _, _, _, share, cache = explained_outputs(backend, shown, None, "rollout")
        assert "the chosen method does not measure it" in share.axes[0].get_title()
        bars = np.array([bar.get_height() for bar in share.axes[0].patches])[: len(share.axes[0].patches) // 2]
        np.testing.assert_allclose(bars, np.nan_to_num(cache["alti_plus"].source_share))
        assert np.ptp(bars) > 0.01  # not one value for every word
        heights[text] = bars
    assert not np.allclose(heights["la casa roja"].mean(), heights["el gato negro duerme en la casa"].mean())


def test_titles_follow_the_language(backend, record):
    figure, lines, pairs, share, _ = explained_outputs(backend, record, None, "value_zeroing", language="es")
    assert figure.axes[0].get_title() == f"{_label('value_zeroing', 'es')}: palabras fuente por palabra destino"
    assert (figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()) == (
        "palabras de la fuente",
        "palabras traducidas",
    )
    assert lines.axes[0].get_title() == f"palabras alineadas, {_lowered('value_zeroing', 'es')}"
    assert "el método elegido no lo mide" in share.axes[0].get_title()
    assert [t.get_text() for t in share.axes[0].get_legend().get_texts()] == ["fuente", "prefijo destino"]


# ----------------------------------------------------------------------------------- computed once, safely


def test_each_translation_and_method_is_computed_once(backend, monkeypatch: pytest.MonkeyPatch):
    asked: list[str] = []
    explain = backend.runner.explain

    def counting(record, method, **kwargs):
        asked.append(method)
        return explain(record, method, **kwargs)

    monkeypatch.setattr(backend.runner, "explain", counting)
    alignment, _ = explanation_handlers(backend)
    record = backend.runner.translate("el gato negro", "es-en", 1, 8).record
    runs = backend.runner.model_runs
    *_, cache = alignment(record, None, "saliency", "mean", "mean", "words", False, True)
    for layer, head, unit, shift, skip in (("0", "1", "words", True, True), ("1", "mean", "tokens", False, False)):
        shown = alignment(record, cache, "saliency", layer, head, unit, shift, skip)
        assert shown[0] is not None and shown[-1] == cache
    assert asked == ["saliency"] and backend.runner.model_runs == runs + 1  # its own bar too
    *_, cache = alignment(record, cache, "value_zeroing", "mean", "mean", "words", False, True)
    *_, cache = alignment(record, cache, "saliency", "mean", "mean", "words", False, True)
    # Value zeroing's bar is ALTI+'s (a model run of its own), computed before value zeroing.
    assert asked == ["saliency", SHARE_FALLBACK, "value_zeroing"] and backend.runner.model_runs == runs + 3
    # A new translation starts afresh, whatever cache the page sends.
    again = backend.runner.translate("el gato negro", "es-en", 1, 8).record
    alignment(again, cache, "saliency", "mean", "mean", "words", False, True)
    assert asked[-1] == "saliency" and len(asked) == 4


def test_explanations_run_in_the_copy_and_a_waiting_request_gets_the_first_ones(
    backend, record, monkeypatch: pytest.MonkeyPatch
):
    assert backend.runner.explain(record, "attention_norm").ok  # whatever the runner computed last
    real, models = runner_module.attribute, {}

    def noting(model, tokenizer, record, *, method, **options):
        models[method] = model
        return real(model, tokenizer, record, method=method, **options)

    monkeypatch.setattr(runner_module, "attribute", noting)
    runs = backend.runner.model_runs
    first = backend.runner.explain(record, "value_zeroing")
    second = backend.runner.explain(record, "value_zeroing")
    assert first.ok and second.attribution is first.attribution and backend.runner.model_runs == runs + 1
    assert backend.runner.explain(record, "rollout").ok and backend.runner.model_runs == runs + 1  # reads the record
    # Value zeroing's hooks go on the copy, never on the model that serves translations meanwhile.
    assert models["value_zeroing"] is backend.runner.copy_of(backend.runner.models[0]) is not backend.runner.model
    assert models["rollout"] is backend.runner.model


def test_a_failing_method_is_one_warning_line_in_the_pages_language(backend, monkeypatch: pytest.MonkeyPatch):
    real = runner_module.attribute
    record = _fresh_record(backend)

    def broken(model, tokenizer, record, *, method, **options):
        if method == "input_x_gradient":
            raise RuntimeError("out of memory")
        return real(model, tokenizer, record, method=method, **options)

    monkeypatch.setattr(runner_module, "attribute", broken)
    alignment, describe = explanation_handlers(backend)
    told = f"No se pudo calcular {_label('input_x_gradient', 'es')} (RuntimeError); el registro del servidor"
    with pytest.warns(UserWarning, match=re.escape(told)):
        shown = alignment(record, None, "input_x_gradient", "mean", "mean", "words", False, True, SPANISH)
    assert shown[:4] == (None, None, [], None)
    with pytest.warns(UserWarning, match="^The explanation method must be one of"):
        assert alignment(record, None, "guess", "mean", "mean", "words", False, True)[:3] == (None, None, [])
    assert alignment(None, None, "saliency", "mean", "mean", "words", False, True)[:4] == (None, None, [], None)
    assert describe("value_zeroing", SPANISH).startswith(f"**{_label('value_zeroing', 'es')}**")


# ------------------------------------------------------------------------------------------ the measurements


def _measurements() -> dict:
    """A file like the benchmark's, with fields the demo does not know (they must be ignored)."""
    return {
        "measured": {"test_pairs": 12, "ks": [1, 2, 3], "directions": ["es-en", "en-es"], "new_field": "x"},
        "methods": {
            "attention": {"aer": {"es-en": 0.125, "en-es": 0.25}, "comprehensiveness": 4.5, "sufficiency": 2.0},
            "value_zeroing": {
                "aer": {"es-en": 0.375, "en-es": 0.5},
                "comprehensiveness": 6.25,
                "sufficiency": 1.5,
                "ms_per_sentence": 480.4,
                "ablation_agreement": 0.75,
            },
            "rollout": {"aer": {"es-en": 0.625}},
            "random": {"comprehensiveness": 1.75, "sufficiency": 6.5, "ablation_agreement": 0.15},
        },
        "extra": [1, 2],
    }


def test_the_sentence_reads_the_measurements_by_key(tmp_path: Path):
    (tmp_path / MEASUREMENTS_FILE).write_text(json.dumps(_measurements()), encoding="utf-8")
    measured = read_measurements(tmp_path)
    assert measured == _measurements()
    file = _measurements()["methods"]
    for language in LANGUAGES:
        sentence = faithfulness_sentence(measured, "value_zeroing", language)
        entry, random = file["value_zeroing"], file["random"]
        for number in (
            entry["comprehensiveness"],
            random["comprehensiveness"],
            entry["sufficiency"],
            random["sufficiency"],
        ):
            assert decimal(language, number) in sentence
        aer = f"{decimal(language, 0.375)} es-en / {decimal(language, 0.5)} en-es"
        assert aer in sentence and f"{decimal(language, 0.125)} / {decimal(language, 0.25)}" in sentence  # attention
        assert "12" in sentence and "1–3" in sentence and "480 ms" in sentence and sentence.endswith(".")
        assert "75 %" in sentence and "15 %" in sentence  # agreement with head ablation, and random's
    # A method with only its AER gets only that part; attention is not compared with itself.
    only_aer = faithfulness_sentence(measured, "rollout", "en")
    assert "nats" not in only_aer and f"{decimal('en', 0.625)} es-en (the model's attention: " in only_aer
    assert "heads that matter" not in only_aer
    assert "the model's attention" not in faithfulness_sentence(measured, "attention", "en")
    assert faithfulness_sentence(measured, "saliency", "en") == (
        f"{_label('saliency')} was not measured for this model: its {MEASUREMENTS_FILE} does not list it."
    )
    assert faithfulness_sentence(None, "saliency", "es") == (
        f"{_label('saliency', 'es')} no se midió para este modelo: su carpeta no tiene {MEASUREMENTS_FILE}."
    )


def test_a_broken_measurements_file_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    assert read_measurements(tmp_path) is None and read_measurements(None) is None
    (tmp_path / MEASUREMENTS_FILE).write_text("{not json", encoding="utf-8")
    assert read_measurements(tmp_path) is None and "ignores" in caplog.text
    (tmp_path / MEASUREMENTS_FILE).write_text("[1, 2]", encoding="utf-8")
    assert read_measurements(tmp_path) is None
    broken = {"methods": {"value_zeroing": {"comprehensiveness": "high", "aer": [0.1]}}, "measured": "?"}
    (tmp_path / MEASUREMENTS_FILE).write_text(json.dumps(broken), encoding="utf-8")
    assert "does not list it" in faithfulness_sentence(read_measurements(tmp_path), "value_zeroing", "en")


def test_the_page_reads_the_measurements_of_its_model_folder(backend, tmp_path: Path):
    measured = write_tiny_model(tmp_path / "measured")
    (measured / MEASUREMENTS_FILE).write_text(json.dumps(_measurements()), encoding="utf-8")
    choices = DemoChoices.from_model(*load_translator(str(measured)))
    assert choices.measurements == _measurements()
    assert page_translations(choices)["en"]["method.note"].endswith(
        faithfulness_sentence(_measurements(), "attention", "en")
    )
    assert backend.choices.measurements is None  # the tiny model of the other tests has none
    assert "its folder has no" in page_translations(backend.choices)["en"]["method.note"]


@pytest.mark.skipif(shipped_checkpoint() is None, reason="the shipped checkpoint is missing")
def test_the_shipped_checkpoints_measurements_are_told():
    measured = read_measurements(shipped_checkpoint())
    assert measured is not None, "the shipped checkpoint has no explanations.json"
    for method, entry in measured["methods"].items():
        if method not in METHODS:
            continue
        sentence = faithfulness_sentence(measured, method, "en")
        assert f"{entry['comprehensiveness']:.2f} nats" in sentence
        assert f"{entry['aer']['es-en']:.2f} es-en" in sentence


# ------------------------------------------------------------------------------------------------ in a browser


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_browser_clicks_through_every_method(backend):
    with demo_page(backend) as (page, expect):
        source = page.locator("#source-text textarea")
        show(page, "translate", "about.label")  # the method's note
        open_accordion(page, "more.label")  # the source-share bar
        note = page.locator("#method-note")
        expect(note).to_contain_text(_label("attention"), timeout=60_000)
        source.fill("el gato negro")
        page.locator("#translate-button").click()
        expect(page.locator("#translation textarea")).not_to_have_value("", timeout=120_000)
        plot, links = page.locator("#alignment-plot img").first, page.locator("#alignment-links img").first
        bar = page.locator("#source-share img").first
        for shown in (plot, links, bar):
            expect(shown).to_be_visible(timeout=60_000)
        runs = backend.runner.model_runs
        bar_shows = (SHARE_FALLBACK, False)  # the bar's method, and whether it is the chosen one's own (ALTI+'s)
        for method in METHODS[1:]:
            before = {name: shown.get_attribute("src") for name, shown in (("plot", plot), ("links", links))}
            bar_before = bar.get_attribute("src")
            shows = (share_method(method), share_method(method) == method)
            page.locator("#method").get_by_role("radio", name=_label(method), exact=True).check()
            expect(note).to_contain_text(_label(method), timeout=60_000)
            expect(note).to_contain_text("was not measured for this model")
            expect(plot).not_to_have_attribute("src", before["plot"], timeout=60_000)
            expect(links).not_to_have_attribute("src", before["links"], timeout=60_000)
            expect(bar).to_be_visible(timeout=60_000)
            if shows != bar_shows:  # another method's bar, or ALTI+'s for a method without one
                expect(bar).not_to_have_attribute("src", bar_before, timeout=60_000)
            bar_shows = shows
        page.locator("#method-note").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "demo-explanations.png"), full_page=True)
        # Back to a method already computed: nothing runs again.
        page.locator("#method").get_by_role("radio", name=_label("saliency"), exact=True).check()
        expect(note).to_contain_text(_label("saliency"), timeout=60_000)
        page.wait_for_timeout(500)
        assert backend.runner.model_runs == runs + len(MODEL_METHODS) - 1  # ALTI+ ran for the first bar


def test_integrated_gradients_runs_in_bfloat16_only_where_it_is_fast(backend, monkeypatch):
    model = backend.runner.model
    monkeypatch.setattr(runner_module, "_fast_bfloat16", lambda model: True)
    assert runner_module.explanation_options("integrated_gradients", model) == {"precision": "bfloat16"}
    monkeypatch.setattr(runner_module, "_fast_bfloat16", lambda model: False)
    assert runner_module.explanation_options("integrated_gradients", model) == {"precision": "float32"}
    assert runner_module.explanation_options("value_zeroing", model) == {}
