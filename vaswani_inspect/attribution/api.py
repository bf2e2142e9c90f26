"""`attribute`: one entry for every method, and the registry of their names (`METHODS`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..record import AttentionRecord
from .alti import alti_plus_scores
from .attention import attention_matrix, attention_norm_matrix
from .checks import check_positive_int, check_record_ids
from .gradients import DEFAULT_BATCH_SIZE, DEFAULT_STEPS, gradient_scores
from .pooling import pool_to_words, source_shares
from .result import Attribution
from .rollout import decoder_rollout
from .value_zeroing import value_zeroing_scores


def _attention(model: Any, record: AttentionRecord) -> Attribution:
    return Attribution("attention", record, attention_matrix(record), settings={"reading": record.alignment})


def _attention_norm(model: Any, record: AttentionRecord, *, layers: str = "aligner") -> Attribution:
    matrix, settings = attention_norm_matrix(model, record, layers)
    return Attribution("attention_norm", record, matrix, settings=settings)


def _rollout(model: Any, record: AttentionRecord) -> Attribution:
    source, prefix = decoder_rollout(record)
    return Attribution(
        "rollout",
        record,
        pool_to_words(source, record),
        source_shares(source, prefix, record),
        token_scores=source,
        prefix_scores=prefix,
        settings={"heads": "mean", "residual": 0.5, "source_share": "constant: 1 - 0.5 ** decoder layers"},
    )


def _alti_plus(model: Any, record: AttentionRecord) -> Attribution:
    source, prefix = alti_plus_scores(model, record)
    return Attribution(
        "alti_plus",
        record,
        pool_to_words(source, record),
        source_shares(source, prefix, record),
        token_scores=source,
        prefix_scores=prefix,
        settings={"distance": "manhattan", "blocks": "attention + residual + layer norm", "heads": "all"},
    )


def _gradient(name: str) -> Callable[..., Attribution]:
    def run(
        model: Any,
        record: AttentionRecord,
        *,
        n_steps: int = DEFAULT_STEPS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        precision: str = "float32",
    ) -> Attribution:
        source, prefix, settings, details = gradient_scores(
            model, record, name, n_steps=n_steps, batch_size=batch_size, precision=precision
        )
        return Attribution(
            name,
            record,
            pool_to_words(source, record),
            source_shares(source, prefix, record),
            token_scores=source,
            prefix_scores=prefix,
            settings=settings,
            details=details,
        )

    return run


def _saliency(
    model: Any, record: AttentionRecord, *, batch_size: int = DEFAULT_BATCH_SIZE, precision: str = "float32"
) -> Attribution:
    return _gradient("saliency")(model, record, batch_size=batch_size, precision=precision)


def _input_x_gradient(
    model: Any, record: AttentionRecord, *, batch_size: int = DEFAULT_BATCH_SIZE, precision: str = "float32"
) -> Attribution:
    return _gradient("input_x_gradient")(model, record, batch_size=batch_size, precision=precision)


def _value_zeroing(model: Any, record: AttentionRecord, *, batch_size: int = 64) -> Attribution:
    scores = value_zeroing_scores(model, record, batch_size=batch_size)
    settings = {"zeroed": "cross-attention values, every decoder layer", "distance": "cosine"}
    return Attribution("value_zeroing", record, pool_to_words(scores, record), token_scores=scores, settings=settings)


_REGISTRY: dict[str, Callable[..., Attribution]] = {
    "attention": _attention,
    "attention_norm": _attention_norm,
    "rollout": _rollout,
    "saliency": _saliency,
    "input_x_gradient": _input_x_gradient,
    "integrated_gradients": _gradient("integrated_gradients"),
    "value_zeroing": _value_zeroing,
    "alti_plus": _alti_plus,
}
#: Every method's name, attention first (the order a selector shows them in).
METHODS: tuple[str, ...] = tuple(_REGISTRY)
#: The methods that measure the source-vs-prefix share (`Attribution.source_share` is not None).
SHARE_METHODS: tuple[str, ...] = ("alti_plus", "rollout", "saliency", "input_x_gradient", "integrated_gradients")
#: The methods that run the model (the others read the record's attention only).
MODEL_METHODS: tuple[str, ...] = (
    "attention_norm",
    "saliency",
    "input_x_gradient",
    "integrated_gradients",
    "value_zeroing",
    "alti_plus",
)


def method_options(method: str) -> dict[str, Any]:
    """The options `method` accepts in `attribute(..., **options)`, with their defaults."""
    function = _REGISTRY[check_method(method)]
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


def check_method(method: str) -> str:
    """`method` if it names a method, else a ValueError listing them."""
    if method not in _REGISTRY:
        raise ValueError(f"Unknown attribution method {method!r}: choose one of {', '.join(METHODS)}.")
    return method


def attribute(
    model: Any,
    tokenizer: Any,
    record_or_source: AttentionRecord | str,
    target: str | None = None,
    *,
    direction: str | None = None,
    method: str = "attention",
    generate_kwargs: dict[str, Any] | None = None,
    **options: Any,
) -> Attribution:
    """Which source words each target word of a translation comes from, by one method.

    Args:
        model: an encoder-decoder model (`VaswaniForConditionalGeneration`); it runs in eval mode, its training flag
            restored afterwards. The attention-only methods ("attention", "rollout") do not run it when given a
            record.
        tokenizer: its tokenizer (used only to extract a record from text).
        record_or_source: an `AttentionRecord` from `vaswani_inspect.extract` (token level): its attention is reused
            and its target is the one explained; or a source sentence, extracted first with `target`, `direction`
            and `generate_kwargs` (`extract(model, tokenizer, source, target, direction=..., ...)`).
        target: a reference to explain teacher-forced; None translates first (greedy unless `generate_kwargs`).
            Only with a source text.
        direction: e.g. `"es-en"` (puts the language token in front of a source text). Only with a source text.
        method: one of `METHODS` (see the package docstring for each one's definition).
        options: the method's own options (`method_options(method)`): `n_steps` (integrated gradients, default
            `DEFAULT_STEPS`), `batch_size` (gradient methods and value zeroing: batch rows per call),
            `precision` (gradient methods: "float32", or "bfloat16" under autocast, about 2.3 times faster on a CPU
            with bfloat16 matmuls), `layers` (attention_norm: "aligner" or "mean").

    Returns:
        An `Attribution` with the word-level matrix (target words x source words, the words of
        `alignment_matrix(record)`, rows summing to 1), the source-vs-prefix share where the method measures one
        (`SHARE_METHODS`), and the token-level scores.

    Raises:
        ValueError: an unknown method, a word-level record, target/direction given with a record, a direction the
            model does not translate, `n_steps` or `batch_size` not a positive integer, integrated gradients whose
            steps x positions exceed `checks.MAX_STEP_POSITIONS`, a record whose ids are not its tokens (with this
            tokenizer) or not in the model's vocabulary.
        TypeError: an option the method does not take.
    """
    function = _REGISTRY[check_method(method)]
    allowed = method_options(method)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(
            f"The {method!r} attribution takes no option {', '.join(unknown)}; it takes {', '.join(allowed) or 'none'}."
        )
    for name in ("n_steps", "batch_size"):
        if name in options:
            check_positive_int(name, options[name])
    record = _record(model, tokenizer, record_or_source, target, direction, generate_kwargs)
    return function(model, record, **options)


def attribute_methods(
    model: Any,
    tokenizer: Any,
    record_or_source: AttentionRecord | str,
    target: str | None = None,
    *,
    methods: Sequence[str] = METHODS,
    direction: str | None = None,
    generate_kwargs: dict[str, Any] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Attribution]:
    """`attribute` with several methods on one translation (extracted once): method name -> `Attribution`, in the
    order of `methods`. `options` maps a method name to its options."""
    for method in methods:
        check_method(method)
    record = _record(model, tokenizer, record_or_source, target, direction, generate_kwargs)
    options = options or {}
    return {method: attribute(model, tokenizer, record, method=method, **options.get(method, {})) for method in methods}


def _record(
    model: Any,
    tokenizer: Any,
    record_or_source: AttentionRecord | str,
    target: str | None,
    direction: str | None,
    generate_kwargs: dict[str, Any] | None,
) -> AttentionRecord:
    if isinstance(record_or_source, AttentionRecord):
        if target is not None or direction is not None or generate_kwargs is not None:
            raise ValueError("attribute() got a record: its target and direction are the record's (pass no target).")
        if record_or_source.level != "token":
            raise ValueError("attribute() needs a token-level record (one from extract, before to_words).")
        check_record_ids(model, tokenizer, record_or_source)
        return record_or_source
    if not isinstance(record_or_source, str):
        kind = type(record_or_source).__name__
        raise TypeError(f"attribute() takes an AttentionRecord or a source string, got {kind}.")
    from ..extract import extract

    return extract(model, tokenizer, record_or_source, target, direction=direction, generate_kwargs=generate_kwargs)


__all__ = [
    "METHODS",
    "MODEL_METHODS",
    "SHARE_METHODS",
    "attribute",
    "attribute_methods",
    "check_method",
    "method_options",
]
