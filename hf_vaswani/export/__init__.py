"""Exact exports of a `VaswaniForConditionalGeneration` to the engines translation models are deployed with.

- A stock `transformers` `MarianMTModel` folder: `hf_vaswani.marian.export`, which lives beside its inverse
  (`hf_vaswani.marian.convert`), ``hf-vaswani export-marian``.
- `hf_vaswani.export.ctranslate2`: a CTranslate2 model folder, built by our own loader
  (``hf-vaswani export-ctranslate2``; needs the ``[fast]`` extra).
- `hf_vaswani.export.onnx`: encoder and decoder as ONNX graphs and a greedy decoder on onnxruntime
  (``hf-vaswani export-onnx``; needs the ``[onnx]`` extra).
- `hf_vaswani.export.layout`: the exact change of sinusoidal layout that the Marian and CTranslate2 exports rely on.

Each submodule imports its engine at the top, so this package imports none of them: ``import hf_vaswani.export``
works without the optional dependencies. Translating through CTranslate2 is `hf_vaswani.backends`.
"""

from .loading import ExportError

__all__ = ["ExportError"]
