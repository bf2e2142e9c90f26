"""The two models of the comparison: loading a BERT and our translation checkpoint (each checked to be what it
should be), and running BERT to get its self-attention, bidirectional or causally masked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..extract import AttentionUnavailableError, load_model_and_tokenizer
from .errors import CompareInputError
from .words import Pieces

__all__ = [
    "BERT_MODEL_TYPES",
    "DECODER_DIRECTION",
    "DEFAULT_BERT",
    "ENCODER_DIRECTION",
    "bert_attention",
    "check_bert",
    "load_bert",
    "load_ours",
    "max_positions",
]

DEFAULT_BERT = "bert-base-uncased"
#: `config.model_type` values accepted by `load_bert` (BERT checkpoints: bert-base/large, MiniLM-in-BERT form...).
BERT_MODEL_TYPES: tuple[str, ...] = ("bert",)
#: Our direction for the encoder pass: English source, Spanish target (source text `>>es<< sentence`).
ENCODER_DIRECTION = "en-es"
#: Our direction for the decoder pass: Spanish source, English target read by the decoder.
DECODER_DIRECTION = "es-en"


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name


def _config_dict(name: str, what: str) -> dict[str, Any]:
    """The raw config.json of a local folder or Hub id (no model class needed to read it)."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise CompareInputError(f"{what} {name} is a file, not a model folder (or Hub id).")
        config_file = path / "config.json"
        if not config_file.is_file():
            raise CompareInputError(f"{what} {name} has no config.json: it is not a transformers model folder.")
        try:
            return json.loads(config_file.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CompareInputError(f"{what} {name}: {config_file} is not valid UTF-8 JSON ({error}).") from None
    if _looks_like_path(name):
        raise FileNotFoundError(f"{what} {name}: no such folder.")
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(name)
    except (OSError, ValueError) as error:
        raise CompareInputError(
            f"Could not load the config of {what} {name!r} from the Hugging Face Hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}). Offline? Pass a local model folder instead."
        ) from None
    return config


def check_bert(name: str) -> dict[str, Any]:
    """The config dict of `name` if it is a BERT encoder, else a `CompareInputError` saying what it is."""
    config = _config_dict(str(name), "--bert")
    model_type = config.get("model_type")
    architectures = ", ".join(config.get("architectures") or []) or "no architectures listed"
    if model_type == "vaswani":
        raise CompareInputError(
            f"--bert {name} is an hf_vaswani translation checkpoint (model_type 'vaswani', {architectures}), not a "
            "BERT: pass it as --model, and a BERT (e.g. bert-base-uncased) as --bert."
        )
    if model_type not in BERT_MODEL_TYPES:
        raise CompareInputError(
            f"--bert {name} is not a BERT model: its config says model_type {model_type!r} ({architectures}). "
            f"compare-bert needs a BERT encoder (model_type {' or '.join(map(repr, BERT_MODEL_TYPES))}), e.g. "
            f"{DEFAULT_BERT}."
        )
    if config.get("is_encoder_decoder"):
        raise CompareInputError(f"--bert {name} is an encoder-decoder model; compare-bert needs a BERT encoder.")
    return config


def load_bert(name: str = DEFAULT_BERT, *, device: str | None = None) -> tuple[Any, Any]:
    """Load a BERT (Hub id or local folder) as (model, tokenizer), with eager attention (returns its weights).

    Raises:
        CompareInputError: not a BERT (e.g. our own checkpoint, a GPT-2), unreachable Hub id, no fast tokenizer.
        FileNotFoundError: a path that does not exist.
    """
    check_bert(name)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(name))
        model = AutoModel.from_pretrained(str(name), attn_implementation="eager")
    except OSError as error:
        raise CompareInputError(f"Could not load BERT {name!r}: {error}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    if not getattr(tokenizer, "is_fast", False):
        raise CompareInputError(f"BERT {name!r} has no fast tokenizer (tokenizer.json): offsets are needed.")
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer


def load_ours(path: str | Path | None = None, *, device: str | None = None) -> tuple[Any, Any]:
    """Load our translation checkpoint (default: `hf_vaswani.paths.default_model_path()`) as (model, tokenizer).

    Raises:
        CompareInputError: the folder holds another kind of model (e.g. a BERT).
        FileNotFoundError: no such folder (or the default checkpoint is not there yet).
    """
    if path is not None and Path(path).is_dir():
        config = _config_dict(str(path), "--model")
        if config.get("model_type") != "vaswani":
            raise CompareInputError(
                f"--model {path} is not an hf_vaswani translation checkpoint (model_type "
                f"{config.get('model_type')!r}): --model takes our model, --bert the BERT."
            )
    model, tokenizer = load_model_and_tokenizer(path, device=device)
    return model, tokenizer


def max_positions(model: Any, tokenizer: Any = None) -> int | None:
    """The longest input (in tokens, special tokens included) that `model` (and `tokenizer`) accept, if known."""
    limits = [getattr(model.config, "max_position_embeddings", None)]
    if tokenizer is not None:
        limits.append(getattr(tokenizer, "model_max_length", None))
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min(limits) if limits else None


@contextmanager
def _causal(bert: Any, causal: bool) -> Iterator[None]:
    """BERT with a causal mask (`config.is_decoder=True`) inside, the original setting restored afterwards."""
    previous = bool(getattr(bert.config, "is_decoder", False))
    bert.config.is_decoder = causal
    try:
        yield
    finally:
        bert.config.is_decoder = previous


def bert_attention(bert: Any, pieces: Sequence[Pieces], *, causal: bool = False) -> list[np.ndarray]:
    """BERT's self-attention (layers, heads, N, N) for each tokenized sentence, padding stripped.

    `causal=True` masks every token's attention to the tokens after it (like our decoder's self-attention).
    """
    import torch

    width = max(len(p) for p in pieces)
    pad = getattr(bert.config, "pad_token_id", 0) or 0
    input_ids = torch.full((len(pieces), width), pad, dtype=torch.long)
    mask = torch.zeros((len(pieces), width), dtype=torch.long)
    for row, p in enumerate(pieces):
        input_ids[row, : len(p)] = torch.tensor(p.ids)
        mask[row, : len(p)] = 1
    device = next(bert.parameters()).device
    with torch.inference_mode(), _causal(bert, causal):
        outputs = bert(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            token_type_ids=torch.zeros_like(input_ids).to(device),
            output_attentions=True,
            use_cache=False,
            return_dict=True,
        )
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        raise AttentionUnavailableError(
            "BERT returned no attention weights (load it with attn_implementation='eager')."
        )
    stacked = torch.stack(tuple(attentions)).float().cpu().numpy()  # (L, B, H, W, W)
    result = []
    for row, p in enumerate(pieces):
        n = len(p)
        array = np.ascontiguousarray(stacked[:, row, :, :n, :n])
        if causal and np.abs(np.triu(array, k=1)).max(initial=0.0) > 1e-6:
            raise RuntimeError("BERT's causal mask did not apply: its attention reaches tokens to the right.")
        result.append(array)
    return result
