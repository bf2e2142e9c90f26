"""Where the alignment section starts reading the cross-attention: the model's trained aligner (``config.alignment``,
`vaswani_inspect.alignment.config`), or, for a model that has none, `untrained_reading`.

The toolkit's own fallback, `DEFAULT_ALIGNMENT`, averages every layer and head, a neutral summary; but the layers
of a Transformer trained without alignment supervision do not align alike, and the penultimate layer's heads,
averaged and not shifted, usually align best (Garg et al. 2019, "Jointly Learning to Align and Translate with
Transformer Models"; `hf_vaswani.training` puts its guided alignment on that layer too). So the demo starts there;
the layer and head controls offer every other reading, `DEFAULT_ALIGNMENT`'s included. `filled_reading` fills the
choices a caller leaves out (an API client's None) with that start, so that the page and the API read a record the
same way.
"""

from __future__ import annotations

from typing import Any

from .settings import MODEL_ALIGNER

__all__ = ["filled_reading", "untrained_reading"]


def untrained_reading(layers: int) -> dict[str, Any]:
    """The reading the section starts at for a model with `layers` decoder layers and no trained aligner: the
    penultimate layer (the only one of a one-layer decoder), every head averaged, not shifted."""
    return {"layer": max(0, int(layers) - 2), "heads": "all", "shift": False}


def filled_reading(
    layers: int, layer: int | str | None, heads: list[int] | str | None, shift: bool | None
) -> tuple[int | str, list[int] | str, bool]:
    """(layer, heads, shift) of a record without a trained aligner: each choice left out (None, or the layer
    `MODEL_ALIGNER`, which such a model does not have) taken from `untrained_reading`."""
    start = untrained_reading(layers)
    return (
        start["layer"] if layer in (None, MODEL_ALIGNER) else layer,
        start["heads"] if heads is None else heads,
        start["shift"] if shift is None else shift,
    )
