"""Translation metrics: sacrebleu's BLEU and chrF, offline, for `evaluate` and `Seq2SeqTrainer`.

* `compute_translation_metrics(predictions, references)`: BLEU and chrF of detokenized text.
* `make_compute_metrics(tokenizer)`: a ``compute_metrics`` function for `transformers.Seq2SeqTrainer`
  (with ``predict_with_generate=True``) that decodes the generated ids and the labels first.
* `load_metric()` / `METRIC_PATH`: the same scores as an `evaluate` metric, ``evaluate.load(METRIC_PATH)``,
  which works with ``HF_HUB_OFFLINE=1`` (``evaluate.load("sacrebleu")`` needs the Hub).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .bleu_chrf.bleu_chrf import BleuChrf, score_translations

if TYPE_CHECKING:
    import evaluate
    from transformers import EvalPrediction, PreTrainedTokenizerBase

__all__ = [
    "METRIC_PATH",
    "BleuChrf",
    "compute_translation_metrics",
    "load_metric",
    "make_compute_metrics",
]

#: Folder of the local `evaluate` metric module: ``evaluate.load(METRIC_PATH)``.
METRIC_PATH: str = str(Path(__file__).resolve().parent / "bleu_chrf")

#: Value that `transformers` uses for positions to ignore in labels (and for padding gathered predictions).
IGNORE_INDEX = -100


def load_metric(**kwargs: Any) -> evaluate.EvaluationModule:
    """``evaluate.load`` the local BLEU + chrF metric (no network needed); `kwargs` go to `evaluate.load`."""
    import evaluate

    return evaluate.load(METRIC_PATH, **kwargs)


def compute_translation_metrics(
    predictions: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
) -> dict[str, Any]:
    """Corpus BLEU and chrF (sacrebleu defaults) of detokenized `predictions` against `references`.

    Args:
        predictions: one translation per segment.
        references: one reference per segment, or a list of references per segment (same count for all).

    Returns:
        ``{"bleu": float, "chrf": float, "bleu_precisions": [...], "bleu_brevity_penalty": float,
        "bleu_sys_len": int, "bleu_ref_len": int, "bleu_signature": str, "chrf_signature": str}``; scores are
        on a 0-100 scale.

    Raises:
        ValueError: if there is no prediction or the numbers of predictions and references differ.
    """
    return score_translations(predictions, references)


def _decode(tokenizer: PreTrainedTokenizerBase, ids: Any) -> list[str]:
    ids = np.asarray(ids)
    if ids.ndim == 1:
        ids = ids[None, :]
    ids = np.where(ids < 0, tokenizer.pad_token_id, ids)
    return [text.strip() for text in tokenizer.batch_decode(ids.tolist(), skip_special_tokens=True)]


def make_compute_metrics(
    tokenizer: PreTrainedTokenizerBase,
) -> Callable[[EvalPrediction | tuple[Any, Any]], dict[str, float]]:
    """A ``compute_metrics`` function for `Seq2SeqTrainer` that reports BLEU, chrF and the mean output length.

    It expects generated token ids (``Seq2SeqTrainingArguments(predict_with_generate=True)``). Before
    decoding, every negative id is replaced with the pad id: -100 marks the ignored label positions, and the
    Trainer also pads generated predictions with -100 when it gathers batches. Special tokens are skipped.

    Returns:
        A function of an `EvalPrediction` (or a ``(predictions, label_ids)`` tuple) returning
        ``{"bleu": ..., "chrf": ..., "gen_len": ...}``, where ``gen_len`` is the mean number of non-pad
        tokens of the predictions.
    """
    if tokenizer.pad_token_id is None:
        raise ValueError("make_compute_metrics needs a tokenizer with a pad token.")

    def compute_metrics(eval_prediction: EvalPrediction | tuple[Any, Any]) -> dict[str, float]:
        predictions, labels = eval_prediction[0], eval_prediction[1]
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions = np.asarray(predictions)
        if predictions.ndim == 3:
            raise ValueError(
                "compute_metrics got logits, not token ids: set predict_with_generate=True in "
                "Seq2SeqTrainingArguments so that the Trainer generates translations."
            )
        decoded_predictions = _decode(tokenizer, predictions)
        decoded_labels = _decode(tokenizer, labels)
        scores = score_translations(decoded_predictions, decoded_labels)
        cleaned = np.where(predictions < 0, tokenizer.pad_token_id, predictions)
        gen_len = float(np.mean(np.count_nonzero(cleaned != tokenizer.pad_token_id, axis=-1)))
        return {"bleu": scores["bleu"], "chrf": scores["chrf"], "gen_len": gen_len}

    return compute_metrics
