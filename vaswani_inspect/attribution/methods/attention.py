"""The attention-based methods, computed in `vaswani_inspect.attribution.attention`: "attention" (the model's
aligner) and "attention_norm" (Kobayashi et al. 2020)."""

from __future__ import annotations

from typing import Any

from ...record import AttentionRecord
from ..attention import attention_matrix, attention_norm_matrix
from ..registry import Method, register
from ..result import Attribution


def _attention(model: Any, record: AttentionRecord) -> Attribution:
    return Attribution("attention", record, attention_matrix(record), settings={"reading": record.alignment})


def _attention_norm(model: Any, record: AttentionRecord, *, layers: str = "aligner") -> Attribution:
    matrix, settings = attention_norm_matrix(model, record, layers)
    return Attribution("attention_norm", record, matrix, settings=settings)


register(
    Method(
        "attention",
        _attention,
        runs_model=False,
        order=10,
        label={"en": "Attention", "es": "Atención"},
        about={
            "en": (
                "the cross-attention weights of the layer and head chosen below, with or without shift: the reading "
                "the model aligns with."
            ),
            "es": (
                "los pesos de la cross-attention de la capa y la cabeza elegidas abajo, con o sin desplazamiento: la "
                "lectura con la que alinea el modelo."
            ),
        },
    )
)
register(
    Method(
        "attention_norm",
        _attention_norm,
        runs_model=True,
        order=20,
        label={"en": "Attention × value norm", "es": "Atención × norma del valor"},
        about={
            "en": (
                "each cross-attention weight times the length of the vector its source token sends through the head "
                "(Kobayashi et al. 2020), on the layers and heads of the model's aligner."
            ),
            "es": (
                "cada peso de la cross-attention multiplicado por la longitud del vector que su token fuente envía a "
                "través de la cabeza (Kobayashi et al. 2020), en las capas y cabezas del alineador del modelo."
            ),
        },
    )
)
