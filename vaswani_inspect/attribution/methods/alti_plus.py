"""ALTI+ (Ferrando et al. 2022), computed in `vaswani_inspect.attribution.alti`: "alti_plus"."""

from __future__ import annotations

from typing import Any

from ...record import AttentionRecord
from ..alti import alti_plus_scores
from ..registry import Method, register
from ..result import Attribution


def _alti_plus(model: Any, record: AttentionRecord) -> Attribution:
    source, prefix = alti_plus_scores(model, record)
    settings = {"distance": "manhattan", "blocks": "attention + residual + layer norm", "heads": "all"}
    return Attribution.from_token_scores("alti_plus", record, source, prefix, settings=settings)


register(
    Method(
        "alti_plus",
        _alti_plus,
        runs_model=True,
        measures_share=True,
        order=80,
        label={"en": "ALTI+ (contributions)", "es": "ALTI+ (contribuciones)"},
        about={
            "en": (
                "how much of each attention block's output each input vector makes up, residual and layer norm "
                "included, followed through the encoder, the decoder and the cross-attention (Ferrando et al. "
                "2022); it also measures how much of each target word comes from the source and how much from the "
                "target prefix."
            ),
            "es": (
                "qué parte de la salida de cada bloque de atención forma cada vector de entrada, con la conexión "
                "residual y la normalización de capa, seguida por el encoder, el decoder y la cross-attention "
                "(Ferrando et al. 2022); además mide cuánto de cada palabra destino sale de la fuente y cuánto del "
                "prefijo destino."
            ),
        },
    )
)
