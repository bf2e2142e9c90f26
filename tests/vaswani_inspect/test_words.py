"""Words of a record (punctuation marks are words of their own) and word-level attention (Clark et al. 2019):
sum-to / mean-from merging, special tokens."""

import numpy as np
import pytest

from hf_vaswani.data.word_alignment import words as text_split
from vaswani_inspect import AttentionRecord, extract, to_words
from vaswani_inspect.testing import tiny_model, tiny_tokenizer
from vaswani_inspect.words import merge_attention, text_words, word_spans, words


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _random_record(source_tokens, target_tokens, seed=0, layers=2, heads=3):
    rng = np.random.default_rng(seed)
    s, t = len(source_tokens), len(target_tokens)
    causal = np.where(np.tril(np.ones((t, t))) > 0, 0.0, -np.inf)
    return AttentionRecord(
        source_tokens=source_tokens,
        target_tokens=target_tokens,
        source_ids=list(range(s)),
        target_ids=list(range(t)),
        encoder=_softmax(rng.normal(size=(layers, heads, s, s))),
        decoder=_softmax(rng.normal(size=(layers, heads, t, t)) + causal),
        cross=_softmax(rng.normal(size=(layers, heads, t, s))),
        special_tokens=["<pad>", "<s>", "</s>", ">>en<<", ">>es<<"],
    )


SOURCE = [">>en<<", "▁el", "▁", "g", "ato", "▁neg", "ro", ".", "</s>"]
TARGET = ["<s>", "▁the", "▁bla", "ck", "▁cat", "</s>"]


def test_word_spans_follow_words_and_isolate_specials():
    # "." is a word of its own: "negro ." has the units [5, 6] and [7].
    assert word_spans(SOURCE) == [[0], [1], [2, 3, 4], [5, 6], [7], [8]]
    assert words(SOURCE) == [">>en<<", "el", "gato", "negro", ".", "</s>"]
    assert word_spans(TARGET) == [[0], [1], [2, 3], [4], [5]]
    # A first piece without "▁" after a special token still starts a word; <unk> is an ordinary piece.
    assert word_spans(["<s>", "the", "▁c", "<unk>", "t"]) == [[0], [1], [2, 3, 4]]


def test_merge_sums_keys_and_averages_queries():
    attention = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    merged = merge_attention(attention, [[0, 1]], [[0], [1, 2]])
    # to word {1,2} = sum of its pieces; from word {0,1} = mean of the two rows.
    np.testing.assert_allclose(merged, [[(0.1 + 0.5) / 2, (0.9 + 0.5) / 2]])
    np.testing.assert_allclose(merge_attention(attention, [[0, 1]], [[0], [1, 2]], "max", "max"), [[0.5, 0.7]])
    np.testing.assert_allclose(merge_attention(attention, [[0, 1]], [[0], [1, 2]], "sum", "first"), [[0.1, 0.9]])
    with pytest.raises(ValueError, match="attention_to='median'"):
        merge_attention(attention, [[0]], [[0]], "median")


@pytest.mark.parametrize("special_tokens", ["keep", "drop"])
def test_rows_sum_to_one_at_word_level(special_tokens):
    record = to_words(_random_record(SOURCE, TARGET), special_tokens=special_tokens)
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(record.attention(kind).sum(-1), 1.0, atol=1e-5)
    assert record.level == "word"
    if special_tokens == "keep":
        assert record.source_tokens == [">>en<<", "▁el", "▁gato", "▁negro", ".", "</s>"]
        assert record.target_tokens == ["<s>", "▁the", "▁black", "▁cat", "</s>"]
    else:
        assert record.source_tokens == ["▁el", "▁gato", "▁negro", "."]
        assert record.target_tokens == ["▁the", "▁black", "▁cat"]
    assert record.metadata["word_merge"]["special_tokens"] == special_tokens


def test_token_level_rows_sum_to_one_from_a_real_model():
    tokenizer = tiny_tokenizer()
    record = extract(
        tiny_model(len(tokenizer)),
        tokenizer,
        "Me senté en el banco de la plaza.",
        "I sat on the bench in the square.",
        direction="es-en",
    )
    for level in (record, to_words(record), to_words(record, special_tokens="drop")):
        for kind in ("encoder", "decoder", "cross"):
            np.testing.assert_allclose(level.attention(kind).sum(-1), 1.0, atol=1e-5)


def test_keep_matches_hand_computation():
    record = _random_record(SOURCE, TARGET)
    merged = to_words(record)
    # cross row for target word "black" (pieces 2, 3), column for source word "gato" (pieces 2, 3, 4)
    expected = record.cross[:, :, [2, 3]][..., [2, 3, 4]].sum(-1).mean(-1)
    np.testing.assert_allclose(merged.cross[:, :, 2, 2], expected, rtol=1e-6)


def test_drop_removes_special_mass_and_renormalises():
    record = _random_record(SOURCE, TARGET)
    dropped = to_words(record, special_tokens="drop")
    kept = to_words(record)
    inner = kept.cross[:, :, 1:4, 1:5]
    np.testing.assert_allclose(dropped.cross, inner / inner.sum(-1, keepdims=True), rtol=1e-5)


def test_merging_is_idempotent_and_keeps_piece_provenance():
    once = to_words(_random_record(SOURCE, TARGET))
    twice = to_words(once)
    assert twice.source_tokens == once.source_tokens
    np.testing.assert_allclose(twice.cross, once.cross)
    assert twice.metadata["source_word_pieces"] == [[0], [1], [2, 3, 4], [5, 6], [7], [8]]


def test_bad_parameters():
    record = _random_record(SOURCE, TARGET)
    with pytest.raises(ValueError, match="'keep' or 'drop'"):
        to_words(record, special_tokens="remove")
    only_specials = _random_record([">>en<<", "</s>"], TARGET)
    with pytest.raises(ValueError, match="no source words"):
        to_words(only_specials, special_tokens="drop")


# ------------------------------------------------------------------------------------------ punctuation words


def test_text_words_split_punctuation_off_like_gold_files():
    found = text_words([">>en<<", "▁¿Qué", "▁es", "▁eso", "?", "</s>"])
    assert found.words == ["¿", "Qué", "es", "eso", "?"] == text_split("¿Qué es eso?")
    # "¿" is glued into the piece "▁¿Qué", which belongs to "Qué": the word exists but no piece stands for it.
    assert found.pieces == [[], [1], [2], [3], [4]] and found.glued_to == [1, None, None, None, None]
    assert found.punctuation() == [True, False, False, False, True]
    found = text_words(["<s>", "▁El", "▁gato", "▁se", "▁comió", "▁el", "▁rat", "ón", ".", "</s>"])
    assert found.words == ["El", "gato", "se", "comió", "el", "ratón", "."]
    assert found.pieces[-2:] == [[6, 7], [8]]
    glued = text_words(["<s>", "▁eso.", "</s>"])
    assert glued.words == ["eso", "."] and glued.pieces == [[1], []] and glued.glued_to == [None, 0]


def test_text_words_lone_space_unknown_pieces_and_apostrophes():
    # A lone "▁" joins the next word; inner apostrophes stay inside a word.
    found = text_words([">>en<<", "▁café", "▁", "<unk>", "▁don't", ",", "▁", "(", "ok", ")", "</s>"])
    assert found.words == ["café", "<unk>", "don't", ",", "(", "ok", ")"]
    assert found.pieces == [[1], [2, 3], [4], [5], [6, 7], [8], [9]]
    assert found.punctuation() == [False, True, False, True, True, False, True]
    # An unknown piece is a letter inside a word, else a symbol: a word of its own, like "." or an emoji.
    assert word_spans(["<s>", "the", "▁c", "<unk>", "t"]) == [[0], [1], [2, 3, 4]]
    assert text_words(["<s>", "▁c", "<unk>", "t"]).words == ["c<unk>t"]
    glued = text_words(["<s>", "▁ro", "ja", "<unk>", "</s>"])
    assert glued.words == ["roja", "<unk>"] and glued.pieces == [[1, 2], [3]]
    # Word-level tokens hold their pieces joined: the same words.
    for tokens in (["<s>", "▁c", "<unk>", "t", "<unk>", "</s>"], ["<s>", "▁", "<unk>", "▁ro", "ja", "<unk>"]):
        merged = to_words(_random_record([">>en<<", "▁a", "</s>"], tokens)).target_tokens
        assert text_words(merged).words == text_words(tokens).words
    assert text_words(["<s>", "▁c", "<unk>", "t", "<unk>", "</s>"]).words == ["c<unk>t", "<unk>"]
    assert text_words(["<s>", "</s>"]).words == []


def test_word_level_record_has_the_same_words_as_the_token_level_one():
    source = [">>en<<", "▁¿Qué", "▁es", "▁", "e", "so", "?", "</s>"]
    target = ["<s>", "▁What", "▁is", "▁th", "at", "?", "</s>"]
    record = _random_record(source, target)
    merged = to_words(record)
    assert merged.source_tokens == [">>en<<", "▁¿Qué", "▁es", "▁eso", "?", "</s>"]
    for tokens, word_tokens in ((source, merged.source_tokens), (target, merged.target_tokens)):
        assert text_words(word_tokens).words == text_words(tokens).words
    assert text_words(merged.source_tokens).pieces == [[], [1], [2], [3], [4]]
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(merged.attention(kind).sum(-1), 1.0, atol=1e-5)
    assert to_words(merged).source_tokens == merged.source_tokens
