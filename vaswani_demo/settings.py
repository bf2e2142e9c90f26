"""The demo's fixed values: input limits, serving defaults, the choices its controls offer, the course examples.

Nothing is imported here, so that ``hf-vaswani demo --help`` can show the defaults without loading Gradio or a
model.
"""

from __future__ import annotations

__all__ = [
    "APP_CSS",
    "DEFAULT_CONCURRENCY_LIMIT",
    "DEFAULT_MAX_QUEUE",
    "DIRECTION_CHOICES",
    "EXAMPLES",
    "FILE_TTL_SECONDS",
    "HEAD_LABEL",
    "KIND_CHOICES",
    "KIND_NAMES",
    "LANGUAGE_NAMES",
    "MAX_BEAMS",
    "MAX_CHARS",
    "MEAN",
    "MODEL_ENV",
    "STATE_TTL_SECONDS",
    "UNIT_CHOICES",
    "VIEW_CHOICES",
]

#: Longest input, in characters, the demo translates (the model was trained on sentences of at most 64 tokens;
#: the token limit of the model, `max_position_embeddings`, is checked as well).
MAX_CHARS = 500
#: Largest beam size offered.
MAX_BEAMS = 8
#: Model runs (translations) served at the same time; more requests wait in the queue.
DEFAULT_CONCURRENCY_LIMIT = 2
#: Requests that may wait in the queue; beyond that Gradio answers "queue full".
DEFAULT_MAX_QUEUE = 64
#: Environment variable naming the model folder or Hub id when none is passed (used by the Space).
MODEL_ENV = "VASWANI_DEMO_MODEL"
#: A downloaded attention record file is deleted after this many seconds (Gradio keeps its own cached copy).
FILE_TTL_SECONDS = 3600
#: Records kept in gr.State are dropped after this many seconds without use.
STATE_TTL_SECONDS = 3600

#: The course examples: (text, direction).
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("el gato negro", "es-en"),
    ("The cat ate the mouse.", "en-es"),
    ("El banco aprobó el crédito", "es-en"),
    ("Me senté en el banco de la plaza", "es-en"),
)

#: The (label, value) pairs of the radio buttons and dropdowns.
DIRECTION_CHOICES: list[tuple[str, str]] = [("Spanish → English", "es-en"), ("English → Spanish", "en-es")]
KIND_CHOICES: list[tuple[str, str]] = [
    ("Encoder self-attention", "encoder"),
    ("Decoder self-attention", "decoder"),
    ("Cross-attention", "cross"),
]
VIEW_CHOICES: list[tuple[str, str]] = [("Head view", "head"), ("Model view", "model")]
UNIT_CHOICES: list[tuple[str, str]] = [("Words, alignment links boxed", "words"), ("Subword tokens", "tokens")]
#: How the ablation panel names a head of one attention kind: layer and head, from 0 ("L0 H1").
HEAD_LABEL = "L{layer} H{head}"
#: The layer or head value that averages over all of them.
MEAN = "mean"

LANGUAGE_NAMES = {"es": "Spanish", "en": "English"}
KIND_NAMES = {value: label for label, value in KIND_CHOICES}

#: Page style (Gradio 6 takes it in `launch`): a long translation must not make the heatmap metres tall.
APP_CSS = "#alignment-plot img { max-height: 760px; object-fit: contain; }"
