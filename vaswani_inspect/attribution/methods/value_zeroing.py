"""Value zeroing on cross-attention (Mohebbi et al. 2023), computed in `vaswani_inspect.attribution.value_zeroing`:
"value_zeroing"."""

from __future__ import annotations

from typing import Any

from ...record import AttentionRecord
from ..registry import Method, register
from ..result import Attribution
from ..value_zeroing import value_zeroing_scores


def _value_zeroing(model: Any, record: AttentionRecord, *, batch_size: int = 64) -> Attribution:
    scores = value_zeroing_scores(model, record, batch_size=batch_size)
    settings = {"zeroed": "cross-attention values, every decoder layer", "distance": "cosine"}
    return Attribution.from_token_scores("value_zeroing", record, scores, settings=settings)


register(
    Method(
        "value_zeroing",
        _value_zeroing,
        runs_model=True,
        order=70,
        label={"en": "Value zeroing", "es": "Anulación de valores"},
        about={
            "en": (
                "how far each target position's final decoder state moves when one source token's values are zeroed "
                "in every cross-attention layer (Mohebbi et al. 2023)."
            ),
            "es": (
                "cuánto se mueve el estado final del decoder en cada posición destino cuando se ponen a cero los "
                "valores de un token fuente en todas las capas de cross-attention (Mohebbi et al. 2023)."
            ),
        },
    )
)
