"""The demo's fixed values: input limits, serving defaults, the values its controls offer, the course examples.
(What the controls call those values, in English and Spanish, is in `vaswani_demo.texts`.)

Only the architecture registry (`hf_vaswani.architectures`, plain data) and `hf_vaswani`'s list of directions are
imported here (neither `vaswani_inspect` nor Gradio), so that
``hf-vaswani demo --help`` can show the defaults without loading Gradio or a model.
"""

from __future__ import annotations

from hf_vaswani.architectures import DISPLAY_NAMES
from hf_vaswani.languages import DIRECTIONS

__all__ = [
    "APP_CSS",
    "ARCHITECTURE_NAMES",
    "CACHE_PRUNE_SECONDS",
    "DEFAULT_CONCURRENCY_LIMIT",
    "DEFAULT_MAX_QUEUE",
    "DIRECTIONS",
    "EXAMPLES",
    "FAILURE_EXAMPLES",
    "FILE_TTL_SECONDS",
    "HEAD_LABEL",
    "MAX_BEAMS",
    "MAX_CHARS",
    "MAX_SESSIONS",
    "MEAN",
    "MEASUREMENTS_FILE",
    "METHOD_OPTIONS",
    "MODEL_ALIGNER",
    "MODEL_ENV",
    "RELEASE_MEMORY_SECONDS",
    "SHARE_CONSTANT_METHODS",
    "SHARE_FALLBACK",
    "STATE_TTL_SECONDS",
    "UNITS",
    "VIEWS",  # noqa: F822 (given by the module's __getattr__)
]

#: Longest input, in characters, the demo translates (the model was trained on sentences of at most 64 tokens;
#: the token limit of the model, `max_position_embeddings`, is checked as well).
MAX_CHARS = 500
#: Largest beam size offered (the shared limit `hf_vaswani.limits.MAX_NUM_BEAMS` and the model's vocabulary
#: bound it too): a public demo serves many people, and beams beyond 5-10 translate no better.
MAX_BEAMS = 8
#: Model runs (translations) served at the same time; more requests wait in the queue.
DEFAULT_CONCURRENCY_LIMIT = 2
#: Requests that may wait in the queue; beyond that Gradio answers "queue full".
DEFAULT_MAX_QUEUE = 64
#: Environment variable naming the model folder or Hub id when none is passed (used by the Space); several models,
#: one per direction, are separated by spaces (``es-en=A en-es=B``).
MODEL_ENV = "VASWANI_DEMO_MODEL"
#: How the page names each architecture of `hf_vaswani.architectures.ARCHITECTURES` (its ``display_name``; an
#: unknown one: its own name), read from the registry at each use.
ARCHITECTURE_NAMES = DISPLAY_NAMES
#: A downloaded attention record file is deleted after this many seconds, both the demo's own copy and the copy
#: Gradio serves from its cache.
FILE_TTL_SECONDS = 3600
#: How often Gradio's cache is pruned of files older than `FILE_TTL_SECONDS` (``gr.Blocks(delete_cache=...)``);
#: whatever the app put there is deleted when it closes.
CACHE_PRUNE_SECONDS = 600
#: Records kept in gr.State are dropped after this many seconds without use.
STATE_TTL_SECONDS = 3600
#: How often the demo hands the memory its requests freed back to the system (`vaswani_demo.memory`).
RELEASE_MEMORY_SECONDS = 5.0
#: Sessions whose state the server keeps (``launch(state_session_capacity=...)``); the oldest one goes first. Gradio
#: keeps a copy of the page's config and the last record, about 0.5 MB, for each: this bounds the demo's memory
#: to some 100 MB of sessions, whoever calls it, while a session that is still being looked at is rarely among
#: the oldest of this many.
MAX_SESSIONS = 200

#: The course examples (sentences of the course's lectures, and their counterparts in the other language), each a
#: (text, direction) the shipped model translates right with the demo's default decoding (beam 4): "el gato negro"
#: -> "the black cat", ... (`tests/vaswani_demo/test_course_examples.py` pins each translation).
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("el gato negro", "es-en"),
    ("the black cat", "en-es"),
    ("El gato se comió el ratón.", "es-en"),
    ("The cat ate the mouse.", "en-es"),
    ("El ratón comió al gato.", "es-en"),
    ("The mouse ate the cat.", "en-es"),
    ("El gato come pescado fresco.", "es-en"),
    ("The cat eats fresh fish.", "en-es"),
    ("El banco aprobó el crédito.", "es-en"),
    ("I sat on the bench in the square", "en-es"),
)
#: Course sentences the shipped model gets wrong, offered as failures to discuss: "The bank approved the loan" ->
#: "el banco aprobó el présto" (an invented word), "Me senté en el banco de la plaza" -> "I sat on the bank of the
#: square" (the wrong "banco").
FAILURE_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("The bank approved the loan", "en-es"),
    ("Me senté en el banco de la plaza", "es-en"),
)

#: The values of the radio buttons are their labels' keys (by language, `vaswani_demo.texts.CHOICES`); the views',
#: `VIEWS`, are the names of `vaswani_inspect.views.VIEW_REGISTRY` (`__getattr__`).
UNITS = ("words", "tokens")
#: How the ablation panel names a head of one attention kind: layer and head, from 0 ("L0 H1").
HEAD_LABEL = "L{layer} H{head}"
#: The layer or head value that averages over all of them.
MEAN = "mean"
#: The layer choice that reads the alignment as the model's configuration says, averaged readings included.
MODEL_ALIGNER = "model"

#: The options the demo passes to `vaswani_inspect.attribution.attribute` for each explanation method (a method
#: not listed: none, the method's defaults), e.g. ``{"integrated_gradients": {"n_steps": 32}}``. The one place to
#: change what the demo computes per method. Integrated gradients (50 steps) runs under bfloat16 autocast, so that
#: a course sentence is explained in under a second on two cores with bfloat16 matmuls (about 2.3 times faster
#: than float32, scores within about 2 %: `benchmarks/bench_attribution.py`); where the model's device has no
#: fast bfloat16 matmuls the runner keeps float32 (`vaswani_demo.runner`).
METHOD_OPTIONS: dict[str, dict[str, object]] = {"integrated_gradients": {"precision": "bfloat16"}}
#: The method whose source-vs-prefix share the page shows when the chosen one measures none: ALTI+, which measures
#: how much each input vector makes up each attention block's output (one model pass, about 0.1 s of CPU for a
#: course sentence).
SHARE_FALLBACK = "alti_plus"
#: Methods whose `source_share` is a constant of the method, not a measurement: rollout's is 1 - 0.5 ** (decoder
#: layers) for every word of every sentence (its 0.5 residual convention). The page draws `SHARE_FALLBACK`'s instead.
SHARE_CONSTANT_METHODS: tuple[str, ...] = ("rollout",)
#: The file of a model folder that says how faithful each explanation method measured on that model (written by
#: ``benchmarks/bench_explanations.py``).
MEASUREMENTS_FILE = "explanations.json"

#: Page style (Gradio 6 takes it in `launch`): a long translation must not make the heatmap metres tall.
APP_CSS = "#alignment-plot img { max-height: 760px; object-fit: contain; }"


def __getattr__(name: str) -> object:
    """`VIEWS`, the registered views' names (`vaswani_inspect.views.view_names`), read from the registry when it is
    asked for: importing the toolkit here would load it with ``hf-vaswani demo --help``."""
    if name == "VIEWS":
        from vaswani_inspect.views import view_names

        return view_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
