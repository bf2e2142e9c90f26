"""Every word the demo shows, in English and Spanish, and how a request's language is chosen.

Two kinds of text:

* `PAGE`: the page itself (headings, labels, buttons, explanations). `vaswani_demo.layout` gives each one to Gradio
  as a key of a `gr.I18n` object, and the browser shows it in its own language (Spanish for ``es``, ``es-BO``, ...;
  English otherwise). A few of them are templates filled once per app with its model's values (`page_texts`).
* `MESSAGES`: what the demo says at run time (the status line, refusals, notes, warnings). Gradio's i18n does
  not translate values computed on the server, so these are formatted in the language of the request
  (`language_from_header`, read from its ``Accept-Language`` header) by `message`.

`CHOICES` names the values of the radio buttons and dropdowns in both languages. The explanation methods' labels
and descriptions are their registry entries' (`vaswani_inspect.attribution.registry`), read when asked. The lecture's
views keep their texts in `vaswani_demo.lecture_texts`, and the "What causes it?" tab its own in
`vaswani_demo.causes_texts`, added to `PAGE` and `MESSAGES` here. Nothing else is imported here, so that the parts
without Gradio (`checks`, `choices`, `runner`, `drawing`) can use it.

Long because it is the demo's whole phrase book, one table per language, which must be read (and kept) side by side.
"""

from __future__ import annotations

import re
import string
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .causes_texts import MESSAGES as _CAUSES_MESSAGES
from .causes_texts import PAGE as _CAUSES_PAGE
from .lecture_texts import MESSAGES as LECTURE_MESSAGES
from .lecture_texts import PAGE as LECTURE_PAGE

__all__ = [
    "CHOICES",
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "MESSAGES",
    "PAGE",
    "Named",
    "Offered",
    "Refusal",
    "ViewNames",
    "choices",
    "decimal",
    "fields_of",
    "language_from_header",
    "message",
    "PAGE_LANGUAGE_COOKIE",
    "page_language_cookie",
    "page_text",
    "page_texts",
]

#: The languages the demo speaks; the first is the default (a browser or API client asking for neither gets it).
LANGUAGES = ("en", "es")
DEFAULT_LANGUAGE = "en"

#: The page's texts, by language and key; `{name}` fields are filled by `page_texts`.
PAGE: dict[str, dict[str, str]] = {
    "en": {
        "title": "Attention Is All You Need: translate and inspect",
        "intro": (
            "# Attention Is All You Need: translate and inspect\n"
            "A Transformer (Vaswani et al., 2017) written from scratch as a Hugging Face transformers model, trained "
            "on Tatoeba Spanish ↔ English sentence pairs. Translate a sentence, then look at what its attention "
            "heads did. Model: `{model}`. Limits: {max_chars} characters and {max_tokens} tokens per input."
        ),
        "intro.other": (
            "# Attention Is All You Need: translate and inspect\n"
            "The attention toolkit of a Transformer written from scratch (Vaswani et al., 2017), here on another "
            "translation model: `{model}`. Translate a sentence, then look at what its attention heads did. Limits: "
            "{max_chars} characters and {max_tokens} tokens per input."
        ),
        "text.label": "Text to translate",
        "text.placeholder": "Type a sentence in Spanish or English…",
        "direction.label": "Direction",
        "decoding.label": "Decoding options",
        "beams.label": "Beam size (1 = greedy)",
        "new_tokens.label": "Maximum length of the translation (tokens)",
        "translate.button": "Translate",
        "translation.label": "Translation",
        "status.label": "Status",
        "record.label": "Attention record (JSON)",
        "examples.label": "Course examples (click one to translate it)",
        "alignment.intro": (
            "## Cross-attention: which source words each target word looked at\n"
            "Rows are target words (the attention that *produced* each word, or with *shift* the step where the "
            "word is the decoder input), columns source words; red boxes and lines mark each target word's most "
            "attended source word. The controls start at the model's own alignment configuration. Attention is "
            "not an explanation: a head's weights show where it read from, not why the model chose its words; a "
            "head trained to follow a statistical aligner is an aligner.\n\n"
            "The explanation method redraws the word heatmap, the lines and the word pairs with another reading of "
            "where each target word comes from: attention norms, rollout, gradients or value zeroing. The sentence "
            "under it says how faithful that method measured on this model."
        ),
        "method.label": "Explanation method",
        "methods.missing": (
            "Saliency, input × gradient and integrated gradients need captum, which is not installed here: "
            "`pip install 'hf-vaswani[explain]'`."
        ),
        "share.label": "Source or target prefix, per target word",
        "layer.label": "Decoder layer",
        "head.label": "Head",
        "shift.label": "Shift (read each word where it is the decoder input)",
        "skip_punctuation.label": "Skip punctuation",
        "unit.label": "Heatmap of",
        "plot.label": "Cross-attention heatmap",
        "links.label": "Alignment lines",
        "pairs.label": "Aligned words",
        "ablation.intro": (
            "## Switch heads off: what does a head do for the translation?\n"
            "Attention weights show where a head reads from, not what it does for the output. Tick heads (layer "
            "L, head H, from 0) and translate the last sentence again with them switched off: their output is "
            "zeroed before the layer's output projection (Michel et al. 2019). The translation and its alignment "
            'lines (read with the layer, head, shift and punctuation chosen on the Translate tab, under "Figure '
            'options") appear next to the ones with every head on. '
            "`hf-vaswani head-importance` measures every head this way on a test set."
        ),
        "ablate.encoder.label": "Encoder self-attention",
        "ablate.decoder.label": "Decoder self-attention",
        "ablate.cross.label": "Cross-attention",
        "ablate.button": "Translate with these heads off",
        "ablation_status.label": "Heads off",
        "ablation_original.label": "Translation, every head on",
        "ablation_original_links.label": "Alignment, every head on",
        "ablation_translation.label": "Translation, the ticked heads off",
        "ablation_links.label": "Alignment, the ticked heads off",
        "bertviz.intro": (
            "## Inside the heads (bertviz)\n"
            "Head view: lines from each token to the tokens it attends to (hover a token; double-click a head "
            "colour to show it alone). Model view: every layer × head at once (click a thumbnail to enlarge). "
            "Decoder rows are labelled with the decoder *input* token: the row of token t predicts token t + 1."
        ),
        "view.label": "bertviz view",
        "kind.label": "Attention",
        "views.label": "bertviz view",
        "placeholder": "Translate a sentence to see its attention heads here.",
        "language.label": "Idioma / Language",
        "language.es": "Español",
        "language.en": "English",
        "head.fixed": "The model's aligner reads its own heads: choose a layer to choose a head.",
        "head.free": "Which head of the chosen layer to read.",
        "present.label": "Presentation mode (large type)",
        "tab.translate": "Translate",
        "tab.steps": "Step by step",
        "tab.ablation": "Switch heads off",
        "tab.bertviz": "Inside the heads (bertviz)",
        "failures.label": "Failures to discuss (click one to translate it)",
        "failures.note": (
            'The model gets these wrong: "The bank approved the loan" becomes "el banco aprobó el présto", an '
            'invented word ("loan" is rare in its training sentences, so it glues pieces together); "Me senté '
            'en el banco de la plaza" becomes "I sat on the bank of the square" (it knows "banco" only as a '
            "bank, never as a bench). Ask the class why."
        ),
        "about.label": "What the figures show, and the other explanation methods",
        "options.label": "Figure options: layer, head, shift, punctuation",
        "more.label": "More: source or target prefix per word, attention record (JSON)",
        "legend": (
            "**Special tokens**: `>>en<<` / `>>es<<` language token, tells the model which language to translate "
            "into; `<s>` start of sentence; `</s>` end of sentence; `▁` a word starts here (pieces without it "
            "continue the previous word); `<pad>` padding, filler that is never read; `<unk>` a character the "
            "model has never seen."
        ),
        "legend.other": (
            "**Special tokens**: `</s>` end of sentence; `▁` a word starts here (pieces without it continue the "
            "previous word); `<pad>` padding, filler that is never read; `<unk>` a character the model has never "
            "seen. A model may add its own (a language code, a task prefix): the heatmap shows them as they are."
        ),
        "encoder.intro": (
            "### Encoder self-attention: how the source words read each other\n"
            'Each row is a word of the sentence and how much it looks at every word of the same sentence ("gato" '
            'and "negro": the adjective and its noun). Choose a layer and a head, or their mean.'
        ),
        "encoder.label": "Encoder self-attention heatmap",
        "encoder.layer.label": "Encoder layer",
        "figure.empty": "Translate a sentence on the Translate tab to see this figure.",
        "figure.empty.ablation": (
            "Translate a sentence first, then tick heads and press “Translate with these heads off”."
        ),
        "download.empty": "Nothing to save yet: translate a sentence first.",
        "steps.empty": "Translate a sentence on the Translate tab: its decoding appears here, one step at a time.",
        "download.png": "Download PNG",
        "download.svg": "Download SVG",
        "steps.intro": (
            "## The decoder, step by step\n"
            "The model writes the translation one piece at a time. At each step it scores every piece of its "
            "vocabulary, keeps the best hypotheses (the beam) and looks at the source words. Move the slider, or "
            "use the buttons, to walk through the steps of the last translation."
        ),
        "steps.slider": "Step",
        "steps.previous": "◀ Previous step",
        "steps.next": "Next step ▶",
        "steps.status": "Step",
        "steps.candidates": "Candidates for the next piece",
        "steps.attention": "Which source word the model looks at in this step",
        "steps.target": "Translation so far (the future, still unknown, in grey)",
        "steps.tree": "Beam search tree",
    },
    "es": {
        "title": "Attention Is All You Need: traducir e inspeccionar",
        "intro": (
            "# Attention Is All You Need: traducir e inspeccionar\n"
            "Un Transformer (Vaswani et al., 2017) escrito desde cero como modelo de Hugging Face transformers y "
            "entrenado con pares de oraciones español ↔ inglés de Tatoeba. Traduce una oración y mira qué hicieron "
            "sus cabezas de atención. Modelo: `{model}`. Límites: {max_chars} caracteres y {max_tokens} tokens por "
            "entrada."
        ),
        "intro.other": (
            "# Attention Is All You Need: traducir e inspeccionar\n"
            "Las herramientas de atención de un Transformer escrito desde cero (Vaswani et al., 2017), aquí con "
            "otro modelo de traducción: `{model}`. Traduce una oración y mira qué hicieron sus cabezas de atención. "
            "Límites: {max_chars} caracteres y {max_tokens} tokens por entrada."
        ),
        "text.label": "Texto que traducir",
        "text.placeholder": "Escribe una oración en español o en inglés…",
        "direction.label": "Dirección",
        "decoding.label": "Opciones de decodificación",
        "beams.label": "Tamaño del haz (1 = búsqueda voraz)",
        "new_tokens.label": "Longitud máxima de la traducción (tokens)",
        "translate.button": "Traducir",
        "translation.label": "Traducción",
        "status.label": "Estado",
        "record.label": "Registro de atención (JSON)",
        "examples.label": "Ejemplos del curso (haz clic en uno para traducirlo)",
        "alignment.intro": (
            "## Cross-attention (atención cruzada): en qué palabras fuente se fijó cada palabra destino\n"
            "Las filas son las palabras destino (la atención que *produjo* cada palabra o, con *desplazamiento*, "
            "el paso en que la palabra es la entrada del decoder) y las columnas, las palabras fuente; los "
            "recuadros y las líneas rojas marcan la palabra fuente a la que más atiende cada palabra destino. Los "
            "controles empiezan en la configuración de alineamiento del propio modelo. La atención no es una "
            "explicación: los pesos de una cabeza muestran de dónde leyó, no por qué el modelo eligió sus palabras; "
            "una cabeza entrenada para imitar a un alineador estadístico es un alineador.\n\n"
            "El método de explicación vuelve a dibujar el mapa de calor de palabras, las líneas y los pares de "
            "palabras con otra lectura de dónde sale cada palabra destino: normas de la atención, rollout, "
            "gradientes o anulación de valores. La frase de debajo dice cuán fiel resultó ese método al medirlo en "
            "este modelo."
        ),
        "method.label": "Método de explicación",
        "methods.missing": (
            "Saliencia, entrada × gradiente y gradientes integrados necesitan captum, que no está instalado aquí: "
            "`pip install 'hf-vaswani[explain]'`."
        ),
        "share.label": "Fuente o prefijo destino, por palabra destino",
        "layer.label": "Capa del decoder",
        "head.label": "Cabeza",
        "shift.label": "Desplazamiento (leer cada palabra en el paso en que es la entrada del decoder)",
        "skip_punctuation.label": "Omitir la puntuación",
        "unit.label": "Mapa de calor por",
        "plot.label": "Mapa de calor de la cross-attention",
        "links.label": "Líneas de alineamiento",
        "pairs.label": "Palabras alineadas",
        "ablation.intro": (
            "## Apagar cabezas: ¿qué aporta una cabeza a la traducción?\n"
            "Los pesos de atención muestran de dónde lee una cabeza, no qué aporta a la salida. Marca cabezas "
            "(capa L, cabeza H, desde 0) y vuelve a traducir la última oración con ellas apagadas: su salida se "
            "pone a cero antes de la proyección de salida de la capa (Michel et al. 2019). La traducción y sus "
            "líneas de alineamiento (leídas con la capa, la cabeza, el desplazamiento y la puntuación elegidos en la "
            'pestaña Traducir, en "Opciones de la figura") aparecen junto a las que se obtienen con todas las '
            "cabezas encendidas. `hf-vaswani head-importance` mide así cada cabeza en un conjunto de "
            "prueba."
        ),
        "ablate.encoder.label": "Self-attention del encoder",
        "ablate.decoder.label": "Self-attention del decoder",
        "ablate.cross.label": "Cross-attention",
        "ablate.button": "Traducir con estas cabezas apagadas",
        "ablation_status.label": "Cabezas apagadas",
        "ablation_original.label": "Traducción con todas las cabezas encendidas",
        "ablation_original_links.label": "Alineamiento con todas las cabezas encendidas",
        "ablation_translation.label": "Traducción con las cabezas marcadas apagadas",
        "ablation_links.label": "Alineamiento con las cabezas marcadas apagadas",
        "bertviz.intro": (
            "## Dentro de las cabezas (bertviz)\n"
            "Vista de cabezas: líneas de cada token a los tokens a los que atiende (pasa el cursor sobre un token; "
            "haz doble clic en el color de una cabeza para verla sola). Vista del modelo: todas las capas × cabezas "
            "a la vez (haz clic en una miniatura para ampliarla). Las filas del decoder llevan el token de "
            "*entrada* del decoder: la fila del token t predice el token t + 1."
        ),
        "view.label": "Vista de bertviz",
        "kind.label": "Atención",
        "views.label": "Vista de bertviz",
        "placeholder": "Traduce una oración para ver aquí sus cabezas de atención.",
        "language.label": "Idioma / Language",
        "language.es": "Español",
        "language.en": "English",
        "head.fixed": "El alineador del modelo lee sus propias cabezas: elige una capa para elegir una cabeza.",
        "head.free": "Qué cabeza de la capa elegida se lee.",
        "present.label": "Modo presentación (letra grande)",
        "tab.translate": "Traducir",
        "tab.steps": "Paso a paso",
        "tab.ablation": "Apagar cabezas",
        "tab.bertviz": "Dentro de las cabezas (bertviz)",
        "failures.label": "Fallos para comentar en clase (haz clic en uno para traducirlo)",
        "failures.note": (
            'El modelo se equivoca con estas: "The bank approved the loan" sale como "el banco aprobó el '
            'présto", una palabra inventada ("loan" es rara en sus oraciones de entrenamiento, así que pega '
            'trozos); "Me senté en el banco de la plaza" sale como "I sat on the bank of the square" (solo '
            'conoce "banco" como entidad financiera, nunca como asiento). Pregunta a la clase por qué.'
        ),
        "about.label": "Qué muestran las figuras, y los otros métodos de explicación",
        "options.label": "Opciones de la figura: capa, cabeza, desplazamiento, puntuación",
        "more.label": "Más: fuente o prefijo por palabra, registro de atención (JSON)",
        "legend": (
            "**Tokens especiales**: `>>en<<` / `>>es<<` token de idioma, le dice al modelo a qué idioma traducir; "
            "`<s>` inicio de la oración; `</s>` fin de la oración; `▁` aquí empieza una palabra (los trozos sin él "
            "continúan la palabra anterior); `<pad>` relleno, que nunca se lee; `<unk>` un carácter que el modelo "
            "nunca ha visto."
        ),
        "legend.other": (
            "**Tokens especiales**: `</s>` fin de la oración; `▁` aquí empieza una palabra (los trozos sin él "
            "continúan la palabra anterior); `<pad>` relleno, que nunca se lee; `<unk>` un carácter que el modelo "
            "nunca ha visto. Un modelo puede añadir los suyos (un código de idioma, un prefijo de tarea): el mapa de "
            "calor los muestra tal cual."
        ),
        "encoder.intro": (
            "### Self-attention del encoder: cómo se leen entre sí las palabras de la fuente\n"
            'Cada fila es una palabra de la oración y cuánto mira a cada palabra de esa misma oración ("gato" y '
            '"negro": el adjetivo y su sustantivo). Elige una capa y una cabeza, o su media.'
        ),
        "encoder.label": "Mapa de calor de la self-attention del encoder",
        "encoder.layer.label": "Capa del encoder",
        "figure.empty": "Traduce una oración en la pestaña Traducir para ver esta figura.",
        "figure.empty.ablation": (
            "Traduce primero una oración; luego marca cabezas y pulsa “Traducir con estas cabezas apagadas”."
        ),
        "download.empty": "Aún no hay nada que guardar: traduce primero una oración.",
        "steps.empty": "Traduce una oración en la pestaña Traducir: aquí aparece su decodificación, paso a paso.",
        "download.png": "Descargar PNG",
        "download.svg": "Descargar SVG",
        "steps.intro": (
            "## El decoder, paso a paso\n"
            "El modelo escribe la traducción trozo a trozo. En cada paso puntúa cada trozo de su vocabulario, "
            "se queda con las mejores hipótesis (el haz) y mira las palabras de la fuente. Mueve el control, o "
            "usa los botones, para recorrer los pasos de la última traducción."
        ),
        "steps.slider": "Paso",
        "steps.previous": "◀ Paso anterior",
        "steps.next": "Paso siguiente ▶",
        "steps.status": "Paso",
        "steps.candidates": "Candidatos para el siguiente trozo",
        "steps.attention": "Qué palabra de la fuente mira el modelo en este paso",
        "steps.target": "Traducción hasta aquí (el futuro, aún desconocido, en gris)",
        "steps.tree": "Árbol de la búsqueda en haz",
    },
}


class _Registered(Mapping[str, str]):
    """Texts in one language read from a registry each time they are asked for (`texts()` builds them), so that a
    method or view registered after this module loads is named too, and this module imports nothing when it loads."""

    def __init__(self, texts: Callable[[], dict[str, str]]) -> None:
        self._texts = texts

    def __getitem__(self, key: str) -> str:
        return self._texts()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts())

    def __len__(self) -> int:
        return len(self._texts())


def _method_texts(language: str, part: str, prefix: str = "") -> _Registered:
    """One text of every explanation method, by method (`prefix` + name): the method's registry entry carries it
    (`vaswani_inspect.attribution.registry.Method`, its `label` or `about`), so that a new method brings its words."""

    def texts() -> dict[str, str]:
        from vaswani_inspect.attribution.registry import method_entries

        return {f"{prefix}{method.name}": getattr(method, part)[language] for method in method_entries()}

    return _Registered(texts)


def _view_labels(language: str) -> _Registered:
    """The labels of the views, {name: label}, from `vaswani_inspect.views.VIEW_REGISTRY`: a view added there is
    offered by the demo without a word written here."""

    def texts() -> dict[str, str]:
        from vaswani_inspect.views import VIEW_REGISTRY

        return {name: view.label(language) for name, view in VIEW_REGISTRY.items()}

    return _Registered(texts)


#: The labels of the controls' values, by language, control and value (methods' and views': their registry entries').
CHOICES: dict[str, dict[str, Mapping[str, str]]] = {
    "en": {
        "direction": {"es-en": "Spanish → English", "en-es": "English → Spanish"},
        "kind": {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"},
        "view": _view_labels("en"),
        "unit": {"words": "Words, alignment links boxed", "tokens": "Subword tokens"},
        "language": {"es": "Spanish", "en": "English"},
        "method": _method_texts("en", "label"),
    },
    "es": {
        "direction": {"es-en": "Español → inglés", "en-es": "Inglés → español"},
        "kind": {
            "encoder": "Self-attention del encoder",
            "decoder": "Self-attention del decoder",
            "cross": "Cross-attention",
        },
        "view": _view_labels("es"),
        "unit": {"words": "Palabras, con los enlaces de alineamiento recuadrados", "tokens": "Tokens de subpalabra"},
        "language": {"es": "español", "en": "inglés"},
        "method": _method_texts("es", "label"),
    },
}

#: What the demo says at run time, by language and key; `{name}` fields are filled by `message`. The methods'
#: descriptions, ``method.about.NAME``, come with the methods (`_method_texts`, added below the table).
MESSAGES: dict[str, Mapping[str, str]] = {
    "en": {
        # choices of the layer and head controls
        "layer.mean": "average of all layers",
        "layer.model": "the model's aligner: {settings}",
        "layer.aligner": "The model's aligner reads {settings}.",
        "layer.one": "layer {layer}",
        "head.mean": "average of all heads",
        "head.one": "head {head}",
        "head.several": "heads {heads}",
        # the figures' titles and axes
        "figure.alignment": "Which source word each translated word looks at\n({settings})",
        "figure.tokens": "Attention of each decoder step over the source pieces\n({settings})",
        "figure.links": "Each translated word joined to the source word it looks at most\n({settings})",
        "figure.source_words": "source words",
        "figure.target_words": "translated words",
        "figure.keys": "keys (source)",
        "figure.queries": "queries (decoder input)",
        "figure.encoder": "Which source word each source word looks at, encoder self-attention\n({settings})",
        "figure.encoder.keys": "words looked at",
        "figure.encoder.queries": "words looking",
        "figure.layers.mean": "mean of layers",
        "figure.layer": "layer {layer}",
        "figure.heads.all": "all heads",
        "figure.head": "head {head}",
        "figure.heads": "heads {heads}",
        "figure.shifted": "shifted",
        "head.fixed": "The model's aligner reads its own heads: choose a layer to choose a head.",
        "head.free": "Which head of the chosen layer to read.",
        "steps.none": "Translate a sentence: its decoding steps appear here.",
        "steps.failed": "The decoding steps could not be traced ({error}).",
        "steps.where": "Step {step} of {steps}: the model chose {piece} (probability {probability}).",
        "steps.where.end": "Step {step} of {steps}: the model ended the sentence (probability {probability}).",
        "steps.probability": "probability",
        "steps.weight": "attention weight",
        "steps.candidates.title": "Step {step}: the most probable next pieces\n(orange: the one taken)",
        "steps.attention.title": "Step {step}: which source word the model looks at",
        "steps.target.title": (
            "Step {step}: the translation so far\n(grey: not written yet, hidden from the decoder by its mask)"
        ),
        "steps.tree.title": (
            "Beam search ({beams} hypotheses kept per step, {steps} steps): the chosen path in orange, "
            "the probability of each piece on its edge"
        ),
        "steps.differs.ctranslate2": (
            "The steps retrace generate(), which here translates “{traced}”; the translation above was chosen by "
            "CTranslate2."
        ),
        "steps.differs.generate": (
            "The steps retrace the decoding, which here ends in “{traced}”, not in the translation above."
        ),
        "steps.placeholders": (
            "The steps retrace what the model translated: “{decoded}”, with numbers and names behind placeholders, "
            "into “{traced}”; the originals go back in afterwards."
        ),
        "steps.guard_gave_up": (
            "The steps retrace what the model translated first: “{decoded}”, with numbers and names behind "
            "placeholders, into “{traced}”, which lost a placeholder; the translation above is of the sentence as "
            "it is."
        ),
        # the aligned-words table
        "pairs.target": "target word",
        "pairs.source": "source word",
        "pairs.weight": "weight",
        # refused input
        "direction": "Choose a translation direction: {offered}.",
        "text.type": "The text must be a string, got {kind}.",
        "text.empty": "The text box is empty: type a sentence to translate.",
        "text.blank": "The text is only blank space: type a sentence to translate.",
        "text.chars": (
            "The text is {count} characters long; this demo translates at most {limit} characters (a sentence or "
            "two). Please shorten it."
        ),
        "text.tokens": (
            "The text is {count} tokens long, but the model reads at most {limit} tokens (its language token, code or "
            "prefix and the end of sentence included). Please shorten it."
        ),
        "text.unknown": (
            "The model does not know any of these characters ({shown}), and they make up most of the text: it would "
            "read them as <unk> (unknown), so there is next to nothing to translate. Type words in Spanish or "
            "English."
        ),
        "option.beams": "The beam size must be a whole number from {low} to {high}, got {value}.",
        "option.new_tokens": "The maximum length must be a whole number from {low} to {high}, got {value}.",
        "option.layer": 'The decoder layer must be "mean" or a whole number from 0 to {high}, got {value}.',
        "option.head": (
            'The head must be "mean", a head from 0 to {high} or several heads separated by commas ("1,3"), '
            "got {value}."
        ),
        "option.unit": 'The heatmap unit must be "words" or "tokens", got {value}.',
        "option.view": "The bertviz view must be {views}, got {value}.",
        "option.kind": 'The attention kind must be "encoder", "decoder" or "cross", got {value}.',
        "option.shift": "The shift must be true or false, got {value}.",
        "option.skip_punctuation": "Skip punctuation must be true or false, got {value}.",
        "failed.extract": "This text cannot be translated: {error}",
        "failed.model": (
            "Something went wrong while translating ({error}); the server log has the details. Try another sentence."
        ),
        # the status line and its notes
        "status": (
            "Translated {source} → {target} in {seconds} s (beam size {beams}; {source_tokens} source tokens, "
            "{output_tokens} output tokens)."
        ),
        "text.special": (
            "The text is made of the model's special tokens ({shown}): they mark the start, end or padding of a "
            "sentence, they are not words, so there is nothing to translate. Type words in Spanish or English."
        ),
        "text.language": (
            "The text contains the language token {token}: the language to translate into comes from the "
            "direction, not from the text. Remove it and choose the direction."
        ),
        "text.encoding": (
            "The text contains {shown}, half of a character (a lone UTF-16 surrogate) that no text can hold: "
            "it was damaged on its way here. Type or paste it again."
        ),
        "note.special": "{shown}: the model's special tokens, not words, read as markers.",
        "note.unknown.one": "The model has never seen {shown}: it read it as <unk>.",
        "note.unknown.many": "The model has never seen {shown}: it read them as <unk>.",
        "note.empty": "The model produced an empty translation.",
        "note.cut": "The translation stopped at the maximum length ({limit} tokens).",
        # drawing
        "failed.attention": "The attention could not be drawn ({error}).",
        "failed.alignment": "The alignment could not be drawn ({error}).",
        "failed.links": "The alignment lines could not be drawn ({error}).",
        "failed.view": "The view could not be drawn ({error}).",
        "failed.record": "The attention record could not be written ({error}).",
        "api.first": (
            "There is no translation yet: call /translate first, with the same client (the figures and the record "
            "come from the last translation of its session)."
        ),
        "api.values": (
            "The endpoint {endpoint} takes {wanted} values ({names}), in this order, got {got}: send one for each "
            "(null for its default)."
        ),
        "view.title": "bertviz {view}: {kind}",
        # switching heads off
        "ablation.first": "Translate a sentence first: the heads are switched off for that sentence.",
        "ablation.none": "Tick at least one head to switch off.",
        "ablation.kind": 'Unknown attention kind {kind}: choose "encoder", "decoder" or "cross".',
        "ablation.head": "The model has no {kind} head {label}: from {first} to {last}.",
        "ablation.failed": "Something went wrong with the heads off ({error}).",
        "ablation.status": (
            "{count} head(s) off ({labels}), translated in {seconds} s: the translation {outcome}. A head that is "
            "off still computes its attention weights (the alignment shows them if it reads that head), but they no "
            "longer reach the output."
        ),
        "ablation.changed": "changed",
        "ablation.same": "is the same",
        # explanation methods
        "option.method": "The explanation method must be one of {methods}, got {value}.",
        "explain.needs": "{method} needs captum, which is not installed: pip install 'hf-vaswani[explain]'.",
        "explain.failed": "{method} could not be computed ({error}); the server log has the details.",
        "figure.attribution": "{method}: source words per target word",
        "figure.attribution_links": "aligned words, {method}",
        "figure.share": "where each target word comes from ({method})",
        "figure.share.instead": "where each target word comes from ({method}; the chosen method does not measure it)",
        "figure.share.source": "source",
        "figure.share.prefix": "target prefix",
        "figure.share.axis": "share",
        "method.controls": (
            "Layer, head and shift are attention's choices: they do not change this method's heatmap, lines or word "
            "pairs (skip punctuation does), and the subword heatmap always shows the cross-attention."
        ),
        "method.runs": "It runs the model once per translation; the other controls redraw without running it again.",
        "measured.none": "{method} was not measured for this model: its folder has no {file}.",
        "measured.several": (
            "{method} is not measured here: this page serves several models, and each folder's {file} measures its own."
        ),
        # who serves each direction, the direction switch of a one-direction page, a model without an aligner
        "served.line": "{directions}: `{model}` ({architecture}), translated with {backend}.",
        "served.ctranslate2": "CTranslate2 (the attention shown comes from one PyTorch pass over its translation)",
        "served.torch": "PyTorch (generate())",
        "direction.only": "Direction: this page translates {direction} only",
        "or": "or",
        "aligner.one": "This model has no trained aligner (`config.alignment`)",
        "aligner.several": "These models have no trained aligner (`config.alignment`)",
        "aligner.some": "Not every model here has a trained aligner (`config.alignment`)",
        "aligner.start": (
            "{which}: the layer, head and shift controls start at decoder layer {layer} (counted from 0), the "
            "penultimate one, its heads averaged, not shifted: where a Transformer trained without alignment "
            "supervision usually aligns best (Garg et al. 2019). Try the other layers and heads."
        ),
        "measured.unlisted": "{method} was not measured for this model: its {file} does not list it.",
        "measured.on": "Measured on {pairs} test pairs each way",
        "measured.on.unknown": "Measured on this model's test pairs",
        "measured.aligner": " with the model's aligner (whatever layer and head are chosen here)",
        "measured.ks": " ({ks} of them)",
        "measured.comprehensiveness": (
            "removing the source words this method ranks highest{ks} lowers a target word's log-probability by "
            "{value} nats on average ({random}higher is more faithful)"
        ),
        "measured.sufficiency": "keeping only them loses {value} nats ({random}lower is more faithful)",
        "measured.ablation": (
            "its top source word is the one the cross-attention heads that matter look at (each head switched off "
            "alone) for {value} of the target words ({random}higher agrees more)"
        ),
        "measured.random": "random words: {value}; ",
        "measured.aer": "read as an aligner its AER is {values}{attention}",
        "measured.attention_aer": " (the model's attention: {values})",
        "measured.ms": "about {ms} ms per sentence where it was measured",
        "ablation.reference": (
            "Heads are switched off in the PyTorch model, which with every head on translates this as “{reference}” "
            "(CTranslate2 chose the translation above): the comparison is with PyTorch's."
        ),
    },
    "es": {
        "layer.mean": "promedio de todas las capas",
        "layer.model": "el alineador del modelo: {settings}",
        "layer.aligner": "El alineador del modelo lee {settings}.",
        "layer.one": "capa {layer}",
        "head.mean": "promedio de todas las cabezas",
        "head.one": "cabeza {head}",
        "head.several": "cabezas {heads}",
        "figure.alignment": "Qué palabra de la fuente mira cada palabra traducida\n({settings})",
        "figure.tokens": "Atención de cada paso del decoder sobre los trozos de la fuente\n({settings})",
        "figure.links": "Cada palabra traducida unida a la palabra de la fuente que más mira\n({settings})",
        "figure.source_words": "palabras de la fuente",
        "figure.target_words": "palabras traducidas",
        "figure.keys": "keys (fuente)",
        "figure.queries": "queries (entrada del decoder)",
        "figure.encoder": (
            "Qué palabra de la fuente mira cada palabra de la fuente, self-attention del encoder\n({settings})"
        ),
        "figure.encoder.keys": "palabras miradas",
        "figure.encoder.queries": "palabras que miran",
        "figure.layers.mean": "promedio de las capas",
        "figure.layer": "capa {layer}",
        "figure.heads.all": "todas las cabezas",
        "figure.head": "cabeza {head}",
        "figure.heads": "cabezas {heads}",
        "figure.shifted": "desplazado",
        "head.fixed": "El alineador del modelo lee sus propias cabezas: elige una capa para elegir una cabeza.",
        "head.free": "Qué cabeza de la capa elegida se lee.",
        "steps.none": "Traduce una oración: aquí aparecen sus pasos de decodificación.",
        "steps.failed": "No se pudieron seguir los pasos de decodificación ({error}).",
        "steps.where": "Paso {step} de {steps}: el modelo eligió {piece} (probabilidad {probability}).",
        "steps.where.end": "Paso {step} de {steps}: el modelo terminó la oración (probabilidad {probability}).",
        "steps.probability": "probabilidad",
        "steps.weight": "peso de la atención",
        "steps.candidates.title": "Paso {step}: los trozos siguientes más probables\n(naranja: el elegido)",
        "steps.attention.title": "Paso {step}: qué palabra de la fuente mira el modelo",
        "steps.target.title": (
            "Paso {step}: la traducción hasta aquí\n(gris: aún no escrita, la máscara se la oculta al decoder)"
        ),
        "steps.tree.title": (
            "Búsqueda en haz ({beams} hipótesis por paso, {steps} pasos): el camino elegido en naranja, "
            "la probabilidad de cada trozo en su arista"
        ),
        "steps.differs.ctranslate2": (
            "Los pasos rehacen generate(), que aquí traduce “{traced}”; la traducción de arriba la eligió CTranslate2."
        ),
        "steps.differs.generate": (
            "Los pasos rehacen la decodificación, que aquí acaba en “{traced}”, no en la traducción de arriba."
        ),
        "steps.placeholders": (
            "Los pasos rehacen lo que tradujo el modelo: “{decoded}”, con los números y nombres tras marcadores, "
            "en “{traced}”; los originales se reponen después."
        ),
        "steps.guard_gave_up": (
            "Los pasos rehacen lo que tradujo el modelo primero: “{decoded}”, con los números y nombres tras "
            "marcadores, en “{traced}”, que perdió un marcador; la traducción de arriba es de la oración tal cual."
        ),
        "pairs.target": "palabra destino",
        "pairs.source": "palabra fuente",
        "pairs.weight": "peso",
        "direction": "Elige una dirección de traducción: {offered}.",
        "text.type": "El texto debe ser una cadena de caracteres; se recibió {kind}.",
        "text.empty": "El cuadro de texto está vacío: escribe una oración para traducirla.",
        "text.blank": "El texto solo tiene espacios en blanco: escribe una oración para traducirla.",
        "text.chars": (
            "El texto tiene {count} caracteres; esta demo traduce como máximo {limit} caracteres (una o dos "
            "oraciones). Acórtalo, por favor."
        ),
        "text.tokens": (
            "El texto tiene {count} tokens, pero el modelo lee como máximo {limit} tokens (contando su token, código "
            "o prefijo de idioma y el de fin de oración). Acórtalo, por favor."
        ),
        "text.unknown": (
            "El modelo no conoce ninguno de estos caracteres ({shown}), y son la mayor parte del texto: los leería "
            "como <unk> (desconocido), así que no queda casi nada que traducir. Escribe palabras en español o en "
            "inglés."
        ),
        "option.beams": "El tamaño del haz debe ser un número entero entre {low} y {high}; se recibió {value}.",
        "option.new_tokens": "La longitud máxima debe ser un número entero entre {low} y {high}; se recibió {value}.",
        "option.layer": 'La capa del decoder debe ser "mean" (el promedio) o un número entero entre 0 y {high}; se '
        "recibió {value}.",
        "option.head": (
            'La cabeza debe ser "mean" (el promedio), una cabeza entre 0 y {high} o varias separadas por comas '
            '("1,3"); se recibió {value}.'
        ),
        "option.unit": 'La unidad del mapa de calor debe ser "words" (palabras) o "tokens"; se recibió {value}.',
        "option.view": "La vista de bertviz debe ser {views}; se recibió {value}.",
        "option.kind": 'El tipo de atención debe ser "encoder", "decoder" o "cross"; se recibió {value}.',
        "option.shift": "El desplazamiento debe ser true (verdadero) o false (falso); se recibió {value}.",
        "option.skip_punctuation": (
            "Omitir la puntuación debe ser true (verdadero) o false (falso); se recibió {value}."
        ),
        "failed.extract": "Este texto no se puede traducir: {error}",
        "failed.model": (
            "Algo salió mal al traducir ({error}); el registro del servidor tiene los detalles. Prueba con otra "
            "oración."
        ),
        "status": (
            "Traducido del {source} al {target} en {seconds} s (tamaño del haz {beams}; {source_tokens} tokens de "
            "entrada, {output_tokens} tokens de salida)."
        ),
        "text.special": (
            "El texto está hecho de tokens especiales del modelo ({shown}): marcan el inicio, el final o el relleno "
            "de una frase, no son palabras, así que no hay nada que traducir. Escribe palabras en español o en "
            "inglés."
        ),
        "text.language": (
            "El texto contiene el token de idioma {token}: el idioma al que traducir lo da la dirección, no el "
            "texto. Quítalo y elige la dirección."
        ),
        "text.encoding": (
            "El texto contiene {shown}, la mitad de un carácter (un sustituto UTF-16 suelto) que ningún texto "
            "puede contener: se dañó por el camino. Vuelve a escribirlo o a pegarlo."
        ),
        "note.special": "{shown}: tokens especiales del modelo, no palabras, leídos como marcas.",
        "note.unknown.one": "El modelo nunca ha visto {shown}: lo leyó como <unk>.",
        "note.unknown.many": "El modelo nunca ha visto {shown}: los leyó como <unk>.",
        "note.empty": "El modelo produjo una traducción vacía.",
        "note.cut": "La traducción se detuvo en la longitud máxima ({limit} tokens).",
        "failed.attention": "No se pudo dibujar la atención ({error}).",
        "failed.alignment": "No se pudo dibujar el alineamiento ({error}).",
        "failed.links": "No se pudieron dibujar las líneas de alineamiento ({error}).",
        "failed.view": "No se pudo dibujar la vista ({error}).",
        "failed.record": "No se pudo escribir el registro de atención ({error}).",
        "api.first": (
            "Todavía no hay ninguna traducción: llama primero a /translate con el mismo cliente (las figuras y el "
            "registro salen de la última traducción de su sesión)."
        ),
        "api.values": (
            "El punto de acceso {endpoint} recibe {wanted} valores ({names}), en este orden, y ha recibido {got}: "
            "envía uno para cada uno (null para su valor por defecto)."
        ),
        "view.title": "bertviz, {view}: {kind}",
        "ablation.first": "Primero traduce una oración: las cabezas se apagan para esa oración.",
        "ablation.none": "Marca al menos una cabeza que quieras apagar.",
        "ablation.kind": 'Tipo de atención desconocido {kind}: elige "encoder", "decoder" o "cross".',
        "ablation.head": "El modelo no tiene la cabeza {label} de {kind}: las cabezas van de {first} a {last}.",
        "ablation.failed": "Algo salió mal con las cabezas apagadas ({error}).",
        "ablation.status": (
            "{count} cabeza(s) apagada(s) ({labels}), traducido en {seconds} s: la traducción {outcome}. Una cabeza "
            "apagada sigue calculando sus pesos de atención (el alineamiento los muestra si lee esa cabeza), pero "
            "ya no llegan a la salida."
        ),
        "ablation.changed": "cambió",
        "ablation.same": "es la misma",
        "option.method": "El método de explicación debe ser uno de estos: {methods}; se recibió {value}.",
        "explain.needs": "{method} necesita captum, que no está instalado: pip install 'hf-vaswani[explain]'.",
        "explain.failed": "No se pudo calcular {method} ({error}); el registro del servidor tiene los detalles.",
        "figure.attribution": "{method}: palabras fuente por palabra destino",
        "figure.attribution_links": "palabras alineadas, {method}",
        "figure.share": "de dónde sale cada palabra destino ({method})",
        "figure.share.instead": "de dónde sale cada palabra destino ({method}; el método elegido no lo mide)",
        "figure.share.source": "fuente",
        "figure.share.prefix": "prefijo destino",
        "figure.share.axis": "parte",
        "method.controls": (
            "La capa, la cabeza y el desplazamiento son opciones de la atención: no cambian el mapa de calor, las "
            "líneas ni los pares de palabras de este método (omitir la puntuación sí), y el mapa de calor de "
            "subpalabras siempre muestra la cross-attention."
        ),
        "method.runs": (
            "Ejecuta el modelo una vez por traducción; los demás controles vuelven a dibujar sin ejecutarlo de nuevo."
        ),
        "measured.none": "{method} no se midió para este modelo: su carpeta no tiene {file}.",
        "measured.several": (
            "{method} no se mide aquí: esta página sirve varios modelos y el {file} de cada carpeta mide el suyo."
        ),
        "served.line": "{directions}: `{model}` ({architecture}), traducido con {backend}.",
        "served.ctranslate2": (
            "CTranslate2 (la atención que se muestra sale de una pasada de PyTorch sobre su traducción)"
        ),
        "served.torch": "PyTorch (generate())",
        "direction.only": "Dirección: esta página solo traduce {direction}",
        "or": "o",
        "aligner.one": "Este modelo no tiene un alineador entrenado (`config.alignment`)",
        "aligner.several": "Estos modelos no tienen un alineador entrenado (`config.alignment`)",
        "aligner.some": "No todos los modelos de esta página tienen un alineador entrenado (`config.alignment`)",
        "aligner.start": (
            "{which}: los controles de capa, cabeza y desplazamiento empiezan en la capa {layer} del decoder "
            "(contando desde 0), la penúltima, con sus cabezas promediadas y sin desplazamiento: donde un Transformer "
            "entrenado sin supervisión de alineamiento suele alinear mejor (Garg et al. 2019). Prueba las demás "
            "capas y cabezas."
        ),
        "measured.unlisted": "{method} no se midió para este modelo: su {file} no lo incluye.",
        "measured.on": "Medido en {pairs} pares de prueba en cada dirección",
        "measured.on.unknown": "Medido en los pares de prueba de este modelo",
        "measured.aligner": " con el alineador del modelo (sean cuales sean la capa y la cabeza elegidas aquí)",
        "measured.ks": " (las {ks} primeras)",
        "measured.comprehensiveness": (
            "quitar las palabras fuente que este método pone más arriba{ks} baja la log-probabilidad de una palabra "
            "destino en {value} nats de media ({random}cuanto más, más fiel)"
        ),
        "measured.sufficiency": "quedarse solo con ellas pierde {value} nats ({random}cuanto menos, más fiel)",
        "measured.ablation": (
            "su palabra fuente primera es la que miran las cabezas de cross-attention que importan (apagando cada "
            "una sola) en el {value} de las palabras destino ({random}cuanto más, más coincide)"
        ),
        "measured.random": "palabras al azar: {value}; ",
        "measured.aer": "leído como alineador, su AER es {values}{attention}",
        "measured.attention_aer": " (la atención del modelo: {values})",
        "measured.ms": "unos {ms} ms por oración donde se midió",
        "ablation.reference": (
            "Las cabezas se apagan en el modelo de PyTorch, que con todas las cabezas traduce esto como “{reference}” "
            "(la traducción de arriba la eligió CTranslate2): la comparación es con la de PyTorch."
        ),
    },
}

# The "What causes it?" tab's and the "why this word" texts live in their own table (`causes_texts`).
for _language in LANGUAGES:
    PAGE[_language].update(_CAUSES_PAGE[_language])
    MESSAGES[_language].update(_CAUSES_MESSAGES[_language])
# The lecture's views keep their words in their own tables (`vaswani_demo.lecture_texts`), added here.
for _language in LANGUAGES:
    PAGE[_language].update(LECTURE_PAGE[_language])
    MESSAGES[_language].update(LECTURE_MESSAGES[_language])

MESSAGES = {
    language: ChainMap(texts, _method_texts(language, "about", "method.about.")) for language, texts in MESSAGES.items()
}


class Named:
    """A control's value as a field of a message: it is written with its label in the message's language
    (`CHOICES`), with a lower-case first letter for `lower` (inside a sentence), unless its first word is a name
    written in capitals ("ALTI+" stays "ALTI+", not "aLTI+")."""

    def __init__(self, control: str, value: str, *, lower: bool = False) -> None:
        self.control, self.value, self.lower = control, value, lower

    def told(self, language: str) -> str:
        label = CHOICES[_supported(language)][self.control][self.value]
        return _in_sentence(label) if self.lower else label


def _in_sentence(label: str) -> str:
    """`label` as it is written inside a sentence: its first letter in lower case, unless its first word has
    another capital (an acronym or a name: "ALTI+", "SmoothGrad")."""
    first = label.split(" ", 1)[0]
    if any(character.isupper() for character in first[1:]):
        return label
    return label[:1].lower() + label[1:]


class Offered:
    """A control's values as one field of a message, "Spanish → English (es-en) or English → Spanish (en-es)": each
    label in the message's language (in lower case in Spanish, which writes language names so), with its value."""

    def __init__(self, control: str, values: tuple[str, ...]) -> None:
        self.control, self.values = control, values

    def told(self, language: str) -> str:
        lower = _supported(language) == "es"
        labels = [f"{Named(self.control, value, lower=lower).told(language)} ({value})" for value in self.values]
        return _either(labels, language)


class ViewNames:
    """The registered views' names as one field of a message, '"head" or "model"', each followed by what it means
    in a language that does not read it as its own word ('"head" (cabezas) o "model" (modelo)': the entries'
    `glosses`)."""

    def told(self, language: str) -> str:
        from vaswani_inspect.views import VIEW_REGISTRY

        language = _supported(language)
        names = [
            f'"{name}" ({view.glosses[language]})' if language in view.glosses else f'"{name}"'
            for name, view in VIEW_REGISTRY.items()
        ]
        return _either(names, language)


def _either(items: list[str], language: str) -> str:
    """The items as one phrase, "a, b or c", in `language`."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {MESSAGES[_supported(language)]['or']} {items[-1]}"


class Refusal(ValueError):
    """Bad input, as a message key and its fields, so that it can be told in the language of the request
    (`message`); ``str(error)`` is the English message."""

    def __init__(self, key: str, **fields: Any) -> None:
        self.key = key
        self.fields = fields
        super().__init__(message(DEFAULT_LANGUAGE, key, **fields))

    def told(self, language: str) -> str:
        """The message in `language`."""
        return message(language, self.key, **self.fields)


def _supported(language: Any) -> str:
    return language if language in LANGUAGES else DEFAULT_LANGUAGE


def message(language: str, key: str, **fields: Any) -> str:
    """The run-time message `key` in `language` (English for a language the demo does not speak), its fields
    filled in (a `Named` field with its label in that language)."""
    told = {
        name: value.told(language) if isinstance(value, (Named, Offered, ViewNames)) else value
        for name, value in fields.items()
    }
    return MESSAGES[_supported(language)][key].format(**told)


def page_text(language: str, key: str) -> str:
    """A text of the page (`PAGE`) in `language`, for the server to send itself (the view area's placeholder)."""
    return PAGE[_supported(language)][key]


def choices(language: str, control: str) -> list[tuple[str, str]]:
    """(label, value) pairs of a control ("direction", "kind", "view", "unit") in `language`."""
    return [(label, value) for value, label in CHOICES[_supported(language)][control].items()]


def decimal(language: str, number: float, places: int = 2) -> str:
    """`number` with `places` decimals, written as `language` writes it (a decimal comma in Spanish)."""
    text = f"{number:.{places}f}"
    return text.replace(".", ",") if _supported(language) == "es" else text


def page_texts(fields: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """`PAGE` with its `{name}` fields filled from `fields` (model name, limits), by language."""
    return {language: {key: text.format(**fields) for key, text in texts.items()} for language, texts in PAGE.items()}


_TAG = re.compile(r"^\s*([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*\s*$")


def language_from_header(accept_language: str | None) -> str:
    """The language to answer in for an HTTP ``Accept-Language`` header (``"es-ES,es;q=0.9,en;q=0.8"``): the
    supported language the client prefers most (the highest ``q``, the first listed among equals), else English."""
    ranked: list[tuple[float, int, str]] = []
    for position, item in enumerate((accept_language or "").split(",")):
        tag, _, parameters = item.partition(";")
        found = _TAG.match(tag)
        if not found:
            continue
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        language = found.group(1).lower()
        if language in LANGUAGES and weight > 0:
            ranked.append((-weight, position, language))
    return min(ranked)[2] if ranked else DEFAULT_LANGUAGE


def fields_of(template: str) -> set[str]:
    """The `{name}` fields of a template (for the tests that check both languages fill the same ones)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


#: The cookie in which the page keeps the language it shows (set by `vaswani_demo.page_script`), so that the
#: server answers the page's events in the same language as its labels.
PAGE_LANGUAGE_COOKIE = "vaswani_lang"


def page_language_cookie(cookie_header: str | None) -> str | None:
    """The page's language from a ``Cookie`` header (`PAGE_LANGUAGE_COOKIE`), or None when it names none of
    `LANGUAGES`."""
    for item in (cookie_header or "").split(";"):
        name, _, value = item.strip().partition("=")
        if name == PAGE_LANGUAGE_COOKIE and value.strip() in LANGUAGES:
            return value.strip()
    return None
