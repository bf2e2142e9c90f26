"""The demo on other translation models (`vaswani_demo.models`): each tiny architecture of
`vaswani_inspect.testing_models` (Marian, NLLB, mBART-50, BART, T5) builds the page and goes through what the page
calls (translate, draw the alignment, switch heads off, explain), with the directions it offers and a backend that
serves it; a pair of one-direction models serves each direction by its own model, through the API; and what the demo
cannot serve is refused in one sentence. The models have random weights: only the plumbing is checked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

gr = pytest.importorskip("gradio")

import vaswani_demo.app as app_module  # noqa: E402
from hf_vaswani import cli  # noqa: E402
from tests.vaswani_demo.test_app import _free_port  # noqa: E402
from vaswani_demo import DemoBackend, build_app, launch_app  # noqa: E402
from vaswani_demo.events import ablation_outputs, alignment_outputs, translate_outputs, view_output  # noqa: E402
from vaswani_demo.explaining import explained_outputs  # noqa: E402
from vaswani_demo.layout import page_translations  # noqa: E402
from vaswani_demo.models import ModelSpec, model_specs, parse_model_option  # noqa: E402
from vaswani_demo.settings import EXAMPLES, MODEL_ENV, SHARE_FALLBACK  # noqa: E402
from vaswani_inspect.alignment import target_words  # noqa: E402
from vaswani_inspect.architectures import head_counts  # noqa: E402
from vaswani_inspect.extract import extract  # noqa: E402
from vaswani_inspect.record import KINDS, AttentionRecord  # noqa: E402

#: The directions each tiny model serves (BART's is given: its folder does not say it).
DIRECTIONS = {
    "marian": ("es-en",),
    "m2m100": ("es-en", "en-es"),
    "mbart": ("es-en", "en-es"),
    "bart": ("es-en",),
    "t5": ("es-en", "en-es"),
}
SENTENCES = {"es-en": "El gato se comió el ratón.", "en-es": "The cat ate the mouse."}
TRANSLATIONS = {"es-en": "The cat ate the mouse.", "en-es": "El gato se comió el ratón."}


def _ctranslate2_installed() -> bool:
    from hf_vaswani.backends import ctranslate2_available

    return ctranslate2_available()


def _model_option(architecture: str, folder: Path) -> str:
    return f"es-en={folder}" if architecture == "bart" else str(folder)


def _components(app) -> dict:
    return {c.elem_id: c for c in app.blocks.values() if getattr(c, "elem_id", None)}


@pytest.mark.parametrize("architecture", sorted(DIRECTIONS))
def test_each_architecture_translates_aligns_ablates_and_explains(architecture: str, tiny_architecture_folders):
    backend = DemoBackend.load([_model_option(architecture, tiny_architecture_folders[architecture])])
    try:
        choices, served = backend.choices, backend.models[0]
        assert choices.directions == DIRECTIONS[architecture]
        ctranslate2 = architecture == "marian" and _ctranslate2_installed()  # --backend auto
        assert {s.backend for s in choices.serving.values()} == {"ctranslate2" if ctranslate2 else "torch"}
        # The controls come from the model's heads, whatever its config calls them; no trained aligner: the
        # penultimate layer (0 of 2), every head, not shifted, and the page says so.
        assert dict(choices.heads) == head_counts(served.model)
        assert choices.aligner == "none" and choices.default_choices() == {"layer": "0", "head": "mean", "shift": False}
        texts = page_translations(choices)
        assert texts["en"]["aligner.note"].startswith("This model has no trained aligner")
        assert texts["es"]["aligner.note"].startswith("Este modelo no tiene un alineador entrenado")
        assert "was not measured for this model" in texts["en"]["method.note"]
        assert "`" + served.name + "`" in texts["en"]["served.note"] and served.name in texts["en"]["intro"]

        app = build_app(backend=backend)
        shown = _components(app)
        assert [value for _, value in shown["direction"].choices] == list(DIRECTIONS[architecture])
        assert shown["direction"].interactive is (len(DIRECTIONS[architecture]) > 1)
        assert shown["aligner-note"].visible is True
        for kind in KINDS:  # the ablation panel lists every head of the model
            layers, heads = choices.heads[kind]
            assert len(shown[f"ablate-{kind}"].choices) == layers * heads
        # The course examples stay, those of the directions served.
        # The first examples are the course's (the failures to discuss follow).
        examples = next(block for block in app.blocks.values() if isinstance(block, gr.Dataset))
        assert examples.samples == [list(example) for example in EXAMPLES if example[1] in DIRECTIONS[architecture]]

        defaults = choices.default_choices()
        for direction in choices.directions:
            result, (translation, status, pairs, record) = translate_outputs(
                backend, SENTENCES[direction], direction, 2, 8, defaults["layer"], defaults["head"]
            )
            # (Random weights may write nothing but special tokens: the translation may be empty.)
            assert result.ok and status.startswith("Translated") and translation == record.target_text, status
            assert record.direction == direction and record.model_name == served.name
            assert record.generate_kwargs.get("backend", "torch") == choices.serving[direction].backend
            # What the page draws after it, and the API's /alignment with its defaults: the same reading.
            heatmap, lines, drawn = explained_outputs(
                backend, record, None, "attention", defaults["layer"], defaults["head"], "words", False, True
            )[:3]
            assert heatmap is not None and drawn == pairs
            assert (lines is not None) == bool(target_words(record))  # no lines for an empty translation
            assert alignment_outputs(backend, record)[2] == pairs
            assert "<iframe" in view_output(record, "head", "cross")

        ablated, (status, original, _, off, off_lines) = ablation_outputs(
            backend, record, cross_heads=backend.choices.head_labels("cross")
        )
        assert ablated.ok and original == record.target_text, status
        assert (off_lines is not None) == bool(target_words(ablated.record))
        assert ablated.record.direction == record.direction
        # An explanation method that runs the model, of a translation with words (teacher-forced: random weights).
        direction = choices.directions[-1]
        forced = extract(served.model, served.tokenizer, SENTENCES[direction], TRANSLATIONS[direction],
                         direction=direction, model_name=served.name)  # fmt: skip
        heatmap, lines, pairs, share, cache = explained_outputs(backend, forced, None, "value_zeroing")
        assert heatmap is not None and lines is not None and share is not None and pairs
        assert set(cache) == {SHARE_FALLBACK, "value_zeroing"} and cache["value_zeroing"].record is forced
    finally:
        backend.close()


@pytest.mark.slow
def test_a_pair_of_one_direction_models_serves_each_direction_by_its_own(tiny_architecture_folders, tmp_path):
    """``--model es-en=MARIAN --model en-es=BART``: both directions offered, each translated by its model (its
    record, its copy for heads off), and said so on the page; the API takes either direction."""
    from gradio_client import Client

    marian, bart = tiny_architecture_folders["marian"], tiny_architecture_folders["bart"]
    backend = DemoBackend.load([f"en-es={bart}", f"es-en={marian}"], backend="torch")
    assert backend.choices.directions == ("es-en", "en-es")
    assert {d: s.model_name for d, s in backend.choices.serving.items()} == {"es-en": "marian", "en-es": "bart"}
    note = page_translations(backend.choices)["en"]["served.note"]
    assert "Spanish → English: `marian` (Marian / OPUS-MT)" in note and "English → Spanish: `bart` (BART)" in note
    app = build_app(backend=backend)
    direction = _components(app)["direction"]
    assert [value for _, value in direction.choices] == ["es-en", "en-es"] and direction.interactive is not False
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(
            f"http://127.0.0.1:{port}/", verbose=False, analytics_enabled=False, download_files=str(tmp_path)
        )
        for text, way, model in (("el gato negro", "es-en", "marian"), ("the black cat", "en-es", "bart")):
            translation, status, _ = client.predict(text, way, 1, 8, api_name="/translate")
            assert status.startswith("Translated"), status  # (random weights may write only special tokens)
            record = AttentionRecord.load(client.predict(api_name="/record"))
            assert (record.direction, record.model_name, record.target_text) == (way, model, translation)
        _, status, _ = client.predict("hola", "fr-en", api_name="/translate")
        assert status == "Choose a translation direction: Spanish → English (es-en) or English → Spanish (en-es)."
    finally:
        app.close()
    # Heads are switched off in the copy of the model that serves the record's direction.
    record = backend.runner.translate("the black cat", "en-es", 1, 8).record
    assert backend.runner.ablate(record, {"cross": ["L0 H0"]}).ok
    bart_model = backend.runner.routes["en-es"]
    assert backend.runner.copy_of(bart_model) is not bart_model.model
    assert type(backend.runner.copy_of(bart_model)).__name__.startswith("Bart")
    backend.close()


def test_marian_through_ctranslate2_chooses_pytorchs_tokens(tiny_architecture_folders):
    """The Marian export of CTranslate2's own converter, in float32, gives generate()'s tokens, beam or greedy,
    cut at the maximum length as generate() cuts them (its last step forced to ``</s>``)."""
    pytest.importorskip("ctranslate2")
    from hf_vaswani.backends import MarianCTranslate2Translator, load_ctranslate2
    from vaswani_inspect.loading import load_for_inspection

    folder = tiny_architecture_folders["marian"]
    translator = load_ctranslate2(folder, quantization="float32", threads=1)
    assert isinstance(translator, MarianCTranslate2Translator)
    model, tokenizer = load_for_inspection(folder)
    for text in ("el gato negro", "¿Dónde está el ratón?"):
        for beams in (1, 3):
            settings = {"num_beams": beams, "max_new_tokens": 8}
            ids = translator.translate_ids([text], "es-en", **settings)[0]
            record = extract(model, tokenizer, text, direction="es-en", generate_kwargs=settings)
            assert tokenizer.convert_ids_to_tokens(ids) == record.target_tokens[1:-1]


def test_what_the_demo_cannot_serve_is_one_sentence(
    tiny_architecture_folders, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    def never(*args, **kwargs):
        raise AssertionError("the demo started")

    monkeypatch.setattr(app_module, "launch_app", never)
    folders = {name: str(folder) for name, folder in tiny_architecture_folders.items()}

    def refused(*options: str) -> str:
        assert cli.main(["demo", *options]) == 2
        err = capsys.readouterr().err
        assert err.startswith("hf-vaswani demo: error: ") and err.count("\n") == 1 and "Traceback" not in err
        return err

    # A one-direction model whose folder does not say its direction, with no language tokens, codes or prefixes.
    err = refused("--model", folders["bart"])
    assert "Which way does" in err and f"--model es-en={folders['bart']}" in err
    # CTranslate2 on an architecture it does not serve, refused before the model loads.
    err = refused("--model", folders["t5"], "--backend", "ctranslate2")
    assert "The CTranslate2 backend serves hf_vaswani and Marian / OPUS-MT models only" in err and "(T5)" in err
    assert "only hf_vaswani models are exported" not in err
    # A one-direction model named for the other direction; two models for one direction; a direction not served.
    assert "translates es-en (its tokenizer or name says so), not en-es" in refused(
        "--model", f"en-es={folders['marian']}"
    )
    err = refused("--model", folders["marian"], "--model", f"es-en={folders['bart']}", "--backend", "torch")
    assert "es-en is served by both 'marian' and 'bart'" in err
    assert "the demo translates es-en and en-es, not fr-en" in refused("--model", f"fr-en={folders['marian']}")


def test_model_options_and_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    assert parse_model_option("Helsinki-NLP/opus-mt-es-en") == ModelSpec("Helsinki-NLP/opus-mt-es-en")
    assert parse_model_option("en-es=Helsinki-NLP/opus-mt-en-es") == ModelSpec("Helsinki-NLP/opus-mt-en-es", "en-es")
    assert parse_model_option("runs/a=b") == ModelSpec("runs/a=b")  # no direction before "=": a path
    with pytest.raises(ValueError, match="names the direction es-en but no model"):
        parse_model_option("es-en=")
    monkeypatch.setenv(MODEL_ENV, "es-en=A en-es=B")
    assert model_specs(None) == [ModelSpec("A", "es-en"), ModelSpec("B", "en-es")]
    spaced = tmp_path / "a model"
    spaced.mkdir()
    monkeypatch.setenv(MODEL_ENV, str(spaced))  # an existing folder is one model, spaces and all
    assert model_specs(None) == [ModelSpec(str(spaced))]
