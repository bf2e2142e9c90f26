"""The demo in Spanish and English: every text of the page through Gradio's i18n (`gr.I18n`), chosen by the
browser's language; every sentence the server writes (status, refusals, notes, warnings, figure titles, the word
table's columns) in the language of the request's ``Accept-Language``. Checked on the texts themselves, on the
app's configuration, through `gradio_client` with and without the header, and in headless Chromium with the
``es-ES`` and ``en-US`` locales (marked ``browser``), which saves ``test-artifacts/demo-es.png``.

The model is the one of tests/vaswani_demo/test_app.py (the shipped checkpoint when it exists, else a tiny one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import pytest

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from vaswani_demo import DemoBackend, build_app, drawing, launch_app  # noqa: E402
from vaswani_demo.layout import page_translations  # noqa: E402
from vaswani_demo.settings import EXAMPLES  # noqa: E402
from vaswani_demo.texts import (  # noqa: E402
    CHOICES,
    LANGUAGES,
    MESSAGES,
    PAGE,
    Named,
    fields_of,
    language_from_header,
    message,
)

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

from tests.helpers import ROOT  # noqa: E402
from tests.vaswani_demo.browser import show  # noqa: E402
from tests.vaswani_demo.test_app import CHROMIUM, CHROMIUM_ARGS, _free_port  # noqa: E402

#: Texts that are the same in both languages on purpose: the course calls cross-attention by its English name.
SAME_IN_BOTH = {
    ("PAGE", "ablate.cross.label"),
    ("PAGE", "language.label"),  # the language switch names both languages, each in itself
    ("PAGE", "language.es"),
    ("PAGE", "language.en"),
    ("MESSAGES", "figure.tokens"),
    ("MESSAGES", "served.torch"),  # a library and its function's name
    ("CHOICES", "kind.cross"),
}


#: `backend` (tests/vaswani_demo/conftest.py): the demo tests' model.
DEMO_MODEL = "test"


@pytest.fixture(scope="module")
def url(backend: DemoBackend) -> str:
    app = build_app(backend=backend)
    port = _free_port()
    launch_app(app, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.close()


def _flat(texts: dict) -> dict[str, dict[str, str]]:
    """{language: {key: text}} for PAGE and MESSAGES, and CHOICES flattened to "control.value" keys."""
    return {
        language: {
            f"{key}.{value}" if isinstance(labels, Mapping) else key: label
            for key, labels in by_key.items()
            for value, label in (labels.items() if isinstance(labels, Mapping) else [(None, labels)])
        }
        for language, by_key in texts.items()
    }


# ------------------------------------------------------------------------------------------------ the texts


def test_both_languages_say_the_same_things():
    for name, texts in (("PAGE", PAGE), ("MESSAGES", MESSAGES), ("CHOICES", CHOICES)):
        flat = _flat(texts)
        assert set(flat) == set(LANGUAGES)
        english, spanish = flat["en"], flat["es"]
        assert set(english) == set(spanish), name
        for key in english:
            assert fields_of(english[key]) == fields_of(spanish[key]), (name, key)
            if (name, key) not in SAME_IN_BOTH:
                assert english[key] != spanish[key], f"{name} {key} is not translated"


def test_spanish_punctuation_and_accents():
    spanish = [text for texts in (PAGE, MESSAGES) for text in texts["es"].values()]
    spanish += [label for labels in CHOICES["es"].values() for label in labels.values()]
    for text in spanish:
        assert text.count("¿") == text.count("?"), text
        assert text.count("¡") == text.count("!"), text
    joined = " ".join(spanish)
    for word in ("traducción", "oración", "número", "está", "máximo", "¿qué aporta", "Límites", "vacío"):
        assert word in joined, word


def test_a_method_named_inside_a_sentence_keeps_its_capitals():
    """Inside a sentence a label starts in lower case, but a name in capitals keeps them ("ALTI+", not "aLTI+")."""
    for language in LANGUAGES:
        for method, label in CHOICES[language]["method"].items():
            told = Named("method", method, lower=True).told(language)
            assert told[1:] == label[1:], (language, method)
            capitals = any(character.isupper() for character in label.split(" ", 1)[0][1:])
            assert told[0] == (label[0] if capitals else label[0].lower()), (language, method, told)
        title = message(language, "figure.share", method=Named("method", "alti_plus", lower=True))
        assert "(ALTI+ (" in title and "aLTI" not in title, title
        assert message(language, "figure.share", method=Named("method", "rollout", lower=True)).endswith(
            f"({CHOICES[language]['method']['rollout'].lower()})"
        )


def test_the_ablation_intro_says_where_its_options_are():
    """The lines of the ablation tab follow the figure options of the translate tab: the intro names both, not
    options "above", which the tab does not have."""
    for language, above in (("en", "above"), ("es", "arriba")):
        intro = PAGE[language]["ablation.intro"]
        assert above not in intro
        assert PAGE[language]["tab.translate"] in intro
        assert PAGE[language]["options.label"].split(":")[0] in intro


@pytest.mark.parametrize(
    ("header", "language"),
    [
        (None, "en"),
        ("", "en"),
        ("es", "es"),
        ("es-ES", "es"),
        ("es-BO,es;q=0.9,en;q=0.8", "es"),
        ("en-US,en;q=0.9,es;q=0.8", "en"),
        ("fr-FR,fr;q=0.9", "en"),
        ("fr-FR,fr;q=0.9,es;q=0.5", "es"),
        ("es;q=0.2, en;q=0.8", "en"),
        ("es;q=0", "en"),
        ("ES-mx", "es"),
        ("*", "en"),
        ("es;q=abc,en", "en"),
        ("garbage, ;;", "en"),
    ],
)
def test_language_from_header(header, language: str):
    assert language_from_header(header) == language


# ---------------------------------------------------------------------------------------------- the page


def _i18n_keys(value) -> list[str]:
    """The i18n keys in a config value: I18nData objects and strings carrying ``__i18n__{...}``."""
    from gradio.i18n import I18nData

    if isinstance(value, I18nData):
        return [value.key]
    if isinstance(value, str):
        return re.findall(r'__i18n__\{"__type__": "translation_metadata", "key": "([^"]+)"\}', value)
    if isinstance(value, (list, tuple)):
        return [key for item in value for key in _i18n_keys(item)]
    if isinstance(value, dict):
        return [key for item in value.values() for key in _i18n_keys(item)]
    return []


def test_every_text_of_the_page_is_an_i18n_key(backend):
    from gradio.i18n import I18nData

    app = build_app(backend=backend)
    translations = page_translations(backend.choices)
    assert app.demo_i18n.translations_dict == translations
    used = set()
    for component in app.config["components"]:
        props, kind = component["props"], component["type"]
        if props.get("visible") is False:  # never shown (the API's trigger)
            continue
        used |= set(_i18n_keys(props))
        for prop in ("label", "info", "placeholder"):
            assert props.get(prop) is None or isinstance(props[prop], I18nData), (kind, prop, props[prop])
        if kind in ("markdown", "button", "html"):
            assert _i18n_keys(props["value"]), (kind, props["value"])
        if kind in ("radio", "dropdown"):
            assert all(isinstance(label, I18nData) for label, _ in props["choices"]), props["choices"]
        if kind == "checkboxgroup":  # head codes, the same in both languages: "L1 H2", layer 1, head 2
            assert all(re.fullmatch(r"L\d+ H\d+", label) for label, _ in props["choices"])
    for language in LANGUAGES:
        assert used <= set(translations[language]), used - set(translations[language])
    assert {"intro", "translate.button", "ablation.intro", "ablate.button", "choice.layer.mean"} <= used
    # The API description stays in English, whatever the page shows.
    endpoint = app.get_api_info()["named_endpoints"]["/translate"]
    assert endpoint["parameters"][0]["label"] == "Text to translate"
    assert "__i18n__" not in str(endpoint)


def test_the_course_examples_come_in_both_languages():
    spanish = [text for text, direction in EXAMPLES if direction == "es-en"]
    english = [text for text, direction in EXAMPLES if direction == "en-es"]
    assert spanish == ["el gato negro", "El gato se comió el ratón.", "El ratón comió al gato.",
                       "El gato come pescado fresco.", "El banco aprobó el crédito."]  # fmt: skip
    assert len(english) == len(spanish) and "The cat ate the mouse." in english


# ---------------------------------------------------------------------------------------- the backend's words


def test_the_backend_speaks_spanish(backend):
    result = backend.runner.translate("el gato negro", "es-en", 1, 12, language="es")
    assert re.match(r"Traducido del español al inglés en \d+,\d\d s \(tamaño del haz 1; ", result.status)
    assert backend.runner.translate("", "es-en", language="es").status.startswith("El cuadro de texto está vacío")
    assert backend.runner.translate("🙂🐈😀", "es-en", language="es").status.startswith("El modelo no conoce ninguno")
    assert "nunca ha visto 🐈" in backend.runner.translate("el gato 🐈 negro", "es-en", language="es").status
    refused = backend.runner.translate("el gato negro", "es-en", "abc", language="es").status
    assert (
        refused
        == f"El tamaño del haz debe ser un número entero entre 1 y {backend.choices.max_beams}; se recibió 'abc'."
    )
    assert backend.runner.translate("hola", "xx", language="es").status.startswith("Elige una dirección de traducción")
    assert ("promedio de todas las capas", "mean") in backend.choices.layer_choices("es")
    assert backend.choices.head_choices("es")[1] == ("cabeza 0", "0")
    assert drawing.pair_headers("es") == ["palabra destino", "palabra fuente", "peso"]
    assert "Traduce una oración" in drawing.placeholder("es")
    assert 'title="bertviz, vista del modelo: Cross-attention"' in drawing.view(result.record, "model", "cross", "es")
    figure, _ = drawing.alignment(result.record, "mean", "mean", "words", False, True, "es")
    ax = figure.axes[0]
    assert ax.get_title() == (
        "Qué palabra de la fuente mira cada palabra traducida\n(promedio de las capas, todas las cabezas)"
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("palabras de la fuente", "palabras traducidas")
    links = drawing.alignment_links(result.record, "0", "1", True, True, "es")
    assert links.axes[0].get_title() == (
        "Cada palabra traducida unida a la palabra de la fuente que más mira\n(capa 0, cabeza 1, desplazado)"
    )
    assert backend.runner.ablate(None, {}, language="es").status.startswith("Primero traduce una oración")
    none = backend.runner.ablate(result.record, {"cross": []}, language="es").status
    assert none == "Marca al menos una cabeza que quieras apagar."
    ablated = backend.runner.ablate(result.record, {"cross": ["L0 H0"]}, language="es").status
    assert re.match(r"1 cabeza\(s\) apagada\(s\) \(cross L0 H0\), traducido en \d+,\d\d s: la traducción ", ablated)


@pytest.mark.slow
def test_api_answers_in_the_language_asked_for(url: str):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    def client_for(headers: dict) -> Client:
        return Client(url, verbose=False, analytics_enabled=False, headers=headers)

    def ask(headers: dict, *args, **options) -> tuple:
        return client_for(headers).predict(*args, **options, api_name="/translate")

    spanish = {"Accept-Language": "es-ES,es;q=0.9,en;q=0.5"}
    client = client_for(spanish)
    translation, status, pairs = client.predict("the black cat", "en-es", num_beams=1, api_name="/translate")
    assert translation and status.startswith("Traducido del inglés al español"), status
    assert pairs["headers"] == ["target word", "source word", "weight"]  # the API's table keeps its column names
    assert 'title="bertviz, vista de cabezas: Cross-attention"' in client.predict(kind="cross", api_name="/view")
    with pytest.raises(AppError, match="^La unidad del mapa de calor debe ser"):
        client.predict(unit="px", api_name="/alignment")
    with pytest.raises(AppError, match="^Todavía no hay ninguna traducción: llama primero a /translate"):
        client_for(spanish).predict(api_name="/record")
    assert ask(spanish, "   ", "es-en")[1].startswith("El texto solo tiene espacios en blanco")
    assert ask({}, "   ", "es-en")[1].startswith("The text is only blank space")
    assert ask({"Accept-Language": "fr-FR"}, "el gato negro", "es-en", num_beams=1)[1].startswith("Translated")


# ------------------------------------------------------------------------------------------------ in a browser

#: What each locale must show: page texts (by key), a label of the direction radio, the start of the status line
#: of an es->en and an en->es translation, the table's column names, the refusal of an empty text.
LOCALES = {
    "es-ES": ("es", "Español → inglés", "Traducido del español al inglés", "Traducido del inglés al español"),
    "en-US": ("en", "Spanish → English", "Translated Spanish → English", "Translated English → Spanish"),
}


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("locale", list(LOCALES))
def test_browser_shows_the_page_in_its_language(url: str, backend: DemoBackend, locale: str):
    playwright = pytest.importorskip("playwright.sync_api")
    language, direction_label, status_es_en, status_en_es = LOCALES[locale]
    page_text = page_translations(backend.choices)[language]
    other = "en" if language == "es" else "es"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale=locale)
            page = context.new_page()
            page.goto(url, wait_until="domcontentloaded")
            expect = playwright.expect
            source = page.locator("#source-text textarea")
            expect(source).to_be_visible(timeout=60_000)
            expect(page.locator("h1").first).to_have_text(page_text["title"], timeout=60_000)
            expect(page).to_have_title(page_text["title"], timeout=60_000)
            expect(page.locator("#source-text")).to_contain_text(page_text["text.label"])
            assert source.get_attribute("placeholder") == page_text["text.placeholder"]
            expect(page.locator("#translate-button")).to_have_text(page_text["translate.button"])
            expect(page.locator("#direction")).to_contain_text(direction_label)
            show(page, "ablation")
            expect(page.locator("#ablate-button")).to_have_text(page_text["ablate.button"])
            show(page, "translate", "options.label", language)
            # The layer control starts from the model's alignment configuration, labelled in the page's language.
            layer = backend.choices.default_choices()["layer"]
            layer_label = dict((value, label) for label, value in backend.choices.layer_choices(language))[layer]
            expect(page.locator("#layer input")).to_have_value(layer_label)
            expect(page.get_by_text(page_text["examples.label"])).to_be_visible()
            expect(page.get_by_text(page_text["decoding.label"])).to_be_visible()
            header = page.locator("#alignment-pairs th").first
            expect(header).to_contain_text(drawing.pair_headers(language)[0], timeout=60_000)
            shown = page.locator("body").inner_text()
            assert "__i18n__" not in shown and "translation_metadata" not in shown
            # No label or button of the other language (those of its texts that appear in none of this one's).
            mine = " ".join(page_translations(backend.choices)[language].values())
            for key, text in page_translations(backend.choices)[other].items():
                if key.endswith((".label", ".button")) and text not in mine:
                    assert text not in shown, f"{key}: {text!r} is shown in {locale}"

            source.fill("el gato negro")
            page.locator("#translate-button").click()
            expect(page.locator("#translation textarea")).not_to_have_value("", timeout=120_000)
            expect(page.locator("#status textarea")).to_have_value(re.compile("^" + status_es_en), timeout=60_000)
            expect(page.locator("#alignment-plot img").first).to_be_visible(timeout=60_000)
            # Each aligned pair names a source word.
            expect(page.locator("#alignment-pairs")).to_contain_text(re.compile(r"\b(el|gato|negro)\b"), timeout=60_000)
            expect(header).to_contain_text(drawing.pair_headers(language)[0])
            for tab in ("translate", "bertviz"):  # the tabs are named in the page's language
                expect(page.locator(f"#tab-{tab}-button")).to_have_text(page_text[f"tab.{tab}"])
            show(page, "bertviz")
            frame = page.frame_locator("#bertviz iframe")
            expect(frame.locator("svg").first).to_be_visible(timeout=60_000)
            kind_title = CHOICES[language]["kind"]["encoder"]
            expect(page.locator("#bertviz iframe")).to_have_attribute("title", re.compile(kind_title))
            if language == "es":
                # Chromium does not paint iframes outside the viewport: make the viewport as tall as the page.
                height = page.evaluate("document.documentElement.scrollHeight")
                page.set_viewport_size({"width": 1280, "height": min(int(height), 8000)})
                page.wait_for_timeout(1000)
                artifacts = ROOT / "test-artifacts"
                artifacts.mkdir(exist_ok=True)
                page.screenshot(path=str(artifacts / "demo-es.png"), full_page=True)

            show(page, "translate")
            # The course example's English counterpart translates the other way.
            page.get_by_role("button", name=re.compile(r"^the black cat")).click()
            expect(source).to_have_value("the black cat", timeout=60_000)
            expect(page.locator("#status textarea")).to_have_value(re.compile("^" + status_en_es), timeout=120_000)

            # An empty text is refused in the page's language, in the status line and a warning.
            source.fill("")
            page.locator("#translate-button").click()
            refusal = MESSAGES[language]["text.empty"]
            expect(page.locator("#status textarea")).to_have_value(refusal, timeout=60_000)
            expect(page.get_by_test_id("toast-text").first).to_have_text(refusal, timeout=60_000)

            if language == "es":
                # ?lang=en in a Spanish browser: English labels and English status lines; Enter translates.
                english = page_translations(backend.choices)["en"]
                page.goto(url + "?lang=en", wait_until="domcontentloaded")
                expect(page.locator("#translate-button")).to_have_text(english["translate.button"], timeout=60_000)
                source.fill("el gato negro")
                source.press("Enter")
                expect(page.locator("#status textarea")).to_have_value(re.compile("^Translated"), timeout=120_000)
                assert source.input_value() == "el gato negro"  # Enter did not add a line
        finally:
            browser.close()
