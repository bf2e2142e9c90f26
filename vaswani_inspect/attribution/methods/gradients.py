"""The gradient methods, through Captum, computed in `vaswani_inspect.attribution.gradients`: "saliency",
"input_x_gradient" and "integrated_gradients". Each takes the option `contrast`: a foil's decoder ids (the
layout of ``record.target_ids``), to explain log p(target piece) - log p(foil piece) (`attribute`'s ``contrast=``
takes the foil as text)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...record import AttentionRecord
from ..gradients import DEFAULT_BATCH_SIZE, DEFAULT_STEPS, gradient_scores
from ..registry import Method, register
from ..result import Attribution


def _gradient(name: str) -> Callable[..., Attribution]:
    def run(
        model: Any,
        record: AttentionRecord,
        *,
        n_steps: int = DEFAULT_STEPS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        precision: str = "float32",
        contrast: Sequence[int] | None = None,
    ) -> Attribution:
        source, prefix, settings, details = gradient_scores(
            model, record, name, n_steps=n_steps, batch_size=batch_size, precision=precision, contrast=contrast
        )
        return Attribution.from_token_scores(name, record, source, prefix, settings=settings, details=details)

    return run


def _saliency(
    model: Any,
    record: AttentionRecord,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    precision: str = "float32",
    contrast: Sequence[int] | None = None,
) -> Attribution:
    return _gradient("saliency")(model, record, batch_size=batch_size, precision=precision, contrast=contrast)


def _input_x_gradient(
    model: Any,
    record: AttentionRecord,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    precision: str = "float32",
    contrast: Sequence[int] | None = None,
) -> Attribution:
    return _gradient("input_x_gradient")(model, record, batch_size=batch_size, precision=precision, contrast=contrast)


def _gradient_method(name: str, function: Callable[..., Attribution], order: int, **texts: Any) -> Method:
    """A gradient method's entry: each runs the model, measures the share, reads gradients and needs captum."""
    return Method(
        name,
        function,
        runs_model=True,
        measures_share=True,
        reads_gradients=True,
        needs=("captum",),
        order=order,
        **texts,
    )


register(
    _gradient_method(
        "saliency",
        _saliency,
        40,
        label={"en": "Saliency (gradients)", "es": "Saliencia (gradientes)"},
        about={
            "en": (
                "how strongly each target word's log-probability responds to each source word's embedding (the size "
                "of its gradient)."
            ),
            "es": (
                "cuánto responde la log-probabilidad de cada palabra destino al embedding de cada palabra fuente (el "
                "tamaño de su gradiente)."
            ),
        },
    )
)
register(
    _gradient_method(
        "input_x_gradient",
        _input_x_gradient,
        50,
        label={"en": "Input × gradient", "es": "Entrada × gradiente"},
        about={
            "en": (
                "the gradient multiplied by the embedding itself: a word counts by what it contributes, not only by "
                "how sensitive the output is to it."
            ),
            "es": (
                "el gradiente multiplicado por el propio embedding: una palabra cuenta por lo que aporta, no solo por "
                "lo sensible que es la salida a ella."
            ),
        },
    )
)
register(
    _gradient_method(
        "integrated_gradients",
        _gradient("integrated_gradients"),
        60,
        label={"en": "Integrated gradients", "es": "Gradientes integrados"},
        about={
            "en": (
                "gradients added up along a path from all-zero embeddings to the real ones: the slowest method here, "
                "seconds per sentence."
            ),
            "es": (
                "gradientes sumados a lo largo de un camino desde embeddings a cero hasta los reales: el método más "
                "lento de aquí, segundos por oración."
            ),
        },
    )
)
