"""BLEU and chrF with sacrebleu, as a local 🤗 `evaluate` metric that works offline.

`evaluate.load("sacrebleu")` fetches its script from the Hugging Face Hub, so it fails without a network. This
file is a self-contained metric module: load it with ``evaluate.load("<path to this folder>")`` (the folder
and the file share the name ``bleu_chrf``), or instantiate `BleuChrf` directly. It only imports `datasets`,
`evaluate` and `sacrebleu`, so `evaluate` can copy it to its module cache on its own.

Scores are sacrebleu's corpus BLEU (13a tokenization, exponential smoothing) and chrF (character 6-grams,
beta 2), on DETOKENIZED text, exactly as ``sacrebleu.corpus_bleu`` and ``sacrebleu.corpus_chrf`` with their
default settings compute them.
"""

from collections.abc import Sequence
from typing import Any

import datasets
import evaluate
import sacrebleu

_DESCRIPTION = """\
Corpus-level BLEU and chrF computed with the installed sacrebleu package (default settings), on detokenized
predictions and references. Runs offline: nothing is fetched from the Hugging Face Hub.
"""

_CITATION = """\
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
@inproceedings{popovic-2015-chrf,
    title = "chr{F}: character n-gram {F}-score for automatic {MT} evaluation",
    author = "Popovi{\\'c}, Maja",
    booktitle = "Proceedings of the Tenth Workshop on Statistical Machine Translation",
    year = "2015",
    pages = "392--395",
}
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the system's translations, detokenized.
    references (list of str, or list of list of str): one reference per prediction, or several (the same
        number for every prediction).
    lowercase (bool): lowercase before scoring BLEU (default False).
    tokenize (str): sacrebleu's BLEU tokenizer (default "13a").
Returns:
    bleu (float): corpus BLEU, 0-100.
    chrf (float): corpus chrF, 0-100.
    bleu_precisions (list of float): the 1- to 4-gram precisions, 0-100.
    bleu_brevity_penalty (float), bleu_sys_len (int), bleu_ref_len (int).
    bleu_signature, chrf_signature (str): sacrebleu's signatures of the settings.
Examples:
    >>> metric = evaluate.load("hf_vaswani/metrics/bleu_chrf")
    >>> sentences = ["the cat sat on the mat"]
    >>> metric.compute(predictions=sentences, references=[sentences])["bleu"]
    100.00000000000004
"""


def reference_streams(references: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    """Turn per-prediction references into sacrebleu's reference streams (stream k = k-th reference of all).

    Raises:
        ValueError: if the predictions do not all have the same number (at least one) of references.
    """
    if all(isinstance(reference, str) for reference in references):
        return [list(references)]
    counts = {len(reference) for reference in references}
    if len(counts) != 1 or 0 in counts:
        found = sorted(counts)
        raise ValueError(f"Every prediction needs the same number (>= 1) of references; found {found}.")
    return [list(stream) for stream in zip(*references)]


def score_translations(
    predictions: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
    *,
    lowercase: bool = False,
    tokenize: str | None = None,
) -> dict[str, Any]:
    """Corpus BLEU and chrF of `predictions` against `references` (see the module docstring).

    Raises:
        ValueError: if there is no prediction, or not as many references as predictions.
    """
    predictions = list(predictions)
    if not predictions:
        raise ValueError("No prediction to score.")
    if len(references) != len(predictions):
        raise ValueError(f"Got {len(predictions)} predictions but {len(references)} references.")
    streams = reference_streams(references)
    bleu_metric = sacrebleu.metrics.BLEU(lowercase=lowercase, tokenize=tokenize)
    chrf_metric = sacrebleu.metrics.CHRF()
    bleu = bleu_metric.corpus_score(predictions, streams)
    chrf = chrf_metric.corpus_score(predictions, streams)
    return {
        "bleu": bleu.score,
        "chrf": chrf.score,
        "bleu_precisions": list(bleu.precisions),
        "bleu_brevity_penalty": bleu.bp,
        "bleu_sys_len": bleu.sys_len,
        "bleu_ref_len": bleu.ref_len,
        "bleu_signature": str(bleu_metric.get_signature()),
        "chrf_signature": str(chrf_metric.get_signature()),
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BleuChrf(evaluate.Metric):
    """sacrebleu's corpus BLEU and chrF as an offline `evaluate.Metric`."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            homepage="https://github.com/mjpost/sacrebleu",
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Value("string"),
                    }
                ),
            ],
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(
        self,
        predictions: Sequence[str],
        references: Sequence[str] | Sequence[Sequence[str]],
        lowercase: bool = False,
        tokenize: str | None = None,
    ) -> dict[str, Any]:
        return score_translations(predictions, references, lowercase=lowercase, tokenize=tokenize)
