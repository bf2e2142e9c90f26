"""The words of the "What causes it?" tab and of the step-by-step view's "why this word and not that one", in
English and Spanish: `PAGE` (the page's texts, Gradio i18n keys) and `MESSAGES` (what the server writes: summaries,
refusals, figure titles). `vaswani_demo.texts` adds them to its own tables, so that `message` and the page find them
and its checks (both languages, the same fields) hold for them too. Nothing is imported here.
"""

from __future__ import annotations

__all__ = ["MESSAGES", "PAGE"]

PAGE: dict[str, dict[str, str]] = {
    "en": {
        "tab.causes": "What causes it?",
        "causes.intro": (
            "## What causes the translation? Patching one sentence into another\n"
            "Attention weights say where a head read from, not what decided the output. Here the model reads two "
            "sentences that differ in one word, the same length in tokens: the first one, whose translation is "
            "explained, and a second one. Each cell of the heatmaps is one activation of the first sentence's run "
            "copied into the second sentence's run (activation patching, Meng et al. 2022; Heimersheim & Nanda "
            "2024): 1 means that activation alone brings the first translation back, 0 that it changes nothing. "
            "The *gradient approximation* (attribution patching) takes one forward and one backward pass; *exact* "
            "runs the model once per cell."
        ),
        "causes.clean.label": "First sentence (its translation is the one explained)",
        "causes.clean.placeholder": "Translate a sentence in the first tab, or type one here…",
        "causes.corrupted.label": "Second sentence: the same number of tokens, one word changed",
        "causes.corrupted.placeholder": "The first sentence with one word changed…",
        "causes.pairs.label": "Course pairs (click one to fill both sentences)",
        "causes.method.label": "Method",
        "causes.method.attribution": "Gradient approximation (fast)",
        "causes.method.exhaustive": "Exact: one run per cell (slower)",
        "causes.button": "Find what causes the translation",
        "causes.empty": (
            "Type a first sentence (or translate one in the first tab) and a second one with one word changed, or "
            "pick a course pair, then click “Find what causes the translation”."
        ),
        "lens.none": "Click “Find what causes the translation”: the lenses of the first sentence appear here.",
        "why.none": "Translate a sentence: the candidates of each step are offered here.",
        "causes.summary.label": "What brings the first translation back",
        "causes.encoder.label": "Patching: encoder layer × source position",
        "causes.decoder.label": "Patching: decoder layer × target position",
        "causes.encoder_heads.label": "Patching: encoder self-attention heads",
        "causes.decoder_heads.label": "Patching: decoder self-attention heads",
        "causes.cross_heads.label": "Patching: cross-attention heads",
        "causes.lens.intro": (
            "## What each layer would write: the logit lens and the decoder lens\n"
            "The logit lens reads every decoder layer's output through the model's own final norm and output layer: "
            "each cell is the word that layer would write at that position of the first sentence's translation "
            "(nostalgebraist 2020); the last row is the model itself. The decoder lens gives the decoder the output "
            "of each encoder layer instead of the last one and lets it translate (Langedijk et al. 2023): where the "
            "encoder has settled on the meaning."
        ),
        "causes.lens.label": "Logit lens: the word each decoder layer would write",
        "causes.decoder_lens.label": "Decoder lens: the translation from each encoder layer",
        "why.intro": (
            "### Why this word and not that one?\n"
            "Pick another candidate of this step: the gradients of log p(chosen) − log p(candidate) say which "
            "source words push the model toward the word it wrote rather than the candidate (contrastive "
            "attribution, Yin & Neubig 2022)."
        ),
        "why.foil.label": "Candidate to compare with",
        "why.button": "Why this word and not that one?",
        "why.summary.label": "Why this word",
        "why.figure.label": "Source words: chosen word against the candidate",
    },
    "es": {
        "tab.causes": "¿Qué causa la traducción?",
        "causes.intro": (
            "## ¿Qué causa la traducción? Trasplantar una oración en otra\n"
            "Los pesos de atención dicen de dónde leyó una cabeza, no qué decidió la salida. Aquí el modelo lee dos "
            "oraciones que se diferencian en una palabra y tienen los mismos tokens: la primera, cuya traducción se "
            "explica, y una segunda. Cada celda de los mapas de calor es una activación de la pasada de la primera "
            "oración copiada en la pasada de la segunda (*activation patching*, Meng et al. 2022; Heimersheim y "
            "Nanda 2024): 1 quiere decir que esa activación sola devuelve la primera traducción, 0 que no cambia "
            "nada. La *aproximación por gradientes* (attribution patching) hace una pasada hacia delante y otra "
            "hacia atrás; la *exacta* ejecuta el modelo una vez por celda."
        ),
        "causes.clean.label": "Primera oración (se explica su traducción)",
        "causes.clean.placeholder": "Traduce una oración en la primera pestaña o escribe una aquí…",
        "causes.corrupted.label": "Segunda oración: los mismos tokens, con una palabra cambiada",
        "causes.corrupted.placeholder": "La primera oración con una palabra cambiada…",
        "causes.pairs.label": "Pares del curso (haz clic en uno para rellenar las dos oraciones)",
        "causes.method.label": "Método",
        "causes.method.attribution": "Aproximación por gradientes (rápida)",
        "causes.method.exhaustive": "Exacto: una pasada por celda (más lento)",
        "causes.button": "Buscar qué causa la traducción",
        "causes.empty": (
            "Escribe una primera oración (o traduce una en la primera pestaña) y una segunda con una palabra "
            "cambiada, o elige un par del curso, y haz clic en «Buscar qué causa la traducción»."
        ),
        "lens.none": "Haz clic en «Buscar qué causa la traducción»: aquí aparecen las lenses de la primera oración.",
        "why.none": "Traduce una oración: aquí se ofrecen los candidatos de cada paso.",
        "causes.summary.label": "Qué devuelve la primera traducción",
        "causes.encoder.label": "Patching: capa del encoder × posición de la fuente",
        "causes.decoder.label": "Patching: capa del decoder × posición de la traducción",
        "causes.encoder_heads.label": "Patching: cabezas de self-attention del encoder",
        "causes.decoder_heads.label": "Patching: cabezas de self-attention del decoder",
        "causes.cross_heads.label": "Patching: cabezas de cross-attention",
        "causes.lens.intro": (
            "## Qué escribiría cada capa: la logit lens y la decoder lens\n"
            "La logit lens lee la salida de cada capa del decoder con la normalización final y la capa de salida "
            "del propio modelo: cada celda es la palabra que esa capa escribiría en esa posición de la traducción "
            "de la primera oración (nostalgebraist 2020); la última fila es el modelo mismo. La decoder lens le da "
            "al decoder la salida de cada capa del encoder en lugar de la última y lo deja traducir (Langedijk et "
            "al. 2023): dónde ha fijado ya el encoder el sentido."
        ),
        "causes.lens.label": "Logit lens: la palabra que escribiría cada capa del decoder",
        "causes.decoder_lens.label": "Decoder lens: la traducción desde cada capa del encoder",
        "why.intro": (
            "### ¿Por qué esta palabra y no otra?\n"
            "Elige otro candidato de este paso: los gradientes de log p(elegida) − log p(candidata) dicen qué "
            "palabras de la fuente empujan al modelo hacia la palabra que escribió y no hacia la candidata "
            "(atribución contrastiva, Yin y Neubig 2022)."
        ),
        "why.foil.label": "Candidata con la que comparar",
        "why.button": "¿Por qué esta palabra y no otra?",
        "why.summary.label": "Por qué esta palabra",
        "why.figure.label": "Palabras de la fuente: la elegida frente a la candidata",
    },
}

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "causes.second": "Type the second sentence: the first one with one word changed, the same number of tokens.",
        "causes.length": (
            "The two sentences must have the same number of tokens, one for one: the first reads {clean_count} "
            "({clean_tokens}), the second {corrupted_count} ({corrupted_tokens}). Change one word for a word the "
            "model cuts into as many pieces."
        ),
        "causes.same": "The two sentences read the same tokens ({tokens}): change one word of the second one.",
        "causes.refused": "These sentences cannot be compared: {error}",
        "causes.failed": "The causes could not be computed ({error}); the server's log has the details.",
        "causes.summary": (
            "“{clean}” → “{target}”: its log-probability is {clean_metric} from the first sentence and "
            "{corrupted_metric} from the second (“{corrupted}”). What brings it back ({method}, 1 = all of it):"
        ),
        "causes.no_gap": (
            "The second sentence gives “{target}” the same log-probability as the first ({clean_metric}): there is "
            "nothing for patching to bring back. Change a word that changes the translation."
        ),
        "causes.position": "{site}, layer {layer}, at “{word}”: {effect}",
        "causes.head": "{site}, layer {layer}, head {head}: {effect}",
        "causes.took": "Computed in {seconds} s.",
        "causes.progress": "Patching, one run per cell",
        "causes.method.attribution": "gradient approximation",
        "causes.method.exhaustive": "exact patching",
        "causes.site.encoder": "encoder output",
        "causes.site.decoder": "decoder output",
        "causes.site.encoder_heads": "encoder self-attention",
        "causes.site.decoder_heads": "decoder self-attention",
        "causes.site.cross_heads": "cross-attention",
        "causes.figure": "{site}: how much of “{target}” each cell brings back ({method})",
        "lens.title": "Logit lens: what each decoder layer would write next (its probability in the cell)",
        "lens.axis.position": "position in the translation (the word the model wrote)",
        "lens.axis.layer": "decoder layer",
        "lens.from": (
            "From which decoder layer on (counted from 1, as in the grid) each word of the translation is the lens's "
            "first choice (–: only where the model's search chose it): {words}."
        ),
        "lens.embeddings": "input (embeddings)",
        "lens.failed": "The lens could not be read ({error}).",
        "decoder_lens.layer": "encoder layer",
        "decoder_lens.translation": "translation the decoder writes from it",
        "why.pick": "Pick a candidate of step {step} to compare with {chosen}.",
        "why.end": "The model had already ended its translation at this step: choose an earlier step.",
        "why.foil": "{foil} is not a candidate of step {step}: pick one from the list.",
        "why.summary": (
            "Step {step}: the model wrote {chosen} rather than {foil} (log p(chosen) − log p(candidate) = "
            "{difference}). The source words that weigh most in that difference: {words}."
        ),
        "why.failed": "The contrast could not be computed ({error}).",
        "why.title": "Step {step}: which source words make {chosen} more likely than {foil}",
        "why.axis": "share of the difference",
    },
    "es": {
        "causes.second": (
            "Escribe la segunda oración: la primera con una palabra cambiada y el mismo número de tokens."
        ),
        "causes.length": (
            "Las dos oraciones deben tener el mismo número de tokens, uno por uno: la primera se lee en "
            "{clean_count} ({clean_tokens}) y la segunda en {corrupted_count} ({corrupted_tokens}). Cambia una "
            "palabra por otra que el modelo corte en tantos trozos como ella."
        ),
        "causes.same": "Las dos oraciones dan los mismos tokens ({tokens}): cambia una palabra de la segunda.",
        "causes.refused": "Estas oraciones no se pueden comparar: {error}",
        "causes.failed": "No se pudieron calcular las causas ({error}); el registro del servidor tiene los detalles.",
        "causes.summary": (
            "«{clean}» → “{target}”: su log-probabilidad es {clean_metric} desde la primera oración y "
            "{corrupted_metric} desde la segunda («{corrupted}»). Lo que la devuelve ({method}, 1 = toda):"
        ),
        "causes.no_gap": (
            "La segunda oración le da a “{target}” la misma log-probabilidad que la primera ({clean_metric}): el "
            "patching no tiene nada que devolver. Cambia una palabra que cambie la traducción."
        ),
        "causes.position": "{site}, capa {layer}, en «{word}»: {effect}",
        "causes.head": "{site}, capa {layer}, cabeza {head}: {effect}",
        "causes.took": "Calculado en {seconds} s.",
        "causes.progress": "Trasplantando, una pasada por celda",
        "causes.method.attribution": "aproximación por gradientes",
        "causes.method.exhaustive": "patching exacto",
        "causes.site.encoder": "salida del encoder",
        "causes.site.decoder": "salida del decoder",
        "causes.site.encoder_heads": "self-attention del encoder",
        "causes.site.decoder_heads": "self-attention del decoder",
        "causes.site.cross_heads": "cross-attention (atención cruzada)",
        "causes.figure": "{site}: cuánto de “{target}” devuelve cada celda ({method})",
        "lens.title": (
            "Logit lens: qué escribiría a continuación cada capa del decoder (en la celda, su probabilidad)"
        ),
        "lens.axis.position": "posición en la traducción (la palabra que escribió el modelo)",
        "lens.axis.layer": "capa del decoder",
        "lens.from": (
            "Desde qué capa del decoder (contando desde 1, como en la cuadrícula) es cada palabra de la traducción la "
            "primera opción de la lens (–: solo donde la eligió la búsqueda del modelo): {words}."
        ),
        "lens.embeddings": "entrada (embeddings)",
        "lens.failed": "No se pudo leer la lens ({error}).",
        "decoder_lens.layer": "capa del encoder",
        "decoder_lens.translation": "traducción que escribe el decoder desde ella",
        "why.pick": "Elige un candidato del paso {step} para compararlo con {chosen}.",
        "why.end": "En este paso el modelo ya había terminado la traducción: elige un paso anterior.",
        "why.foil": "{foil} no es un candidato del paso {step}: elige uno de la lista.",
        "why.summary": (
            "Paso {step}: el modelo escribió {chosen} y no {foil} (log p(elegida) − log p(candidata) = "
            "{difference}). Las palabras de la fuente que más pesan en esa diferencia: {words}."
        ),
        "why.failed": "No se pudo calcular el contraste ({error}).",
        "why.title": "Paso {step}: qué palabras de la fuente hacen {chosen} más probable que {foil}",
        "why.axis": "parte de la diferencia",
    },
}

#: The empty states are the page's texts, and also what the server answers for an empty request.
for _language, _texts in MESSAGES.items():
    _texts.update({key: PAGE[_language][key] for key in ("causes.empty", "lens.none", "why.none")})
