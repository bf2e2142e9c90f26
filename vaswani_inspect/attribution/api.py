"""`attribute`: one entry point for every method, and the lists of their names (`METHODS` ...), all read from the
registry (`vaswani_inspect.attribution.registry`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..record import AttentionRecord
from .checks import check_positive_int, check_record_ids
from .registry import method_entry, method_names
from .result import Attribution

#: Every method's name, attention first (the order a selector shows them in).
METHODS: tuple[str, ...]
#: The methods that measure the source-vs-prefix share (`Attribution.source_share` is not None).
SHARE_METHODS: tuple[str, ...]
#: The methods that run the model (the others read the record's attention only).
MODEL_METHODS: tuple[str, ...]
#: The methods that read gradients (through Captum).
GRADIENT_METHODS: tuple[str, ...]
#: The methods that take ``contrast=FOIL`` (those whose function declares a `contrast` option).
CONTRAST_METHODS: tuple[str, ...]

# Each list is the registry's (`vaswani_inspect.attribution.registry`), read on each access (`__getattr__`), so
# that a method registered after this module is imported is in every list.
_LISTS: dict[str, dict[str, bool]] = {
    "METHODS": {},
    "SHARE_METHODS": {"measures_share": True},
    "MODEL_METHODS": {"runs_model": True},
    "GRADIENT_METHODS": {"reads_gradients": True},
}


def __getattr__(name: str) -> tuple[str, ...]:
    if name in _LISTS:
        return method_names(**_LISTS[name])
    if name == "CONTRAST_METHODS":
        return _contrast_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def method_options(method: str) -> dict[str, Any]:
    """The options `method` accepts in `attribute(..., **options)`, with their defaults."""
    return method_entry(method).options


def check_method(method: str) -> str:
    """`method` if it names a method, else a ValueError listing them."""
    method_entry(method)
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
            with bfloat16 matmuls), `layers` (attention_norm: "aligner" or "mean"), `contrast` (the gradient methods,
            `CONTRAST_METHODS`: see below).

    Contrast ("why this word and not that one"): ``contrast=FOIL``, another translation as text ("I sat on the
    bench of the square" for "I sat on the bank of the square"), tokenized as the target is and of the same
    number of pieces. The target stays teacher-forced; at each row t where the foil's piece differs from the
    target's, the method explains log p(target piece) - log p(foil piece), both read after the target's own
    prefix (the question "why y_t and not f_t in this context", as inseq's ``contrast_prob_diff`` asks it);
    the rows where the two agree have nothing to contrast and get zero scores (zero rows in the matrix). The rows
    contrasted are in ``details["contrast_rows"]``, the foil's ids in ``details["contrast_ids"]``.

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

    A `contrast` given to a method that takes none (one without gradients), a foil equal to the target, or one of
    another number of pieces (its pieces and the target's named) is a ValueError.
    """
    entry = method_entry(method)
    allowed = entry.options
    if "contrast" in options and "contrast" not in allowed:
        raise ValueError(
            f"The {method!r} attribution takes no contrast (a foil translation): it reads no gradients of an output "
            f"it could contrast. Methods that take contrast=: {', '.join(_contrast_methods())}."
        )
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(
            f"The {method!r} attribution takes no option {', '.join(unknown)}; it takes {', '.join(allowed) or 'none'}."
        )
    for name in ("n_steps", "batch_size"):
        if name in options:
            check_positive_int(name, options[name])
    record = _record(model, tokenizer, record_or_source, target, direction, generate_kwargs)
    if options.get("contrast") is not None:
        options["contrast"] = foil_ids(model, tokenizer, record, options["contrast"])
    return entry.function(model, record, **options)


def _contrast_methods() -> tuple[str, ...]:
    return tuple(name for name in method_names() if "contrast" in method_entry(name).options)


def foil_ids(model: Any, tokenizer: Any, record: AttentionRecord, foil: str) -> list[int]:
    """The decoder ids of the translation `foil` (the layout of ``record.target_ids``: start token, pieces,
    ``</s>``), tokenized as `extract` tokenizes a target in the record's direction.

    Raises:
        ValueError: `foil` is not a string, spells the record's target, or has another number of pieces (the
            message lists both).
    """
    from ..extract import _direction, _target_ids
    from ..pieces import piece_labels

    if not isinstance(foil, str):
        raise ValueError(f"contrast must be a foil translation (a string), got {type(foil).__name__}.")
    how = _direction(model, tokenizer, record.direction)
    ids = _target_ids(model, tokenizer, [foil], how, None, False)[0]
    target = list(record.target_ids)
    if ids == target:
        raise ValueError(
            f"The foil {foil!r} is the target itself: nothing to contrast (give another translation, e.g. one word "
            "changed)."
        )
    if len(ids) != len(target):
        raise ValueError(
            f"The foil must have as many pieces as the target to be contrasted piece by piece: the foil "
            f"{piece_labels(tokenizer, ids)} has {len(ids)}, the target {record.target_tokens} {len(target)}."
        )
    return ids


def attribute_methods(
    model: Any,
    tokenizer: Any,
    record_or_source: AttentionRecord | str,
    target: str | None = None,
    *,
    methods: Sequence[str] | None = None,
    direction: str | None = None,
    generate_kwargs: dict[str, Any] | None = None,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Attribution]:
    """`attribute` with several methods on one translation (extracted once): method name -> `Attribution`, in the
    order of `methods` (None: every method, `METHODS`). `options` maps a method name to its options."""
    methods = method_names() if methods is None else methods
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
    "CONTRAST_METHODS",
    "GRADIENT_METHODS",
    "METHODS",
    "MODEL_METHODS",
    "SHARE_METHODS",
    "attribute",
    "attribute_methods",
    "check_method",
    "foil_ids",
    "method_options",
]
