"""The two CTranslate2 translators: `CTranslate2Translator` for our models and `MarianCTranslate2Translator` for
Marian (OPUS-MT) models, which share the decoding options that make CTranslate2 choose `generate()`'s tokens, and
`load_ctranslate2`, which picks one for a model folder and exports the model on first use (`.ct2_cache`)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .choice import default_quantization
from .ct2_cache import (
    CTranslate2CacheError,
    CTranslate2CacheWarning,
    ctranslate2_model_type,
    ensure_ctranslate2_export,
    local_model_folder,
)

__all__ = [
    "CTranslate2Translator",
    "MarianCTranslate2Translator",
    "load_ctranslate2",
    "load_ctranslate2_or_none",
    "translate_with_ctranslate2",
]

#: What `generate()` uses for a generation setting the model's generation config leaves unset.
GENERATE_DEFAULTS = {
    "max_length": 20,
    "min_length": 0,
    "num_beams": 1,
    "length_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "repetition_penalty": 1.0,
}


class CTranslate2Translator:
    """A CTranslate2 translator for one exported model, with its tokenizer and generation settings.

    Attributes:
        translator: the `ctranslate2.Translator`.
        tokenizer: the model's tokenizer (ids are shared with the export).
        config: the model's `VaswaniConfig`; generation_config: its `GenerationConfig`.
        model_folder: the model folder; export_folder: the CTranslate2 folder; quantization: its weight type.
    """

    is_ctranslate2 = True

    def __init__(
        self,
        model_folder: Path,
        export_folder: Path,
        quantization: str,
        *,
        device: str = "cpu",
        threads: int | None = None,
    ):
        import ctranslate2
        import torch
        from transformers import AutoConfig, AutoTokenizer

        import hf_vaswani  # noqa: F401  (registers the "vaswani" config type)

        from ..model_folder import folder_generation_config

        self.model_folder = model_folder
        self.export_folder = export_folder
        self.quantization = quantization
        self.device = device
        self.config = AutoConfig.from_pretrained(model_folder)
        with warnings.catch_warnings():  # MarianTokenizer's advice, which concerns its training-time normaliser
            warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
            self.tokenizer = AutoTokenizer.from_pretrained(model_folder)
        # Checked; without the file, the project's decoding settings, not transformers' 20-token greedy search.
        self.generation_config = folder_generation_config(model_folder, self.config)
        device_type, _, index = str(device).partition(":")
        self.translator = ctranslate2.Translator(
            str(export_folder),
            device=device_type,
            device_index=int(index or 0),
            compute_type="default",  # what the weights were exported in (int8: int8 matrix products)
            inter_threads=1,
            intra_threads=threads or torch.get_num_threads(),  # as many as PyTorch uses, unless told
        )

    def translate(
        self,
        sentences: Sequence[str],
        direction: str = "es-en",
        *,
        num_beams: int | None = None,
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        length_penalty: float | None = None,
        labels: Sequence[str] | None = None,
        keep_spans: bool = False,
    ) -> list[str]:
        """Translate `sentences` in `direction`; the arguments and result of `hf_vaswani.inference.translate`."""
        from ..placeholders import check_keep_spans

        check_keep_spans(keep_spans)
        if keep_spans:  # numbers, URLs, e-mail addresses and rare names through placeholders
            from ..placeholders import translate_with_model_keeping_spans

            return translate_with_model_keeping_spans(
                lambda texts, names: self.translate(
                    texts,
                    direction,
                    num_beams=num_beams,
                    batch_size=batch_size,
                    max_new_tokens=max_new_tokens,
                    length_penalty=length_penalty,
                    labels=names,
                ),
                self,
                self.tokenizer,
                sentences,
                direction,
                labels,
            )
        ids = self.translate_ids(
            sentences,
            direction,
            num_beams=num_beams,
            batch_size=batch_size,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
            labels=labels,
        )
        return [text.strip() for text in self.tokenizer.batch_decode(ids, skip_special_tokens=True)]

    def translate_ids(
        self,
        sentences: Sequence[str],
        direction: str = "es-en",
        *,
        num_beams: int | None = None,
        batch_size: int = 32,
        max_new_tokens: int | None = None,
        length_penalty: float | None = None,
        labels: Sequence[str] | None = None,
    ) -> list[list[int]]:
        """As `translate`, but the chosen output of each sentence as token ids, without the start and end tokens
        (what a teacher-forced pass for attention weights takes)."""
        from ..limits import check_generation_settings
        from ..source_checks import check_not_one_text

        check_not_one_text(sentences, "sentences", "translator.translate(['el gato negro'])")
        check_generation_settings(self, length_penalty=length_penalty)
        sources = self._sources(sentences, direction, labels, batch_size, num_beams, max_new_tokens)
        options = self._decoding_options(num_beams, max_new_tokens, length_penalty)
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]), reverse=True)
        results: list[list[int]] = [[] for _ in sources]
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            outputs = self.translator.translate_batch([sources[i] for i in indices], **options)
            for i, output in zip(indices, outputs, strict=True):
                results[i] = self.tokenizer.convert_tokens_to_ids(output.hypotheses[0])
        return results

    def _sources(
        self,
        sentences: Sequence[str],
        direction: str,
        labels: Sequence[str] | None,
        batch_size: int,
        num_beams: int | None,
        max_new_tokens: int | None,
    ) -> list[list[str]]:
        """The source token strings (``>>lang<<`` ... ``</s>``), checked and cut as the PyTorch path does."""
        from ..source_checks import fitted_sources

        sentences = list(sentences)
        labels = list(labels) if labels is not None else [f"sentence {i}" for i in range(1, len(sentences) + 1)]
        settings = dict(num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens)
        texts = self._checked_texts(sentences, direction, labels, **settings)
        _, limit = fitted_sources(self, self.tokenizer, texts, labels)
        ids = self.tokenizer(texts, truncation=True, max_length=limit, verbose=False)["input_ids"]
        return [self.tokenizer.convert_ids_to_tokens(row) for row in ids]

    def _checked_texts(self, sentences: list[str], direction: str, labels: list[str], **settings: Any) -> list[str]:
        """The texts to encode, once every input and setting is checked: each sentence after its language token."""
        from ..source_checks import checked_sources

        return checked_sources(self, self.tokenizer, sentences, direction, labels, **settings)

    def _decoding_options(
        self, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None
    ) -> dict[str, Any]:
        """`generate()`'s beam search as CTranslate2 options: the generation config's settings, hypotheses scored
        by log-probability / length ** length_penalty, and the search stops once `num_beams` hypotheses are
        finished, which is `generate()` with ``early_stopping=True`` (the shipped model's setting; with ``False``,
        `generate()` may search on while a running beam could still win, and rarely picks another output)."""
        generation = self.generation_config

        def setting(name: str) -> Any:  # transformers leaves unset fields None and applies its defaults in generate()
            value = getattr(generation, name, None)
            return GENERATE_DEFAULTS[name] if value is None else value

        if max_new_tokens is None:
            # generate()'s max_length counts the decoder start token.
            max_new_tokens = generation.max_new_tokens or max(1, setting("max_length") - 1)
        max_new_tokens = min(max_new_tokens, self.config.max_position_embeddings - 1)
        eos = self.config.eos_token_id
        return {
            "beam_size": num_beams or setting("num_beams"),
            "length_penalty": float(length_penalty if length_penalty is not None else setting("length_penalty")),
            "patience": 1.0,
            "max_decoding_length": max_new_tokens,
            "min_decoding_length": max(0, setting("min_length") - 1),  # min_length counts the start token
            "max_input_length": 0,  # the sources are already cut to the model's limit
            "end_token": self.tokenizer.convert_ids_to_tokens(eos if isinstance(eos, list) else [eos]),
            # the generation config's guards against loops, as generate() applies them
            "no_repeat_ngram_size": int(setting("no_repeat_ngram_size")),
            "repetition_penalty": float(setting("repetition_penalty")),
        }


class MarianCTranslate2Translator(CTranslate2Translator):
    """A Marian (OPUS-MT) model converted by CTranslate2's `TransformersConverter`; `translate` and `translate_ids`
    as `CTranslate2Translator`'s. A one-direction model translates its own direction whatever `direction` says (the
    caller chose the model for it); a multilingual one (``>>es<<`` tokens in its vocabulary) gets the target's
    token first, as OPUS-MT models ask."""

    def _checked_texts(self, sentences: list[str], direction: str, labels: list[str], **settings: Any) -> list[str]:
        """The texts to encode, once every input and setting is checked: each sentence, after the target's token
        for a multilingual model."""
        from ..checked_source import unchecked
        from ..empty_input import check_some_sentences, check_text
        from ..limits import check_generation_settings
        from ..source_checks import check_known_characters

        if len(labels) != len(sentences):
            raise ValueError(f"Got {len(labels)} labels for {len(sentences)} sentences.")
        check_some_sentences(sentences)
        batch_size = settings["batch_size"]
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
        check_generation_settings(self, num_beams=settings["num_beams"], max_new_tokens=settings["max_new_tokens"])
        for label, sentence in zip(labels, sentences, strict=True):
            check_text(sentence, label)
        check_known_characters(self.tokenizer, *unchecked(sentences, labels, direction))
        token = self._target_token(direction)
        return [f"{token} {sentence.strip()}" if token else sentence.strip() for sentence in sentences]

    def _decoding_options(
        self, num_beams: int | None, max_new_tokens: int | None, length_penalty: float | None
    ) -> dict[str, Any]:
        """`CTranslate2Translator`'s options; with ``forced_eos_token_id`` (OPUS-MT's generation configs),
        `generate()` spends its last step on ``</s>``, so CTranslate2 decodes one token less."""
        options = super()._decoding_options(num_beams, max_new_tokens, length_penalty)
        if getattr(self.generation_config, "forced_eos_token_id", None) is not None:
            options["max_decoding_length"] = max(1, options["max_decoding_length"] - 1)
        return options

    def _target_token(self, direction: str) -> str:
        """``>>yy<<`` for a multilingual model asked for "xx-yy", "" for a one-direction model (no such tokens)."""
        from ..directions import target_language_token

        return target_language_token(self.tokenizer, direction)


def load_ctranslate2(
    model: str | os.PathLike[str] | None = None,
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CTranslate2Translator:
    """A `CTranslate2Translator` for `model` (a folder or Hub id; `None`: the shipped checkpoint), exported on first
    use (`ensure_ctranslate2_export`); a `MarianCTranslate2Translator` for a Marian (OPUS-MT) model and any other
    model type of `CTRANSLATE2_MODEL_TYPES` (exported by CTranslate2's own converter).

    Args:
        quantization: the weight type; default `default_quantization(device)` (int8 on a CPU).
        device: ``"cpu"`` (default), ``"cuda"`` or ``"cuda:1"``.
        threads: CPU threads for one translation (default: as many as PyTorch uses, `torch.get_num_threads()`).
        cache_dir: where the export is kept (see `ensure_ctranslate2_export`).
    """
    device = device or "cpu"
    quantization = quantization or default_quantization(device)
    folder = local_model_folder(model)
    export = ensure_ctranslate2_export(folder, quantization, cache_dir=cache_dir)
    kind = CTranslate2Translator if ctranslate2_model_type(folder) == "vaswani" else MarianCTranslate2Translator
    return kind(folder, export, quantization, device=device, threads=threads)


def load_ctranslate2_or_none(
    model: str | os.PathLike[str] | None = None,
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> CTranslate2Translator | None:
    """`load_ctranslate2` for ``--backend auto``: None, with a `CTranslate2CacheWarning` saying that PyTorch
    translates instead, when the export cannot be written into the cache (`CTranslate2CacheError`)."""
    try:
        return load_ctranslate2(model, quantization=quantization, device=device, threads=threads, cache_dir=cache_dir)
    except CTranslate2CacheError as error:
        warnings.warn(
            f"{error.problem}: translating with PyTorch (set HF_VASWANI_CACHE to a writable folder for CTranslate2)",
            CTranslate2CacheWarning,
            stacklevel=2,
        )
        return None


def translate_with_ctranslate2(
    model: str | os.PathLike[str] | None,
    sentences: Sequence[str],
    direction: str = "es-en",
    *,
    quantization: str | None = None,
    device: str | None = None,
    threads: int | None = None,
    **options: Any,
) -> list[str]:
    """`load_ctranslate2(model, ...).translate(sentences, direction, **options)` in one call; `options` are those
    of `hf_vaswani.inference.translate` (`num_beams`, `batch_size`, `max_new_tokens`, `length_penalty`, `labels`)."""
    translator = load_ctranslate2(model, quantization=quantization, device=device, threads=threads)
    return translator.translate(sentences, direction, **options)
