"""Run an encoder-decoder model with `output_attentions=True` and return `AttentionRecord`s.

Row convention (see also `vaswani_inspect.record`): the teacher-forced pass feeds the decoder `<s>` followed by
the output tokens, and `record.target_tokens` holds exactly those decoder inputs. Row `t` of the decoder and
cross-attention is computed at decoder input `target_tokens[t]` and predicts `target_tokens[t + 1]`; so the
attention that *produced* output token `target_tokens[j]` is row `j - 1`, and the last row (input `</s>`) predicts
past the end of the translation.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from hf_vaswani.checked_source import is_checked
from hf_vaswani.directions import (
    Direction,
    code_tokens,
    resolve_direction,
    source_language_settings,
    target_language_settings,
)
from hf_vaswani.empty_input import check_text
from hf_vaswani.generation_options import GENERATE_ARGUMENTS, check_generation_options
from hf_vaswani.languages import LANGUAGE_TOKEN_PATTERN, is_language_token
from hf_vaswani.source_checks import check_known_characters, check_language_tokens

from .alignment.config import model_alignment
from .architectures import UnsupportedModelError, ensure_attention_weights, head_counts, position_limit
from .loading import load_model_and_tokenizer  # (re-exported: the commands and users import it from here)
from .pieces import mark_task_prefix, piece_labels
from .record import AttentionRecord, check_alignment

#: When `generate_kwargs` sets neither `max_new_tokens` nor `max_length`, translations may be this many tokens
#: longer than the source (and never longer than the model's `max_position_embeddings` allows).
DEFAULT_EXTRA_NEW_TOKENS = 16


class AttentionUnavailableError(RuntimeError):
    """The model did not return attention weights although `output_attentions=True` was asked for."""


def extract(
    model: torch.nn.Module,
    tokenizer: Any,
    source: str | Sequence[str],
    target: str | Sequence[str] | None = None,
    *,
    direction: str | None = None,
    generate_kwargs: dict[str, Any] | None = None,
    truncation: bool = False,
    batch_size: int = 16,
    model_name: str | None = None,
) -> AttentionRecord | list[AttentionRecord]:
    """Every attention matrix of a translation, as an `AttentionRecord` (a list of them for a list of sources).

    Args:
        model: an encoder-decoder `transformers` model (e.g. `VaswaniForConditionalGeneration`). It runs in eval
            mode under `torch.inference_mode()`; its training flag is restored afterwards.
        tokenizer: its tokenizer (a `PreTrainedTokenizerFast` with Metaspace pieces); `</s>` is appended to sources
            and targets that the tokenizer did not end with it.
        source: a sentence or a list of sentences. With `direction`, the target-language token (`>>en<<` for
            `"es-en"`) is put in front unless the text already starts with a `>>xx<<` token. `record.source_text`
            keeps the text as given (stripped); `record.source_tokens` show what the model read.
        target: `None` to translate first with `model.generate(**generate_kwargs)` (greedy by default; any setting
            works, beam search included) and then run ONE teacher-forced pass on the chosen output (the first
            returned sequence, i.e. the best beam) to recover the full matrices. A string (or a list, one per
            source) runs the teacher-forced pass on that reference instead.
        direction: `"src-tgt"`, e.g. `"es-en"`; stored in the record.
        generate_kwargs: keyword arguments for `generate()`. Without `max_new_tokens`/`max_length` the output may
            be `DEFAULT_EXTRA_NEW_TOKENS` tokens longer than the source, within the model's position limit.
        truncation: what to do with a source or target longer than the model's `max_position_embeddings`:
            `False` (default) raises a ValueError; `True` keeps the first tokens (ending with `</s>`) and warns.
        batch_size: sentences per forward pass. Padding is stripped from every example.
        model_name: stored in the record (default: the model's `name_or_path`).

    Returns:
        One `AttentionRecord` for a string source, a list for a list of sources. `record.target_tokens` are the
        decoder inputs `<s> y_1 ... y_n` (usually `y_n = </s>`); decoder/cross row t is read at input token t and
        predicts token t + 1 (see the module docstring). `record.alignment` is the model's `config.alignment`
        (how `vaswani_inspect.align` reads its alignments by default).

    Raises:
        ValueError: what the commands refuse (`hf_vaswani.source_checks`, `hf_vaswani.limits`: empty text, text
            mostly of unknown characters or special tokens, a ``>>xx<<`` not of the model's languages, beams or
            lengths it cannot generate), too-long text (without `truncation`), count mismatches, unknown direction.
        AttentionUnavailableError: the model returned no (or empty) attention weights.
        TypeError: `model` is not an encoder-decoder model.
    """
    single = isinstance(source, str)
    sources = [source] if single else list(source)
    targets = _check_arguments(sources, target, batch_size)
    config = _check_model(model)
    max_positions = position_limit(config)
    how = _direction(model, tokenizer, direction)
    source_ids = _source_ids(model, tokenizer, sources, how, max_positions, truncation)
    used_kwargs = None
    records: list[AttentionRecord] = []
    with _eval_mode(model), torch.inference_mode():
        if targets is None:
            used_kwargs = _generate_settings(model, generate_kwargs, source_ids, max_positions, how)
            decoder_ids = []
            for start in range(0, len(source_ids), batch_size):
                decoder_ids += _generate(model, tokenizer, source_ids[start : start + batch_size], used_kwargs)
        else:
            decoder_ids = _target_ids(model, tokenizer, targets, how, max_positions, truncation)
        for start in range(0, len(source_ids), batch_size):
            batch = slice(start, start + batch_size)
            records += _records_from_ids(model, tokenizer, source_ids[batch], decoder_ids[batch])
    name = model_name if model_name is not None else str(getattr(config, "_name_or_path", "") or type(model).__name__)
    for i, record in enumerate(records):
        record.source_text = sources[i].strip()
        record.target_text = targets[i] if targets is not None else _decode_output(tokenizer, record.target_ids)
        record.model_name = name
        record.direction = direction
        record.generate_kwargs = _json_safe(used_kwargs)
        mark_task_prefix(record, tokenizer, how)
    return records[0] if single else records


def _check_arguments(sources: list[str], target: str | Sequence[str] | None, batch_size: int) -> list[str] | None:
    """The list of targets (None: translate first), once the counts and the batch size are checked."""
    if not sources:
        raise ValueError("extract() got an empty list of sources.")
    targets: list[str] | None = None
    if target is not None:
        targets = [target] if isinstance(target, str) else list(target)
        if len(targets) != len(sources):
            raise ValueError(f"Got {len(sources)} sources but {len(targets)} targets: pass one target per source.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    return targets


def _source_ids(
    model: Any,
    tokenizer: Any,
    sources: list[str],
    direction: Direction | None,
    max_positions: int | None,
    truncation: bool,
) -> list[list[int]]:
    """The token ids of each source, as `direction` asks (language token, code or prefix), fitted to the model;
    warns about a source that names no target language when the vocabulary has language tokens."""
    texts = [_prepare_source(tokenizer, text, i, direction) for i, text in enumerate(sources)]
    eos = _eos_id(tokenizer, model)
    with source_language_settings(tokenizer, direction):
        source_ids = [
            _fit(_encode(tokenizer, text, "source"), max_positions, truncation, f"source #{i}", eos)
            for i, text in enumerate(texts)
        ]
    if direction is None and any(map(is_language_token, getattr(tokenizer, "all_special_tokens", []))):
        for i, ids in enumerate(source_ids):
            if not any(is_language_token(t) for t in tokenizer.convert_ids_to_tokens(ids)):
                warnings.warn(
                    f"source #{i} has no target-language token (>>xx<<): pass direction='es-en' or start the text "
                    "with '>>en<<', or the model may translate into the wrong language.",
                    stacklevel=3,
                )
    return source_ids


def _target_ids(
    model: Any,
    tokenizer: Any,
    targets: list[str],
    direction: Direction | None,
    max_positions: int | None,
    truncation: bool,
) -> list[list[int]]:
    """The decoder input ids of each given target: the decoder start token, then the target fitted to the model."""
    start = [_decoder_start_id(model), *(direction.target_start if direction is not None else [])]
    limit = None if max_positions is None else max_positions - len(start)
    decoder_ids = []
    for i, text in enumerate(targets):
        check_text(text, f"target #{i}")
        check_known_characters(tokenizer, [text], [f"target #{i}"])  # "</s>" alone is no translation to inspect
        with target_language_settings(tokenizer, direction):
            ids = _strip_leading_specials(tokenizer, _encode(tokenizer, text, f"target #{i}", target=True), start)
        if not ids:
            raise ValueError(f"target #{i} ({text!r}) has no tokens besides special tokens.")
        decoder_ids.append([*start, *_fit(ids, limit, truncation, f"target #{i}", _eos_id(tokenizer, model))])
    return decoder_ids


def record_from_ids(
    model: torch.nn.Module,
    tokenizer: Any,
    source_ids: Sequence[int],
    decoder_input_ids: Sequence[int],
    **fields: Any,
) -> AttentionRecord:
    """One teacher-forced pass on given ids: `source_ids` (ending with `</s>`) and `decoder_input_ids` (starting
    with the decoder start token `<s>`). Extra keyword arguments set record fields (`direction`, `model_name`...)."""
    if not source_ids or not decoder_input_ids:
        raise ValueError("record_from_ids() needs at least one source id and one decoder input id.")
    _check_model(model)
    with _eval_mode(model), torch.inference_mode():
        (record,) = _records_from_ids(model, tokenizer, [list(source_ids)], [list(decoder_input_ids)])
    for name, value in fields.items():
        setattr(record, name, value)
    return record


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[Any]:
    """Eval mode inside (no dropout on the weights), the previous mode restored afterwards."""
    was_training = bool(getattr(model, "training", False))
    if was_training:  # (switching modes walks every submodule: skip it when already in eval mode)
        model.eval()
    try:
        yield model
    finally:
        if was_training:
            model.train()


def _check_model(model: Any) -> Any:
    """The model's config, once the model is known to be an encoder-decoder whose attention can be read (it is
    switched to eager attention when it runs a kernel that returns no weights)."""
    config = getattr(model, "config", None)
    if config is None or not callable(model):
        raise TypeError(f"extract() needs a transformers encoder-decoder model, got {type(model).__name__}.")
    if not getattr(config, "is_encoder_decoder", False):
        raise TypeError(
            f"{type(model).__name__} is not an encoder-decoder model (config.is_encoder_decoder is False): "
            "there is no cross-attention to extract."
        )
    with contextlib.suppress(UnsupportedModelError):  # a model of another layout may return weights
        ensure_attention_weights(model)
    return config


def _direction(model: Any, tokenizer: Any, direction: str | None) -> Direction | None:
    return None if direction is None else resolve_direction(model, tokenizer, direction)


def _prepare_source(tokenizer: Any, text: Any, index: int, direction: Direction | None) -> str:
    """The source as the model reads it, checked as the commands check theirs (`hf_vaswani.source_checks`)."""
    check_text(text, f"source #{index}")
    checked = is_checked(text, direction.name if direction is not None else None)  # at the door (the demo)
    text = text.strip()
    leading = LANGUAGE_TOKEN_PATTERN.match(text)
    words = text[leading.end() :] if leading else text
    if not checked:
        check_language_tokens(tokenizer, text, f"source #{index}")
        if words.strip():
            check_known_characters(tokenizer, [words], [f"source #{index}"])
    if direction is None:
        return text
    if direction.scheme != "target_token":
        return f"{direction.source_prefix}{text}"
    language_token = direction.source_prefix.strip()
    if leading:
        if leading.group(0) != language_token:
            raise ValueError(f"source #{index} starts with {leading.group(0)} but direction asks for {language_token}.")
        if not text[len(language_token) :].strip():
            raise ValueError(f"source #{index} has a language token but no text.")
        return text
    return f"{language_token} {text}"


def _encode(tokenizer: Any, text: str, what: str, target: bool = False) -> list[int]:
    # A target is encoded as one: Marian tokenizers segment it with the target language's model.
    encoded = tokenizer(text_target=text) if target else tokenizer(text)
    ids = list(encoded["input_ids"])
    if not ids:
        raise ValueError(f"{what} ({text!r}) gives no tokens.")
    return ids


def _eos_id(tokenizer: Any, model: Any) -> int | None:
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        eos = getattr(model.config, "eos_token_id", None)
        if isinstance(eos, list):
            eos = eos[0] if eos else None
    return eos


def _pad_id(tokenizer: Any, model: Any) -> int:
    for value in (getattr(model.config, "pad_token_id", None), getattr(tokenizer, "pad_token_id", None)):
        if value is not None:
            return int(value)
    return 0


def _decoder_start_id(model: Any) -> int:
    config = model.config
    generation = getattr(model, "generation_config", None)
    for value in (
        getattr(generation, "decoder_start_token_id", None),
        getattr(config, "decoder_start_token_id", None),
        getattr(config, "bos_token_id", None),
    ):
        if value is not None:
            return int(value if not isinstance(value, list) else value[0])
    raise ValueError("The model config has no decoder_start_token_id (nor bos_token_id) to start the decoder with.")


def _fit(ids: list[int], limit: int | None, truncation: bool, what: str, eos_id: int | None) -> list[int]:
    """Append `</s>` when missing, then apply the position limit (error, or truncation with a warning)."""
    if eos_id is not None and ids[-1] != eos_id:
        ids = [*ids, eos_id]
    if limit is None or len(ids) <= limit:
        return ids
    if not truncation:
        raise ValueError(
            f"{what} has {len(ids)} tokens but the model accepts at most {limit} positions "
            "(max_position_embeddings): shorten it, or keep its first tokens with `hf-vaswani inspect --truncate` "
            "(truncation=True from Python)."
        )
    warnings.warn(f"{what} has {len(ids)} tokens; truncated to the model's {limit} positions.", stacklevel=3)
    return [*ids[: limit - 1], eos_id] if eos_id is not None else ids[:limit]


def _strip_leading_specials(tokenizer: Any, ids: list[int], added: Sequence[int] = ()) -> list[int]:
    """A reference target must not repeat `<s>` or carry a language token or code (`added`: M2M100 lists no codes
    among its special tokens): the decoder start and the direction's target code are added here."""
    bos = getattr(tokenizer, "bos_token_id", None)
    eos = getattr(tokenizer, "eos_token_id", None)
    specials = (set(getattr(tokenizer, "all_special_ids", []) or []) | set(added)) - {eos}
    tokens = tokenizer.convert_ids_to_tokens(ids)
    start = 0
    while start < len(ids) and (ids[start] == bos or ids[start] in specials or is_language_token(tokens[start])):
        start += 1
    return ids[start:]


def _generate_settings(
    model: Any,
    generate_kwargs: dict[str, Any] | None,
    source_ids: list[list[int]],
    max_positions: int | None,
    direction: Direction | None = None,
) -> dict[str, Any]:
    settings = {**(direction.generate_settings if direction is not None else {}), **(generate_kwargs or {})}
    for reserved in ("input_ids", "attention_mask", "inputs"):
        if reserved in settings:
            raise ValueError(f"generate_kwargs must not contain {reserved!r}: extract() builds it from the source.")
    check_generation_options(model, settings, other_arguments=GENERATE_ARGUMENTS)
    if "max_new_tokens" not in settings and "max_length" not in settings:
        wanted = max(len(ids) for ids in source_ids) + DEFAULT_EXTRA_NEW_TOKENS
        settings["max_new_tokens"] = wanted if max_positions is None else max(1, min(wanted, max_positions - 1))
    return settings


def _pad(batch: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, sequence in enumerate(batch):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids.to(device), mask.to(device)


def _device(model: Any) -> torch.device:
    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


def _generate(model: Any, tokenizer: Any, batch: list[list[int]], settings: dict[str, Any]) -> list[list[int]]:
    """Translate a batch and return, per source, the chosen output as decoder inputs (`<s> ... </s>`)."""
    if not hasattr(model, "generate"):
        raise TypeError(f"{type(model).__name__} has no generate(): pass target= to inspect a given translation.")
    input_ids, attention_mask = _pad(batch, _pad_id(tokenizer, model), _device(model))
    output = model.generate(input_ids=input_ids, attention_mask=attention_mask, **settings)
    sequences = output.sequences if hasattr(output, "sequences") else output
    per_source = sequences.shape[0] // len(batch)
    eos_id, pad_id, start_id = _eos_id(tokenizer, model), _pad_id(tokenizer, model), _decoder_start_id(model)
    chosen = []
    for i in range(len(batch)):
        ids = sequences[i * per_source].tolist()  # the first returned sequence of each source: the best beam
        if not ids or ids[0] != start_id:
            ids = [start_id, *ids]
        end = len(ids)
        if eos_id is not None and eos_id in ids[1:]:
            end = ids.index(eos_id, 1) + 1
        else:
            while end > 1 and ids[end - 1] == pad_id:
                end -= 1
        chosen.append(ids[:end])
    return chosen


def _decode_output(tokenizer: Any, decoder_ids: list[int]) -> str:
    return tokenizer.decode(decoder_ids[1:], skip_special_tokens=True).strip()


def _json_safe(value: Any) -> Any:
    """A JSON-serialisable copy (objects such as a GenerationConfig become their repr)."""
    if value is None:
        return None
    return json.loads(json.dumps(value, default=repr))


def _special_tokens(tokenizer: Any) -> list[str]:
    unk = getattr(tokenizer, "unk_token", None)
    specials = [t for t in getattr(tokenizer, "all_special_tokens", []) if t != unk]
    return list(dict.fromkeys([*specials, *code_tokens(tokenizer)]))


def _attention_tuple(outputs: Any, name: str, expected_layers: int | None) -> tuple[torch.Tensor, ...]:
    value = getattr(outputs, name, None)
    why = (
        "the attention implementation does not return weights (sdpa/flash attention in most transformers models: "
        "load the model with attn_implementation='eager')"
    )
    if value is None:
        raise AttentionUnavailableError(f"The model returned no {name} with output_attentions=True: {why}.")
    value = tuple(value)
    if len(value) == 0 or any(layer is None or layer.numel() == 0 for layer in value):
        raise AttentionUnavailableError(f"The model returned empty {name} with output_attentions=True: {why}.")
    if expected_layers is not None and len(value) != expected_layers:
        raise AttentionUnavailableError(
            f"The model returned {len(value)} {name} for {expected_layers} layers in its config."
        )
    if any(layer.dim() != 4 for layer in value):
        raise AttentionUnavailableError(f"{name} must be (batch, heads, queries, keys) tensors.")
    return value


def _layer_counts(model: Any) -> dict[str, int | None]:
    try:
        return {kind: count for kind, (count, _) in head_counts(model).items()}
    except UnsupportedModelError:  # attention modules not found: read the counts from the config
        config = model.config
        decoder = getattr(config, "decoder_layers", None)
        return {"encoder": getattr(config, "encoder_layers", None), "decoder": decoder, "cross": decoder}


def _records_from_ids(
    model: Any, tokenizer: Any, sources: list[list[int]], decoder_inputs: list[list[int]]
) -> list[AttentionRecord]:
    device = _device(model)
    pad_id = _pad_id(tokenizer, model)
    input_ids, attention_mask = _pad(sources, pad_id, device)
    decoder_ids, decoder_mask = _pad(decoder_inputs, pad_id, device)
    # Masks only where there is padding: an all-ones mask changes nothing but costs a mask construction.
    outputs = model(
        input_ids=input_ids,
        attention_mask=None if bool(attention_mask.all()) else attention_mask,
        decoder_input_ids=decoder_ids,
        decoder_attention_mask=None if bool(decoder_mask.all()) else decoder_mask,
        output_attentions=True,
        use_cache=False,
        return_dict=True,
    )
    config = model.config
    layers = _layer_counts(model)
    encoder = _attention_tuple(outputs, "encoder_attentions", layers["encoder"])
    decoder = _attention_tuple(outputs, "decoder_attentions", layers["decoder"])
    cross = _attention_tuple(outputs, "cross_attentions", layers["cross"])
    # One device->host copy per kind: (layers, batch, heads, queries, keys).
    arrays = [torch.stack(layers).float().cpu().numpy() for layers in (encoder, decoder, cross)]
    specials = _special_tokens(tokenizer)
    alignment = check_alignment(model_alignment(config))  # how this model's alignments are read
    records = []
    for b, (src, tgt) in enumerate(zip(sources, decoder_inputs)):
        s, t = len(src), len(tgt)
        enc = np.ascontiguousarray(arrays[0][:, b, :, :s, :s])
        dec = np.ascontiguousarray(arrays[1][:, b, :, :t, :t])
        crs = np.ascontiguousarray(arrays[2][:, b, :, :t, :s])
        for name, array in (("encoder", enc), ("decoder", dec), ("cross", crs)):
            if not np.all(np.isfinite(array)):
                raise AttentionUnavailableError(f"The model returned non-finite {name} attention weights.")
        records.append(
            AttentionRecord(
                source_tokens=piece_labels(tokenizer, src),
                target_tokens=piece_labels(tokenizer, tgt),
                source_ids=src,
                target_ids=tgt,
                encoder=enc,
                decoder=dec,
                cross=crs,
                special_tokens=specials,
                alignment=alignment,
            )
        )
    return records


__all__ = ["AttentionUnavailableError", "extract", "load_model_and_tokenizer", "record_from_ids"]
