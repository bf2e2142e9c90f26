"""Marian (OPUS-MT) checkpoints in and out, exactly: the two directions of one mapping of weight names.

- `hf_vaswani.marian.convert`: a `transformers` `MarianMTModel` into a `VaswaniForConditionalGeneration`
  (``hf-vaswani convert-marian``).
- `hf_vaswani.marian.export`: the inverse, our model as a stock `MarianMTModel` folder (``hf-vaswani export-marian``).

Both read the same tables: `hf_vaswani.marian.mapping` (weight names, ours and Marian's) and
`hf_vaswani.marian.configs` (each configuration from the other); `hf_vaswani.marian.cards` writes their model cards.
"""

from .convert import MarianConversionError, convert_marian
from .export import export_marian

__all__ = ["MarianConversionError", "convert_marian", "export_marian"]
