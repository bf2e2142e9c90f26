"""Attention rollout through the decoder, computed in `vaswani_inspect.attribution.rollout`: "rollout"."""

from __future__ import annotations

from typing import Any

from ...record import AttentionRecord
from ..registry import Method, register
from ..result import Attribution
from ..rollout import decoder_rollout


def _rollout(model: Any, record: AttentionRecord) -> Attribution:
    source, prefix = decoder_rollout(record)
    settings = {"heads": "mean", "residual": 0.5, "source_share": "constant: 1 - 0.5 ** decoder layers"}
    return Attribution.from_token_scores("rollout", record, source, prefix, settings=settings)


register(
    Method(
        "rollout",
        _rollout,
        runs_model=False,
        measures_share=True,
        order=30,
        label={"en": "Attention rollout", "es": "Rollout de la atención"},
        about={
            "en": (
                "attention followed back through every decoder layer, self- and cross-attention together (Abnar and "
                "Zuidema 2020); its split between the source and the target prefix is the same for every word (1 - "
                "0.5 to the number of layers), so the bar shows ALTI+'s."
            ),
            "es": (
                "la atención seguida hacia atrás por todas las capas del decoder, self-attention y cross-attention a "
                "la vez (Abnar y Zuidema 2020); su reparto entre la fuente y el prefijo destino es el mismo para toda "
                "palabra (1 - 0,5 elevado al número de capas), así que la barra muestra el de ALTI+."
            ),
        },
    )
)
