"""The demo's ablation panel: switch heads off and translate the last sentence again
(`vaswani_demo.runner.ModelRunner.ablate`), in a copy of the model that translations served at the same time never
see; and the panel in a real browser (Debian's chromium, marked ``browser``). The model is the one of
tests/vaswani_demo/test_app.py (the shipped checkpoint when it exists, else a tiny random one)."""

from __future__ import annotations

import copy
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from vaswani_demo import DemoBackend, build_app  # noqa: E402
from vaswani_demo.checks import heads_from_labels  # noqa: E402
from vaswani_demo.events import ablation_outputs  # noqa: E402
from vaswani_inspect.ablation import ablate_heads, attention_modules  # noqa: E402
from vaswani_inspect.extract import extract  # noqa: E402

pytest.importorskip("gradio")

from tests.vaswani_demo.browser import ARTIFACTS, demo_page, show  # noqa: E402
from tests.vaswani_demo.test_app import CHROMIUM  # noqa: E402

#: `backend` (tests/vaswani_demo/conftest.py): the demo tests' model.
DEMO_MODEL = "test"


def _all(backend: DemoBackend, kind: str) -> list[str]:
    return backend.choices.head_labels(kind)


def test_head_labels_cover_every_head(backend):
    for kind, (layers, heads) in backend.choices.heads.items():
        labels = backend.choices.head_labels(kind)
        assert len(labels) == layers * heads and labels[0] == "L0 H0" and labels[-1] == f"L{layers - 1} H{heads - 1}"
    assert heads_from_labels(backend.choices, {"cross": ["L1 H0", "L0 H1"], "encoder": None}) == [
        ("cross", 0, 1),
        ("cross", 1, 0),
    ]
    with pytest.raises(ValueError, match="no cross-attention head 'L9 H0'"):
        heads_from_labels(backend.choices, {"cross": ["L9 H0"]})


def test_refused_ablations_say_why_and_run_nothing(backend):
    runs = backend.runner.model_runs
    assert backend.runner.ablate(None, {"cross": ["L0 H0"]}).status.startswith("Translate a sentence first")
    record = backend.runner.translate("el gato negro", "es-en", 1, 12).record
    runs = backend.runner.model_runs
    assert (
        backend.runner.ablate(record, {"cross": [], "encoder": None}).status == "Tick at least one head to switch off."
    )
    assert "has no encoder self-attention head" in backend.runner.ablate(record, {"encoder": ["L0 H99"]}).status
    assert not backend.runner.ablate(record, {"cross": ["L0 H99"]}).ok
    assert backend.runner.model_runs == runs
    status, original, original_links, ablated, links = ablation_outputs(backend, None, cross_heads=["L0 H0"])[1]
    assert status.startswith("Translate a sentence first") and (original, original_links, ablated, links) == (
        "",
        None,
        "",
        None,
    )


def test_every_cross_head_off_changes_the_translation(backend):
    record = backend.runner.translate("el gato negro", "es-en", 1, 12).record
    runs = backend.runner.model_runs
    result, outputs = ablation_outputs(backend, record, cross_heads=_all(backend, "cross"))
    assert result.ok and backend.runner.model_runs == runs + 1
    assert result.heads_off == [f"cross {label}" for label in _all(backend, "cross")]
    assert not result.record.allclose(record)  # what reaches the output changed
    # The same decoding settings, in PyTorch whichever backend chose the translation.
    settings = {key: value for key, value in record.generate_kwargs.items() if key != "backend"}
    assert result.record.generate_kwargs == settings and result.record.source_text == "el gato negro"
    status, original, original_links, ablated, links = outputs
    assert original == record.target_text and ablated == result.translation
    assert original_links is not None and links is not None
    assert re.match(rf"{len(result.heads_off)} head\(s\) off \(cross L0 H0, ", status)
    # The same as switching the heads off in the served model itself.
    with ablate_heads(
        backend.runner.model, {"cross": {layer: "all" for layer in range(backend.choices.heads["cross"][0])}}
    ):
        expected = extract(
            backend.runner.model, backend.runner.tokenizer, "el gato negro", direction="es-en", generate_kwargs=settings
        )
    assert expected.target_text == result.translation
    assert not any(
        m.out_proj._forward_pre_hooks for group in attention_modules(backend.runner.model).values() for m in group
    )


def test_a_translation_chosen_by_ctranslate2_is_compared_with_pytorchs(backend):
    record = copy.copy(backend.runner.translate("el gato negro", "es-en", 1, 12).record)
    model, tokenizer = backend.runner.model, backend.runner.tokenizer
    pytorch = extract(model, tokenizer, "el gato negro", direction="es-en", generate_kwargs={
        "num_beams": 1, "max_new_tokens": 12}).target_text  # fmt: skip
    # As if CTranslate2 (int8) had chosen another translation than PyTorch would: a head that changes nothing must
    # not be reported as changing it, and the user is told what the comparison is with.
    record.target_text = "A different translation."
    record.generate_kwargs = {"num_beams": 1, "max_new_tokens": 12, "backend": "ctranslate2"}
    unused = backend.runner.ablate(record, {"encoder": ["L0 H0"]})
    assert unused.ok
    expected = "is the same" if unused.translation == pytorch else "changed"
    assert f"the translation {expected}." in unused.status
    assert f"translates this as “{pytorch}”" in unused.status
    # A record PyTorch chose needs no such note.
    record.generate_kwargs = {"num_beams": 1, "max_new_tokens": 12}
    record.target_text = pytorch
    assert "translates this as" not in backend.runner.ablate(record, {"encoder": ["L0 H0"]}).status


@pytest.mark.slow
def test_translations_served_during_ablations_keep_every_head(backend):
    sentences = ["el gato negro", "El banco aprobó el crédito", "Me senté en el banco de la plaza"]
    expected = {text: backend.runner.translate(text, "es-en", 1, 12).translation for text in sentences}
    record = backend.runner.translate(sentences[0], "es-en", 1, 12).record
    heads = {kind: _all(backend, kind) for kind in ("encoder", "decoder", "cross")}

    def job(i: int) -> tuple[str, str]:
        if i % 2:
            return "ablated", backend.runner.ablate(record, heads).translation
        text = sentences[i % len(sentences)]
        return text, backend.runner.translate(text, "es-en", 1, 12).translation

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(job, range(8)))
    ablated = {translation for name, translation in results if name == "ablated"}
    assert len(ablated) == 1  # the same every time
    for name, translation in results:
        if name != "ablated":
            assert translation == expected[name], name


def test_the_panel_is_on_the_page_and_not_in_the_api(backend):
    app = build_app(backend=backend)
    components = {c.elem_id: c for c in app.blocks.values() if getattr(c, "elem_id", None)}
    panel = ("ablate-encoder", "ablate-decoder", "ablate-cross", "ablate-button", "ablation-status")
    assert set(panel) | {"ablation-original", "ablation-translation", "ablation-links"} <= set(components)
    assert components["ablate-cross"].choices[0][0] == "L0 H0" and components["ablate-cross"].value == []
    assert list(app.get_api_info()["named_endpoints"]) == ["/translate", "/alignment", "/view", "/record"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
def test_browser_switches_heads_off(backend):
    with demo_page(backend) as (page, expect):
        source = page.locator("#source-text textarea")
        # Before any translation the button explains itself.
        show(page, "ablation")
        page.locator("#ablate-button").click()
        expect(page.locator("#ablation-status textarea")).to_have_value(
            re.compile("^Translate a sentence first"), timeout=60_000
        )
        show(page, "translate")
        source.fill("el gato negro")
        page.locator("#translate-button").click()
        translation = page.locator("#translation textarea")
        expect(translation).not_to_have_value("", timeout=120_000)
        translated = translation.input_value()
        # Counted once the figures are drawn: the source-share bar (drawn with them) runs ALTI+ in the model.
        expect(page.locator("#alignment-plot img").first).to_be_visible(timeout=60_000)
        runs = backend.runner.model_runs
        show(page, "ablation")
        for label in backend.choices.head_labels("cross"):
            page.locator("#ablate-cross").get_by_role("checkbox", name=label, exact=True).check()
        page.locator("#ablate-button").click()
        status = page.locator("#ablation-status textarea")
        expect(status).to_have_value(re.compile(r"head\(s\) off \(cross L0 H0"), timeout=120_000)
        expect(page.locator("#ablation-original textarea")).to_have_value(translated)
        expect(page.locator("#ablation-translation textarea")).not_to_have_value("", timeout=60_000)
        expect(page.locator("#ablation-original-links img").first).to_be_visible(timeout=60_000)
        expect(page.locator("#ablation-links img").first).to_be_visible(timeout=60_000)
        assert backend.runner.model_runs == runs + 1
        page.locator("#ablation-status").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "demo-ablation.png"), full_page=True)
