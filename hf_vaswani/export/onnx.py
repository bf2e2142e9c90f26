"""Export a `VaswaniForConditionalGeneration` to ONNX (encoder and decoder graphs), and decode greedily on onnxruntime.

`torch.onnx.export(..., dynamo=True)` traces two graphs with dynamic batch and lengths:

- ``encoder.onnx``: (input_ids, attention_mask) -> encoder_hidden_states;
- ``decoder.onnx``: (decoder_input_ids, encoder_hidden_states, attention_mask) -> logits, for every target position.

The decoder graph has no cache: each step of `OnnxGreedyTranslator` runs it on the whole prefix, which is simple
and exact (the same function as our decoder) but does quadratic work in the output length; for speed, use the
CTranslate2 backend. The folder also gets the config, generation config and tokenizer files, so it is
self-contained:

    export_onnx("pretrained/vaswani-tatoeba-es-en", "vaswani-onnx")
    OnnxGreedyTranslator("vaswani-onnx").translate(["el gato negro"], "es-en")

or `hf-vaswani export-onnx MODEL OUT`. The export checks that onnxruntime's logits match the model's on a padded
batch before it returns.
"""

from __future__ import annotations

import logging
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import onnxscript  # noqa: F401  (torch.onnx.export(dynamo=True) needs it: a missing one fails here, clearly)
import torch
from torch import nn

from ..modeling_vaswani import VaswaniForConditionalGeneration
from .loading import export_plan, load_for_export

__all__ = ["OnnxGreedyTranslator", "export_onnx"]

logger = logging.getLogger(__name__)

#: Files copied from the model folder so that the ONNX folder is enough to translate.
COPIED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")

#: Largest logit difference accepted between onnxruntime and PyTorch on the check batch, relative to the largest
#: logit (at least 1): ONNX kernels add in another order than PyTorch's.
TOLERANCE = 1e-4


class _Encoder(nn.Module):
    def __init__(self, model: VaswaniForConditionalGeneration):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class _Decoder(nn.Module):
    def __init__(self, model: VaswaniForConditionalGeneration):
        super().__init__()
        self.model = model

    def forward(
        self, decoder_input_ids: torch.Tensor, encoder_hidden_states: torch.Tensor, attention_mask: torch.Tensor
    ) -> torch.Tensor:
        return self.model(
            encoder_outputs=(encoder_hidden_states,),
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
        ).logits


def export_onnx(
    model: str | os.PathLike[str] | VaswaniForConditionalGeneration,
    out_dir: str | os.PathLike[str],
    *,
    tokenizer: Any = None,
    overwrite: bool = False,
) -> Path:
    """Write ``encoder.onnx`` and ``decoder.onnx`` of `model` (a folder, a Hub id or a model in memory) into
    `out_dir`, with the config, generation config and tokenizer; returns `out_dir`.

    `out_dir` must not exist or be empty (or `overwrite`: replaced whole, none of its files kept). It is written
    into a temporary sibling and renamed into place once onnxruntime's logits have been checked.

    Raises:
        ValueError, OSError: `out_dir` is the source folder or holds it, is not empty (without `overwrite`) or
            cannot be written; checked before the model is loaded.
        RuntimeError: onnxruntime's logits differ from PyTorch's by more than `TOLERANCE` (a bug: please report it).
    """
    plan, out = export_plan(model, out_dir, "ONNX model folder", overwrite)
    source = load_for_export(model, tokenizer)
    with plan.writing() as staged:
        _export_checked(source, staged(out))
    return Path(out_dir)


def _export_checked(source: Any, out_dir: Path) -> None:
    """Export both graphs and the files of `source` into the folder `out_dir`, and check the logits."""
    model = source.model
    inputs = _check_batch(model)
    batch, source_length, target_length = (torch.export.Dim(name) for name in ("batch", "source", "target"))
    encoder, decoder = _Encoder(model).eval(), _Decoder(model).eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*axis name.*will not be used")
        hidden = encoder(inputs["input_ids"], inputs["attention_mask"])
        _export(
            encoder,
            (inputs["input_ids"], inputs["attention_mask"]),
            {"input_ids": {0: batch, 1: source_length}, "attention_mask": {0: batch, 1: source_length}},
            ["encoder_hidden_states"],
            out_dir / "encoder.onnx",
        )
        _export(
            decoder,
            (inputs["decoder_input_ids"], hidden, inputs["attention_mask"]),
            {
                "decoder_input_ids": {0: batch, 1: target_length},
                "encoder_hidden_states": {0: batch, 1: source_length},
                "attention_mask": {0: batch, 1: source_length},
            },
            ["logits"],
            out_dir / "decoder.onnx",
        )
    _write_files(source, out_dir)
    difference, scale = max_logit_difference(model, out_dir)
    if not difference <= TOLERANCE * scale:
        raise RuntimeError(
            f"onnxruntime's logits differ from PyTorch's by {difference:.3g} (> {TOLERANCE} x {scale:.3g}): this is "
            "a bug in export_onnx, please report it."
        )
    logger.info("ONNX logits match PyTorch's: max abs difference %.3g.", difference)


def _export(module: nn.Module, args: tuple, dynamic_shapes: dict, outputs: list[str], path: Path) -> None:
    program = torch.onnx.export(
        module,
        args,
        dynamo=True,
        dynamic_shapes=dynamic_shapes,
        input_names=list(dynamic_shapes),
        output_names=outputs,
        verbose=False,
    )
    program.save(str(path))


def _check_batch(model: VaswaniForConditionalGeneration) -> dict[str, torch.Tensor]:
    """A padded batch of 3 sources (lengths 9, 9 and 4) and 3 decoder prefixes of length 5."""
    config = model.config
    generator = torch.Generator().manual_seed(0)
    length = min(9, config.max_position_embeddings)
    input_ids = torch.randint(0, config.vocab_size, (3, length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, length // 2 :] = 0
    decoder_input_ids = torch.randint(0, config.decoder_vocab_size, (3, min(5, length)), generator=generator)
    decoder_input_ids[:, 0] = config.decoder_start_token_id
    return {"input_ids": input_ids, "attention_mask": attention_mask, "decoder_input_ids": decoder_input_ids}


def _write_files(source: Any, out_dir: Path) -> None:
    source.model.config.save_pretrained(out_dir)
    source.model.generation_config.save_pretrained(out_dir)
    if source.folder is not None:
        for name in COPIED_FILES[2:]:
            if (source.folder / name).is_file():
                shutil.copyfile(source.folder / name, out_dir / name)
    elif source.tokenizer is not None:
        source.tokenizer.save_pretrained(out_dir)


@torch.no_grad()
def max_logit_difference(model: VaswaniForConditionalGeneration, folder: str | os.PathLike[str]) -> tuple[float, float]:
    """Largest absolute difference between onnxruntime's and `model`'s logits on the check batch, and the largest
    absolute logit of `model` (at least 1)."""
    inputs = _check_batch(model)
    expected = model.eval()(**inputs).logits.numpy()
    translator = OnnxGreedyTranslator(folder, tokenizer=False)
    hidden = translator.encode(inputs["input_ids"].numpy(), inputs["attention_mask"].numpy())
    actual = translator.decode(inputs["decoder_input_ids"].numpy(), hidden, inputs["attention_mask"].numpy())
    return float(np.abs(actual - expected).max()), max(1.0, float(np.abs(expected).max()))


class OnnxGreedyTranslator:
    """Greedy decoding with the two graphs of `export_onnx` on onnxruntime (CPU).

    Args:
        folder: the folder `export_onnx` wrote.
        threads: intra-op threads of each session (default: onnxruntime's).
        tokenizer: a tokenizer to use instead of the folder's, or False for none (ids only).
    """

    def __init__(self, folder: str | os.PathLike[str], *, threads: int | None = None, tokenizer: Any = None):
        from transformers import AutoConfig, AutoTokenizer, GenerationConfig

        import hf_vaswani  # noqa: F401  (registers the "vaswani" config type)

        folder = Path(folder)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        providers = ["CPUExecutionProvider"]
        self.encoder = onnxruntime.InferenceSession(str(folder / "encoder.onnx"), options, providers=providers)
        self.decoder = onnxruntime.InferenceSession(str(folder / "decoder.onnx"), options, providers=providers)
        self.config = AutoConfig.from_pretrained(folder)
        self.generation_config = GenerationConfig.from_pretrained(folder)
        self.tokenizer = None if tokenizer is False else tokenizer or AutoTokenizer.from_pretrained(folder)

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The encoder output (batch, source length, d_model)."""
        feeds = {"input_ids": input_ids.astype(np.int64), "attention_mask": attention_mask.astype(np.int64)}
        return self.encoder.run(None, feeds)[0]

    def decode(self, decoder_input_ids: np.ndarray, hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """The logits (batch, target length, vocabulary) of every decoder position, teacher-forced."""
        feeds = {
            "decoder_input_ids": decoder_input_ids.astype(np.int64),
            "encoder_hidden_states": hidden,
            "attention_mask": attention_mask.astype(np.int64),
        }
        return self.decoder.run(None, feeds)[0]

    def generate(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, max_new_tokens: int | None = None
    ) -> np.ndarray:
        """Greedy decoding as `generate(num_beams=1, do_sample=False)`: the decoder start token, then the argmax
        at each step; a finished sentence is padded with the pad token. Shape (batch, 1 + steps). Without
        `max_new_tokens`, the length limit is the generation config's, as `generate()` reads it (`max_new_tokens`,
        else `max_length` counting the decoder start token), within the model's positions."""
        config, generation = self.config, self.generation_config
        if max_new_tokens is None:
            max_new_tokens = generation.max_new_tokens
        if max_new_tokens is None:
            max_new_tokens = max(1, (generation.max_length or 20) - 1)
        max_new_tokens = min(max_new_tokens, config.max_position_embeddings - 1)
        eos_ids = _first_set(generation.eos_token_id, config.eos_token_id)
        eos = list(eos_ids if isinstance(eos_ids, list) else [eos_ids])
        pad_id = _first_set(generation.pad_token_id, config.pad_token_id)
        start_id = _first_set(generation.decoder_start_token_id, config.decoder_start_token_id)
        hidden = self.encode(input_ids, attention_mask)
        tokens = np.full((input_ids.shape[0], 1), start_id, dtype=np.int64)
        finished = np.zeros(input_ids.shape[0], dtype=bool)
        for _ in range(max_new_tokens):
            following = self.decode(tokens, hidden, attention_mask)[:, -1].argmax(-1)
            following = np.where(finished, pad_id, following)
            tokens = np.concatenate([tokens, following[:, None]], axis=1)
            finished |= np.isin(following, eos)
            if finished.all():
                break
        return tokens

    def translate(
        self,
        sentences: Sequence[str],
        direction: str = "es-en",
        *,
        max_new_tokens: int | None = None,
        batch_size: int = 32,
    ) -> list[str]:
        """Translate `sentences` greedily in `direction` (``"es-en"`` or ``"en-es"``)."""
        from ..languages import direction_to_languages, source_with_language
        from ..source_checks import check_known_characters

        if self.tokenizer is None:
            raise ValueError("This translator has no tokenizer: pass token ids to generate() instead.")
        _, target_lang = direction_to_languages(direction)
        sources = [source_with_language(sentence, target_lang) for sentence in sentences]
        check_known_characters(self.tokenizer, sentences, [f"sentence {i}" for i in range(1, len(sentences) + 1)])
        limit = min(self.config.max_position_embeddings, getattr(self.tokenizer, "model_max_length", 10**9))
        results = []
        for start in range(0, len(sources), batch_size):
            batch = self.tokenizer(
                sources[start : start + batch_size],
                return_tensors="np",
                padding=True,
                truncation=True,
                max_length=limit,
            )
            output = self.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens)
            results += [text.strip() for text in self.tokenizer.batch_decode(output, skip_special_tokens=True)]
        return results


def _first_set(*values: Any) -> Any:
    """The first value that is not None (the generation config's, then the model config's), as generate() reads."""
    return next((value for value in values if value is not None), None)
