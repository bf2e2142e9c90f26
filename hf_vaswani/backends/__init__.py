"""Translating through CTranslate2: the fast backend of ``translate``, ``evaluate`` and the demo.

CTranslate2 (the ``[fast]`` extra) runs our model from a folder exported by `hf_vaswani.export.ctranslate2`, in int8
on a CPU by default. The export is made once and kept in the user cache (``$HF_VASWANI_CACHE/ctranslate2``, default
``~/.cache/hf_vaswani/ctranslate2``), in a folder named after a hash of the model's weights, config and tokenizer
files (``3f2a...-ctranslate2-int8/``), so that it is made again when they change. The model folder is only read: it
may be read-only, shared or a Hub cache snapshot. Each export's stamp records the size and SHA-256 of every file it
wrote; an entry whose files no longer match (a truncated ``model.bin``, a file deleted) is made again, with a
`CTranslate2CacheWarning` saying so. A cache that cannot be written is a `CTranslate2CacheError`, on which
`load_ctranslate2_or_none` (``--backend auto``) falls back to PyTorch.

A Marian (OPUS-MT) model is converted by CTranslate2's own `TransformersConverter`, cached the same way, and
translated by `MarianCTranslate2Translator` (the demo serves OPUS-MT models through it); any other model type is
refused with one sentence (`ctranslate2_model_type`). Only the models of `CTRANSLATE2_MODEL_TYPES` are exported.
One module per job: `choice` (which backend runs, the weight type by device), `ct2_cache` (the cached export:
fingerprint, staged export, stamp) and `ct2_translators` (the two translators, which share the decoding options
that make CTranslate2 choose `generate()`'s tokens; the Marian translator is a short subclass). Every name is
imported from here.

    from hf_vaswani.backends import load_ctranslate2

    translator = load_ctranslate2("pretrained/vaswani-tatoeba-es-en")            # int8 on the CPU
    translator.translate(["el gato negro"], "es-en")                               # ["the black cat"]

`CTranslate2Translator.translate` takes the arguments of `hf_vaswani.inference.translate` (less the model and
tokenizer) and returns the same: one string per sentence. The decoding options reproduce `generate()`'s beam search
(beam size, length penalty and maximum length from the model's generation config, stop once `num_beams`
hypotheses are finished as with ``early_stopping=True``, end-of-sentence allowed at the first step), so in float32
the tokens are ours; in int8 they are those of a model with slightly rounded weights. Attention weights do not
come from CTranslate2: run one teacher-forced PyTorch pass over the chosen output, as `vaswani_inspect.extract` does
with a target.
"""

from .choice import BACKEND_CHOICES, BACKENDS, ctranslate2_available, default_quantization, resolve_backend
from .ct2_cache import (
    CTRANSLATE2_MODEL_TYPES,
    EXPORT_VERSION,
    FINGERPRINTED,
    MARIAN_FINGERPRINTED,
    STAMP,
    CTranslate2CacheError,
    CTranslate2CacheWarning,
    ctranslate2_model_type,
    ensure_ctranslate2_export,
    user_cache_dir,
)
from .ct2_translators import (
    GENERATE_DEFAULTS,
    CTranslate2Translator,
    MarianCTranslate2Translator,
    load_ctranslate2,
    load_ctranslate2_or_none,
    translate_with_ctranslate2,
)

__all__ = [
    "BACKENDS",
    "BACKEND_CHOICES",
    "CTRANSLATE2_MODEL_TYPES",
    "EXPORT_VERSION",
    "FINGERPRINTED",
    "GENERATE_DEFAULTS",
    "MARIAN_FINGERPRINTED",
    "STAMP",
    "CTranslate2CacheError",
    "CTranslate2CacheWarning",
    "CTranslate2Translator",
    "MarianCTranslate2Translator",
    "ctranslate2_available",
    "ctranslate2_model_type",
    "default_quantization",
    "ensure_ctranslate2_export",
    "load_ctranslate2",
    "load_ctranslate2_or_none",
    "resolve_backend",
    "translate_with_ctranslate2",
    "user_cache_dir",
]
