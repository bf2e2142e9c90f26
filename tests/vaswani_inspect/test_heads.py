"""Head statistics and tags (Clark et al. 2019) and attention rollout (Abnar & Zuidema 2020)."""

import csv
import io
import math

import numpy as np
import pytest

from vaswani_inspect import AttentionRecord, extract, head_statistics
from vaswani_inspect.heads import BROAD_THRESHOLD, attention_rollout, head_statistics_table, is_punctuation
from vaswani_inspect.testing import tiny_model, tiny_tokenizer

SOURCE = [">>en<<", "▁a", "▁b", ",", "▁c", "▁d", "</s>"]
TARGET = ["<s>", "▁w", "▁x", "</s>"]


def _encoder_heads() -> np.ndarray:
    s = len(SOURCE)
    previous = np.zeros((s, s))
    previous[0, 0] = 1.0
    for i in range(1, s):
        previous[i, i - 1] = 1.0
    special = np.zeros((s, s))
    special[:, -1] = 1.0
    broad = np.full((s, s), 1.0 / s)
    punctuation = np.zeros((s, s))
    punctuation[:, 3] = 1.0
    return np.stack([previous, special, broad, punctuation])[None]  # (1 layer, 4 heads, s, s)


def _record() -> AttentionRecord:
    s, t = len(SOURCE), len(TARGET)
    return AttentionRecord(
        source_tokens=SOURCE,
        target_tokens=TARGET,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=_encoder_heads(),
        decoder=np.tril(np.ones((1, 1, t, t))) / np.arange(1, t + 1)[:, None],
        cross=np.full((1, 1, t, s), 1.0 / s),
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


def test_synthetic_heads_get_the_expected_tags():
    stats = {(s.kind, s.head): s for s in head_statistics(_record())}
    previous, special, broad, punctuation = (stats["encoder", h] for h in range(4))
    assert previous.tag == "positional" and previous.focus == "previous"
    assert previous.previous == pytest.approx(6 / 7)  # row 0 has no previous token; it attends itself
    assert previous.same == pytest.approx(1 / 7)
    assert special.tag == "special-token" and special.special == pytest.approx(1.0)
    assert broad.tag == "broad" and broad.normalized_entropy == pytest.approx(1.0)
    assert broad.entropy == pytest.approx(math.log(7))
    assert punctuation.tag == "other" and punctuation.punctuation == pytest.approx(1.0)
    assert punctuation.entropy == pytest.approx(0.0)


def test_decoder_and_cross_statistics():
    stats = {(s.kind, s.head): s for s in head_statistics(_record())}
    decoder = stats["decoder", 0]
    assert decoder.rows == 3  # the first decoder row (one key) is skipped
    assert decoder.next == 0.0  # causal
    assert decoder.normalized_entropy == pytest.approx(1.0) and decoder.tag == "broad"
    cross = stats["cross", 0]
    assert math.isnan(cross.previous) and math.isnan(cross.same)
    assert cross.special == pytest.approx(2 / 7) and cross.punctuation == pytest.approx(1 / 7)
    assert cross.normalized_entropy >= BROAD_THRESHOLD


def test_statistics_over_several_records_and_real_model():
    tokenizer = tiny_tokenizer()
    model = tiny_model(len(tokenizer))
    records = extract(
        model, tokenizer, ["el gato negro.", "la casa roja"], ["the black cat.", "the red house"], direction="es-en"
    )
    stats = head_statistics(records)
    assert len(stats) == 2 * 4 * 3  # layers x heads x kinds
    for s in stats:
        assert s.tag in {"positional", "special-token", "broad", "other"}
        assert 0.0 <= s.special <= 1.0 + 1e-6 and 0.0 <= s.normalized_entropy <= 1.0 + 1e-6
    assert len(head_statistics(records, "encoder")) == 8


def test_tables():
    stats = head_statistics(_record(), "encoder")
    rows = list(csv.DictReader(io.StringIO(head_statistics_table(stats, "csv"))))
    assert [r["tag"] for r in rows] == ["positional", "special-token", "broad", "other"]
    markdown = head_statistics_table(stats, "markdown")
    assert markdown.splitlines()[0].startswith("| kind | layer | head |") and markdown.count("\n") == 6
    with pytest.raises(ValueError, match="fmt"):
        head_statistics_table(stats, "html")


def test_punctuation_detection():
    assert is_punctuation(",") and is_punctuation("▁¿") and is_punctuation("...")
    assert not is_punctuation("▁") and not is_punctuation("▁a,") and not is_punctuation("</s>x")


def test_rollout_single_layer_is_the_residual_corrected_attention():
    record = _record()
    mean = record.encoder[0].mean(0).astype(np.float64)
    np.testing.assert_allclose(attention_rollout(record), 0.5 * (mean + np.eye(len(SOURCE))), atol=1e-7)
    np.testing.assert_allclose(attention_rollout(record, residual=False), mean, atol=1e-7)


def test_rollout_multiplies_layers_and_rows_sum_to_one():
    tokenizer = tiny_tokenizer()
    record = extract(tiny_model(len(tokenizer)), tokenizer, "el gato negro", "the black cat", direction="es-en")
    first, second = (0.5 * (layer.mean(0) + np.eye(layer.shape[-1])) for layer in record.encoder.astype(np.float64))
    rollout = attention_rollout(record)
    np.testing.assert_allclose(rollout, second @ first, atol=1e-6)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(attention_rollout(record, "decoder").sum(-1), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="square self-attention"):
        attention_rollout(record, "cross")
