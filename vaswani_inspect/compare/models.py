"""The two models of the comparison: loading a BERT-family encoder and our translation checkpoint (each checked to be
what it should be), and running the encoder to get its self-attention, bidirectional or causally masked.

`--bert` takes any encoder of `BERT_FAMILIES` (BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA, DeBERTa-v2); what
differs between them is handled here: the position limit (`max_positions`: RoBERTa-style positions start after the
padding index) and how a causal mask reaches the attention (`bert_attention`). Their tokenizers need nothing special:
pieces are mapped to words through character offsets (`words.encode_pieces`), never by reading "##", "Ġ" or "▁".

`--model` takes our translation checkpoint; what it accepts is decided in ONE place, `our_model_problem`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_vaswani.architectures import MODEL_TYPES

from ..extract import AttentionUnavailableError, load_model_and_tokenizer
from .errors import CompareInputError
from .words import Pieces

__all__ = [
    "BERT_FAMILIES",
    "BERT_MODEL_TYPES",
    "DECODER_DIRECTION",
    "DEFAULT_BERT",
    "ENCODER_DIRECTION",
    "OUR_MODEL_TYPES",
    "bert_attention",
    "check_bert",
    "check_ours",
    "ensure_eager_attention",
    "family_name",
    "load_bert",
    "load_ours",
    "max_positions",
    "our_model_problem",
]

DEFAULT_BERT = "bert-base-uncased"
#: The encoders `load_bert` accepts: `config.model_type` -> the family's name in messages and reports.
BERT_FAMILIES: dict[str, str] = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "distilbert": "DistilBERT",
    "electra": "ELECTRA",
    "deberta-v2": "DeBERTa-v2",
}
#: `config.model_type` values accepted by `load_bert` (the keys of `BERT_FAMILIES`).
BERT_MODEL_TYPES: tuple[str, ...] = tuple(BERT_FAMILIES)
#: Families whose position ids start after the padding index (`padding_idx + 1`, as RoBERTa counts them): they read
#: at most `max_position_embeddings - pad_token_id - 1` tokens.
_POSITIONS_AFTER_PADDING = frozenset({"roberta", "xlm-roberta"})
#: Families whose encoder builds its attention mask itself from a 2-D padding mask (no 4-D mask argument): the
#: causal mask is applied where the encoder builds it (`_masked_encoder`).
_MASK_BUILT_BY_ENCODER = frozenset({"deberta-v2"})
#: `config.model_type` values that `--model` (`load_ours`) accepts: the encoder-decoders the toolkit knows
#: (`vaswani_inspect.architectures`): ours, Marian, M2M100/NLLB, mBART, BART, T5. Each reads the English through
#: its direction (`vaswani_inspect.directions`): a language token, a language code or a task prefix.
OUR_MODEL_TYPES = MODEL_TYPES
#: Our direction for the encoder pass: English source, Spanish target (source text `>>es<< sentence`).
ENCODER_DIRECTION = "en-es"
#: Our direction for the decoder pass: Spanish source, English target read by the decoder.
DECODER_DIRECTION = "es-en"


def family_name(model_type: Any) -> str:
    """The name of a BERT family (`"RoBERTa"` for `"roberta"`); `"BERT"` for a type outside `BERT_FAMILIES`."""
    return BERT_FAMILIES.get(str(model_type), "BERT")


def _accepted_families() -> str:
    names = list(BERT_FAMILIES.values())
    types = ", ".join(map(repr, BERT_FAMILIES))
    return f"{', '.join(names[:-1])} or {names[-1]} encoder (model_type {types}), e.g. {DEFAULT_BERT}"


def our_model_problem(config: dict[str, Any]) -> str | None:
    """Why the model of `config` (a config.json dict) cannot be the `--model` side, or None if it can.

    The one place that decides what `--model` / `load_ours` accepts (today: `OUR_MODEL_TYPES`).
    """
    model_type = config.get("model_type")
    if model_type in OUR_MODEL_TYPES:
        return None
    return (
        f"is not a translation model the toolkit can read (model_type {model_type!r}; it takes "
        f"{', '.join(OUR_MODEL_TYPES)})"
    )


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
    """The config dict of `name` if it is an encoder of `BERT_FAMILIES`, else a `CompareInputError` saying what it is
    and what is accepted."""
    config = _config_dict(str(name), "--bert")
    model_type = config.get("model_type")
    architectures = ", ".join(config.get("architectures") or []) or "no architectures listed"
    what = f"model_type {model_type!r}, {architectures}" if model_type else f"no model_type, {architectures}"
    accepted = f"--bert takes a {_accepted_families()}"
    if our_model_problem(config) is None:
        raise CompareInputError(
            f"--bert {name} is a translation checkpoint for --model ({what}), not a BERT-family encoder: pass it "
            f"as --model. {accepted}."
        )
    if config.get("is_encoder_decoder"):
        raise CompareInputError(
            f"--bert {name} is an encoder-decoder model ({what}), not a BERT-family encoder. {accepted}."
        )
    if model_type not in BERT_FAMILIES:
        raise CompareInputError(f"--bert {name} is not a BERT-family encoder ({what}). {accepted}.")
    if config.get("is_decoder"):
        raise CompareInputError(
            f"--bert {name} is a {family_name(model_type)} configured as a causal decoder (is_decoder: true, "
            f"{architectures}), not a bidirectional encoder. {accepted}."
        )
    return config


def load_bert(name: str = DEFAULT_BERT, *, device: str | None = None) -> tuple[Any, Any]:
    """Load a BERT-family encoder (`BERT_FAMILIES`; Hub id or local folder) as (model, tokenizer), the model with
    eager attention (the fused kernels return no attention weights).

    Raises:
        CompareInputError: not a BERT-family encoder (e.g. our own checkpoint, a GPT-2, a translation model; see
            `check_bert`), unreachable Hub id, no fast tokenizer.
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
        raise CompareInputError(f"Could not load --bert {name!r}: {error}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    if not getattr(tokenizer, "is_fast", False):
        raise CompareInputError(f"--bert {name!r} has no fast tokenizer (tokenizer.json): offsets are needed.")
    if device is not None:
        model = model.to(device)
    return model.eval(), tokenizer


def check_ours(path: str | Path | None) -> None:
    """Refuse a local `--model` folder that holds another kind of model (e.g. a BERT), before anything is loaded.
    `None` (the shipped checkpoint) and Hub ids are left to the loading.

    Raises:
        CompareInputError: `our_model_problem` says the folder's model cannot be compared.
    """
    if path is None or not Path(path).expanduser().is_dir():
        return
    config = _config_dict(str(path), "--model")
    problem = our_model_problem(config)
    if problem is not None:
        raise CompareInputError(f"--model {path} {problem}: --model takes our model, --bert the BERT-family encoder.")


def load_ours(path: str | Path | None = None, *, device: str | None = None) -> tuple[Any, Any]:
    """Load our translation checkpoint (default: `hf_vaswani.paths.default_model_path()`) as (model, tokenizer):
    `check_ours`, then `vaswani_inspect.extract.load_model_and_tokenizer`, the toolkit's one loader.

    Raises:
        CompareInputError: the folder holds another kind of model (e.g. a BERT).
        FileNotFoundError: no such folder (or the default checkpoint is not there yet).
    """
    check_ours(path)
    model, tokenizer = load_model_and_tokenizer(path, device=device)
    return model, tokenizer


def max_positions(model: Any, tokenizer: Any = None) -> int | None:
    """The longest input (in tokens, special tokens included) that `model` (and `tokenizer`) accept, if known.

    RoBERTa and XLM-RoBERTa number positions from `pad_token_id + 1`: `max_position_embeddings` 514 reads 512 tokens.
    """
    config = model.config
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and getattr(config, "model_type", None) in _POSITIONS_AFTER_PADDING:
        positions -= int(getattr(config, "pad_token_id", None) or 0) + 1
    limits = [positions]
    if tokenizer is not None:
        limits.append(getattr(tokenizer, "model_max_length", None))
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min(limits) if limits else None


def ensure_eager_attention(bert: Any) -> str | None:
    """Switch a model loaded with a fused attention kernel (sdpa, flash: no attention weights) to eager attention.

    Returns the implementation it had when it was switched, else None (already eager, or the model cannot say).
    `load_bert` loads eager already; this is for a model loaded elsewhere and passed to `compare_bert`.
    """
    implementation = getattr(getattr(bert, "config", None), "_attn_implementation", None)
    if implementation in (None, "eager") or not hasattr(bert, "set_attn_implementation"):
        return None
    bert.set_attn_implementation("eager")
    return str(implementation)


@contextlib.contextmanager
def _masked_encoder(bert: Any, allowed: Any) -> Iterator[None]:
    """DeBERTa-v2: its encoder turns the 2-D padding mask into a (batch, 1, N, N) mask (`get_attention_mask`) and
    takes no other; inside, that mask is also restricted to `allowed` (batch, N, N). The method is restored after."""
    encoder = bert.encoder
    build = type(encoder).get_attention_mask.__get__(encoder)
    encoder.get_attention_mask = lambda mask: build(mask) * allowed[:, None].to(mask.dtype)
    try:
        yield
    finally:
        del encoder.get_attention_mask


def bert_attention(bert: Any, pieces: Sequence[Pieces], *, causal: bool = False) -> list[np.ndarray]:
    """The encoder's self-attention (layers, heads, N, N) for each tokenized sentence, padding stripped.

    `causal=True` masks every token's attention to the tokens after it (like our decoder's self-attention): a 4-D
    additive mask, which transformers' BERT-family models take as it is, or for DeBERTa-v2 the mask its encoder
    builds (`_masked_encoder`). Checked on the weights returned.
    """
    import torch

    width = max(len(p) for p in pieces)
    pad = getattr(bert.config, "pad_token_id", 0) or 0
    device = next(bert.parameters()).device
    input_ids = torch.full((len(pieces), width), pad, dtype=torch.long)
    padding = torch.zeros((len(pieces), width), dtype=torch.long)
    for row, p in enumerate(pieces):
        input_ids[row, : len(p)] = torch.tensor(p.ids)
        padding[row, : len(p)] = 1
    input_ids, padding = input_ids.to(device), padding.to(device)
    attention_mask, context = padding, contextlib.nullcontext()
    if causal:
        lower = torch.ones((width, width), dtype=torch.bool, device=device).tril()
        allowed = padding.bool()[:, None, :] & lower  # (batch, query, key): earlier real tokens only
        if getattr(bert.config, "model_type", None) in _MASK_BUILT_BY_ENCODER:
            context = _masked_encoder(bert, allowed)
        else:
            dtype = next(bert.parameters()).dtype
            attention_mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
            attention_mask = attention_mask.masked_fill(~allowed, torch.finfo(dtype).min)[:, None]
    with torch.inference_mode(), context:
        outputs = bert(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True, return_dict=True)
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        raise AttentionUnavailableError(
            "The BERT-family encoder returned no attention weights (load it with attn_implementation='eager')."
        )
    stacked = torch.stack(tuple(attentions)).float().cpu().numpy()  # (L, B, H, W, W)
    result = []
    for row, p in enumerate(pieces):
        n = len(p)
        array = np.ascontiguousarray(stacked[:, row, :, :n, :n])
        if causal and np.abs(np.triu(array, k=1)).max(initial=0.0) > 1e-6:
            raise RuntimeError("The causal mask did not apply: the encoder's attention reaches tokens to the right.")
        result.append(array)
    return result
