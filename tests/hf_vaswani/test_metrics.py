"""Tests of hf_vaswani.metrics: BLEU/chrF equal sacrebleu's, offline `evaluate` module, compute_metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import sacrebleu
from transformers import EvalPrediction

from hf_vaswani.metrics import METRIC_PATH, BleuChrf, compute_translation_metrics, make_compute_metrics
from tests.helpers import PAIRS, PROCESS_TIMEOUT, tiny_tokenizer

PREDICTIONS = [
    "The black cat is sleeping on the sofa.",
    "¿Dónde está la estación de tren?",
    'He said "don\'t" twice.',
    "I have three brothers.",
]
REFERENCES = [
    "The black cat sleeps on the sofa.",
    "¿Dónde está la estación?",
    'He said "don\'t" two times.',
    "I have 3 brothers.",
]
SECOND_REFERENCES = [
    "A black cat is sleeping on the couch.",
    "¿Dónde queda la estación de tren?",
    'He said "don\'t" twice.',
    "I've got three brothers.",
]


def test_bleu_and_chrf_equal_sacrebleu():
    scores = compute_translation_metrics(PREDICTIONS, REFERENCES)
    bleu = sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES])
    chrf = sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES])
    assert 0 < scores["bleu"] < 100 and 0 < scores["chrf"] < 100
    assert scores["bleu"] == pytest.approx(bleu.score, abs=1e-9)
    assert scores["chrf"] == pytest.approx(chrf.score, abs=1e-9)
    assert scores["bleu_precisions"] == pytest.approx(bleu.precisions)
    assert scores["bleu_brevity_penalty"] == pytest.approx(bleu.bp)
    assert (scores["bleu_sys_len"], scores["bleu_ref_len"]) == (bleu.sys_len, bleu.ref_len)
    assert "tok:13a" in scores["bleu_signature"] and "nrefs:1" in scores["bleu_signature"]
    assert "nc:6" in scores["chrf_signature"]


def test_multiple_references_equal_sacrebleu():
    per_prediction = [[a, b] for a, b in zip(REFERENCES, SECOND_REFERENCES, strict=True)]
    scores = compute_translation_metrics(PREDICTIONS, per_prediction)
    streams = [REFERENCES, SECOND_REFERENCES]
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, streams).score, abs=1e-9)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(PREDICTIONS, streams).score, abs=1e-9)
    assert scores["bleu"] > compute_translation_metrics(PREDICTIONS, REFERENCES)["bleu"]


def test_perfect_and_bad_inputs():
    scores = compute_translation_metrics(REFERENCES, REFERENCES)
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        compute_translation_metrics(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="No prediction"):
        compute_translation_metrics([], [])
    with pytest.raises(ValueError, match="same number"):
        compute_translation_metrics(["a", "b"], [["a"], ["b", "c"]])


def test_evaluate_metric_class_matches_sacrebleu():
    metric = BleuChrf(keep_in_memory=True)
    metric.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    metric.add_batch(predictions=PREDICTIONS[2:], references=REFERENCES[2:])
    result = metric.compute()
    assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score, abs=1e-9)
    assert result["chrf"] == pytest.approx(sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES]).score, abs=1e-9)


_OFFLINE_SCRIPT = """
import json, sys
import evaluate
metric = evaluate.load(sys.argv[1])
data = json.loads(sys.argv[2])
single = metric.compute(predictions=data["predictions"], references=data["references"])
multi = metric.compute(predictions=data["predictions"], references=[[r] for r in data["references"]])
print(json.dumps({"single": [single["bleu"], single["chrf"]], "multi": [multi["bleu"], multi["chrf"]]}))
"""


@pytest.mark.slow
def test_evaluate_load_works_offline(tmp_path):
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf_home"),
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "PYTHONPATH": "",
    }
    data = json.dumps({"predictions": PREDICTIONS, "references": REFERENCES})
    result = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, METRIC_PATH, data],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    expected = [
        sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score,
        sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES]).score,
    ]
    assert scores["single"] == pytest.approx(expected, abs=1e-9)
    assert scores["multi"] == pytest.approx(expected, abs=1e-9)


def _pad(rows: list[list[int]], value: int) -> np.ndarray:
    width = max(len(row) for row in rows)
    return np.array([row + [value] * (width - len(row)) for row in rows])


def test_make_compute_metrics_decodes_and_replaces_minus_100():
    tokenizer = tiny_tokenizer()
    references = [es for _, es in PAIRS[:4]]
    predictions = [es for _, es in PAIRS[:3]] + ["El gato blanco."]
    label_rows = [tokenizer(text_target=text).input_ids for text in references]
    # Generated ids start with the decoder start token <s>; the Trainer pads them (pad id, then -100).
    prediction_rows = [[1] + tokenizer(text).input_ids for text in predictions]
    labels = _pad(label_rows, -100)
    generated = _pad(prediction_rows, 0)
    generated = np.concatenate([generated, np.full((4, 3), -100)], axis=1)
    compute_metrics = make_compute_metrics(tokenizer)

    result = compute_metrics(EvalPrediction(predictions=generated, label_ids=labels))
    expected = compute_translation_metrics(predictions, references)
    assert set(result) == {"bleu", "chrf", "gen_len"}
    assert result["bleu"] == pytest.approx(expected["bleu"])
    assert result["chrf"] == pytest.approx(expected["chrf"])
    assert 0 < result["bleu"] < 100
    assert result["gen_len"] == pytest.approx(np.mean([len(row) for row in prediction_rows]))

    # A (predictions, labels) tuple, predictions wrapped in a tuple as some models return them.
    perfect = compute_metrics(((_pad([[1] + r for r in label_rows], -100),), labels))
    assert perfect["bleu"] == pytest.approx(100.0) and perfect["chrf"] == pytest.approx(100.0)


def test_make_compute_metrics_rejects_logits():
    compute_metrics = make_compute_metrics(tiny_tokenizer())
    logits = np.zeros((2, 5, 300), dtype=np.float32)
    with pytest.raises(ValueError, match="predict_with_generate=True"):
        compute_metrics(EvalPrediction(predictions=logits, label_ids=np.ones((2, 5), dtype=np.int64)))
