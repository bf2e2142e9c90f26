"""The words of the lecture's views, in English and Spanish: "Inside one head" (`vaswani_demo.head_view`), the
positional encoding and the shuffled sentence (`vaswani_demo.positions_view`), and two sentences side by side
(`vaswani_demo.contexts_view`).

`vaswani_demo.texts` adds `PAGE` to its page texts and `MESSAGES` to its run-time messages, so that every text of the
demo is found, and checked for both languages, in one place; they are kept here, one table per language, because
they are read together with these views. Plain data: this module imports nothing.
"""

from __future__ import annotations

__all__ = ["MESSAGES", "PAGE"]

#: What the "Inside one head" view says before any translation: on the page, and from the server for no record.
_HEAD_NONE = {
    "en": (
        "Translate a sentence on the first tab: then choose an attention, a layer, a head and a word here, and "
        "the head's computation for that word appears."
    ),
    "es": (
        "Traduce una oración en la primera pestaña: luego elige aquí una atención, una capa, una cabeza y una "
        "palabra, y aparece el cálculo de la cabeza para esa palabra."
    ),
}

#: The views' page texts (labels, headings, explanations), by language and key.
PAGE: dict[str, dict[str, str]] = {
    "en": {
        "tab.head": "Inside one head",
        "head.intro": (
            "## Inside one head: scaled dot-product attention on the real numbers\n"
            "Each token's vector x gives a query q = W_Q x, a key k = W_K x and a value v = W_V x (this head's "
            "slice). The query's dot product with every key is a score; the scores are divided by √d_k so that the "
            "softmax does not saturate, the keys the query may not see are masked (the future, in the decoder), "
            "the softmax turns the scores into weights, and the head's output is the weighted sum of the values. "
            "The heads' outputs are concatenated and projected by W_O. Choose an attention, a layer, a head and "
            "a word of the last translation."
        ),
        "head.empty": _HEAD_NONE["en"],
        "positions.empty": "Press the button: the model's positional encoding, and the last sentence shuffled.",
        "contexts.empty": "Press Compare to translate both sentences and compare the word in them.",
        "head.kind.label": "Attention",
        "head.layer.label": "Layer",
        "head.head.label": "Head",
        "head.query.label": "Query: click a word",
        "head.unscaled.label": "Drop ÷√d_k (watch the softmax saturate)",
        "head.figure": "The head's computation for the chosen word",
        "head.concat": "The heads concatenated, through W_O",
        "head.mask": "The decoder's causal mask",
        "tab.positions": "Positions and contexts",
        "positions.intro": (
            "## Where each word is: the positional encoding\n"
            "Attention alone does not see the order of the words: without positions, a sentence and the same "
            "words shuffled give each word the same attention. The model adds its positional encoding to the "
            "embeddings (sinusoidal or learned) or to the attention scores (relative, as in T5). The first figure "
            "is this model's encoding, read from its own module; the second shows what attention would do with "
            "the last translated sentence shuffled if there were no positions."
        ),
        "positions.button": "Show the positional encoding",
        "positions.table": "The model's positional encoding",
        "positions.order": "The last sentence, shuffled",
        "contexts.intro": (
            "## Two sentences side by side: one word, two contexts\n"
            "The same word gets a different vector in each sentence: attention mixes its context into it, layer "
            "after layer. Translate both sentences and compare the word's attention and how similar its vectors "
            "are at each encoder layer (1: the same vector)."
        ),
        "contexts.first.label": "First sentence",
        "contexts.second.label": "Second sentence",
        "contexts.word.label": "Word in both sentences",
        "contexts.direction.label": "Direction of both",
        "contexts.button": "Compare",
        "contexts.first_translation": "Translation of the first sentence",
        "contexts.second_translation": "Translation of the second sentence",
        "contexts.summary": "The word's vectors, layer by layer",
        "contexts.figure": "The word in its two contexts",
    },
    "es": {
        "tab.head": "Dentro de una cabeza",
        "head.intro": (
            "## Dentro de una cabeza: la atención de producto escalar con los números reales\n"
            "El vector x de cada token da una query q = W_Q x, una key k = W_K x y un value v = W_V x (la parte de "
            "esta cabeza). El producto escalar de la query con cada key es una puntuación; las puntuaciones se "
            "dividen por √d_k para evitar la saturación del softmax, se enmascaran las keys que la query no puede "
            "ver (el futuro, en el decoder), el softmax convierte las puntuaciones en pesos y la salida de la cabeza "
            "es la suma de los values ponderada por ellos. Las salidas de las cabezas se concatenan y se proyectan "
            "con W_O. Elige una atención, una capa, una cabeza y una palabra de la última traducción."
        ),
        "head.empty": _HEAD_NONE["es"],
        "positions.empty": "Pulsa el botón: la codificación posicional del modelo y la última oración desordenada.",
        "contexts.empty": "Pulsa Comparar para traducir las dos oraciones y comparar la palabra en ellas.",
        "head.kind.label": "Atención",
        "head.layer.label": "Capa",
        "head.head.label": "Cabeza",
        "head.query.label": "Query: haz clic en una palabra",
        "head.unscaled.label": "Quitar ÷√d_k (mira cómo se satura el softmax)",
        "head.figure": "El cálculo de la cabeza para la palabra elegida",
        "head.concat": "Las cabezas concatenadas, por W_O",
        "head.mask": "La máscara causal del decoder",
        "tab.positions": "Posiciones y contextos",
        "positions.intro": (
            "## Dónde está cada palabra: la codificación posicional\n"
            "La atención sola no ve el orden de las palabras: sin posiciones, una oración y las mismas palabras "
            "desordenadas dan a cada palabra la misma atención. El modelo suma su codificación posicional a los "
            "embeddings (sinusoidal o aprendida) o a las puntuaciones de la atención (relativa, como en T5). La "
            "primera figura es la codificación de este modelo, leída de su propio módulo; la segunda muestra qué "
            "haría la atención con la última oración traducida desordenada si no hubiera posiciones."
        ),
        "positions.button": "Mostrar la codificación posicional",
        "positions.table": "La codificación posicional del modelo",
        "positions.order": "La última oración, desordenada",
        "contexts.intro": (
            "## Dos frases lado a lado: una palabra, dos contextos\n"
            "La misma palabra recibe un vector distinto en cada oración: la atención le mezcla su contexto, capa "
            "tras capa. Traduce las dos oraciones y compara la atención de la palabra y cuánto se parecen sus "
            "vectores en cada capa del encoder (1: el mismo vector)."
        ),
        "contexts.first.label": "Primera oración",
        "contexts.second.label": "Segunda oración",
        "contexts.word.label": "Palabra de las dos oraciones",
        "contexts.direction.label": "Dirección de las dos",
        "contexts.button": "Comparar",
        "contexts.first_translation": "Traducción de la primera oración",
        "contexts.second_translation": "Traducción de la segunda oración",
        "contexts.summary": "Los vectores de la palabra, capa a capa",
        "contexts.figure": "La palabra en sus dos contextos",
    },
}

#: What the views say at run time, by language and key; `{name}` fields are filled by `vaswani_demo.texts.message`.
MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "head.none": _HEAD_NONE["en"],
        "head.failed": "This head's computation could not be shown ({error}).",
        "head.summary": (
            "**{kind}, layer {layer}, head {head}, query “{query}”** (position {position}): q, and each of the "
            "{keys} keys, has d_k = {d_k} numbers; {scaling} The query may see {seen} of the {keys} keys."
        ),
        "head.scaled": "the scores are multiplied by {scale} (1/√{d_k}).",
        "head.unscaled_scale": "the scores are multiplied by {scale}.",
        "head.entropy": (
            "Entropy of the weights: **{scaled} nats** with the model's scaling, **{unscaled} nats** without it "
            "(the largest weight: {top_scaled} → {top_unscaled}). {verdict}"
        ),
        "head.saturates": (
            "Without ÷√d_k the weights fall on fewer keys (e^entropy, the keys they effectively share: "
            "{scaled_keys} → {unscaled_keys}): the softmax saturates."
        ),
        "head.flatter": "Without ÷√d_k the weights are not more concentrated for this word.",
        "head.no_scale": (
            "This model does not divide the scores by √d_k (its scale is 1: T5 folds it into its weights), so "
            "there is nothing to drop; the entropy of the weights is {scaled} nats."
        ),
        "head.shown_unscaled": "Shown: without ÷√d_k.",
        "head.shown_scaled": "Shown: with the model's scaling.",
        "head.mask.title": "Causal mask: row {position} (“{query}”) sees itself and the words before it",
        "head.mask.keys": "keys (decoder input)",
        "head.concat.title": (
            "Concat(head_0, …, head_{heads_last}): {heads} heads × {size} numbers (only this head computed)"
        ),
        "head.concat.this": "this head ({head})",
        "head.concat.other": "head {head}",
        "head.concat.output": "× W_O: head {head}'s share of the layer's output ({size} numbers)",
        "head.mask.queries": "queries (decoder input)",
        "positions.none": "Translate a sentence on the first tab to see it shuffled; the encoding itself is above.",
        "positions.shuffled": "The last sentence shuffled: “{shuffled}”.",
        "positions.failed": "The positional encoding could not be shown ({error}).",
        "positions.summary.sinusoidal": (
            "This model adds a sinusoidal positional encoding (sines and cosines of {dimensions} frequencies) to "
            "its embeddings, for up to {positions} positions."
        ),
        "positions.summary.learned": (
            "This model adds a learned positional embedding ({positions} positions × {dimensions} numbers) to its "
            "embeddings."
        ),
        "positions.summary.relative": (
            "This model has no position vectors: it adds a learned bias to the attention scores, by the distance "
            "between query and key (relative positions, as in T5)."
        ),
        "positions.summary.other": "This model's positional encoding is of the kind “{kind}”.",
        "contexts.none": "Write two sentences and a word that both contain, then press Compare.",
        "contexts.missing": "The word “{word}” is not in {which}: write a word both sentences contain.",
        "contexts.first": "the first sentence",
        "contexts.second": "the second sentence",
        "contexts.failed": "The two sentences could not be compared ({error}).",
        "contexts.layers": (
            "Similarity (cosine) of the word's vectors in the two sentences, by encoder layer: {values}."
        ),
        "contexts.layer": "layer {layer}: {value}",
        "contexts.embedding": "input embedding: {value}",
    },
    "es": {
        "head.none": _HEAD_NONE["es"],
        "head.failed": "No se pudo mostrar el cálculo de esta cabeza ({error}).",
        "head.summary": (
            "**{kind}, capa {layer}, cabeza {head}, query “{query}”** (posición {position}): q, y cada una de las "
            "{keys} keys, tiene d_k = {d_k} números; {scaling} La query puede ver {seen} de las {keys} keys."
        ),
        "head.scaled": "las puntuaciones se multiplican por {scale} (1/√{d_k}).",
        "head.unscaled_scale": "las puntuaciones se multiplican por {scale}.",
        "head.entropy": (
            "Entropía de los pesos: **{scaled} nats** con el escalado del modelo, **{unscaled} nats** sin él "
            "(el peso mayor: {top_scaled} → {top_unscaled}). {verdict}"
        ),
        "head.saturates": (
            "Sin ÷√d_k los pesos caen en menos keys (e^entropía, las keys que se reparten en la práctica: "
            "{scaled_keys} → {unscaled_keys}): el softmax se satura."
        ),
        "head.flatter": "Sin ÷√d_k los pesos no se concentran más para esta palabra.",
        "head.no_scale": (
            "Este modelo no divide las puntuaciones por √d_k (su escala es 1: T5 lo incorpora a sus pesos), así "
            "que no hay nada que quitar; la entropía de los pesos es {scaled} nats."
        ),
        "head.shown_unscaled": "Se muestra: sin ÷√d_k.",
        "head.shown_scaled": "Se muestra: con el escalado del modelo.",
        "head.mask.title": (
            "Máscara causal: la fila {position} (“{query}”) se ve a sí misma y a las palabras anteriores"
        ),
        "head.mask.keys": "keys (entrada del decoder)",
        "head.concat.title": (
            "Concat(head_0, …, head_{heads_last}): {heads} cabezas × {size} números (solo se calcula esta)"
        ),
        "head.concat.this": "esta cabeza ({head})",
        "head.concat.other": "cabeza {head}",
        "head.concat.output": "× W_O: la parte de la cabeza {head} en la salida de la capa ({size} números)",
        "head.mask.queries": "queries (entrada del decoder)",
        "positions.none": (
            "Traduce una oración en la primera pestaña para verla desordenada; la codificación está arriba."
        ),
        "positions.shuffled": "La última oración desordenada: «{shuffled}».",
        "positions.failed": "No se pudo mostrar la codificación posicional ({error}).",
        "positions.summary.sinusoidal": (
            "Este modelo suma a sus embeddings una codificación posicional sinusoidal (senos y cosenos de "
            "{dimensions} frecuencias), para hasta {positions} posiciones."
        ),
        "positions.summary.learned": (
            "Este modelo suma a sus embeddings un embedding posicional aprendido ({positions} posiciones × "
            "{dimensions} números)."
        ),
        "positions.summary.relative": (
            "Este modelo no tiene vectores de posición: suma a las puntuaciones de la atención un sesgo aprendido "
            "según la distancia entre query y key (posiciones relativas, como en T5)."
        ),
        "positions.summary.other": "La codificación posicional de este modelo es del tipo «{kind}».",
        "contexts.none": "Escribe dos oraciones y una palabra que estén en las dos, y pulsa Comparar.",
        "contexts.missing": "La palabra «{word}» no está en {which}: escribe una palabra que tengan las dos oraciones.",
        "contexts.first": "la primera oración",
        "contexts.second": "la segunda oración",
        "contexts.failed": "No se pudieron comparar las dos oraciones ({error}).",
        "contexts.layers": (
            "Similitud (coseno) de los vectores de la palabra en las dos oraciones, por capa del encoder: {values}."
        ),
        "contexts.layer": "capa {layer}: {value}",
        "contexts.embedding": "embedding de entrada: {value}",
    },
}
