"""vaswani_inspect.extract and AttentionRecord: shapes, normalisation, generated vs teacher-forced, JSON, bad input."""

import json
import warnings

import numpy as np
import pytest
import torch

from tests.helpers import CHECKPOINT, ROOT
from vaswani_inspect import AttentionRecord, extract, load_model_and_tokenizer
from vaswani_inspect.extract import AttentionUnavailableError, record_from_ids
from vaswani_inspect.record import rounding_tolerance
from vaswani_inspect.testing import tiny_model

torch.set_num_threads(1)


def test_shapes_match_config_and_tokens(record, model):
    config = model.config
    s, t = len(record.source_tokens), len(record.target_tokens)
    assert record.encoder.shape == (config.encoder_layers, config.encoder_attention_heads, s, s)
    assert record.decoder.shape == (config.decoder_layers, config.decoder_attention_heads, t, t)
    assert record.cross.shape == (config.decoder_layers, config.decoder_attention_heads, t, s)
    assert record.source_tokens[0] == ">>en<<" and record.source_tokens[-1] == "</s>"
    assert record.target_tokens[0] == "<s>" and record.target_tokens[-1] == "</s>"
    assert record.target_ids[0] == config.decoder_start_token_id
    assert record.source_text == "el gato negro" and record.target_text == "the black cat"
    assert record.direction == "es-en" and record.generate_kwargs is None


def test_shapes_with_different_encoder_and_decoder_sizes(tokenizer):
    model = tiny_model(len(tokenizer), decoder_layers=3, decoder_attention_heads=2)
    record = extract(model, tokenizer, "la casa roja", "the red house", direction="es-en")
    assert record.encoder.shape[:2] == (2, 4)
    assert record.decoder.shape[:2] == record.cross.shape[:2] == (3, 2)


def test_rows_sum_to_one(record):
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(record.attention(kind).sum(-1), 1.0, atol=1e-5)


def test_decoder_self_attention_is_lower_triangular(record):
    t = len(record.target_tokens)
    above_diagonal = np.triu(np.ones((t, t), dtype=bool), k=1)
    assert np.all(record.decoder[..., above_diagonal] == 0.0)
    assert np.all(record.decoder[..., ~above_diagonal] > 0.0)


def test_generated_record_equals_teacher_forced_pass_on_its_output(model, tokenizer):
    generated = extract(model, tokenizer, "el perro blanco", direction="es-en", generate_kwargs={"max_new_tokens": 6})
    assert generated.generate_kwargs == {"max_new_tokens": 6}
    # The same output, produced by generate() directly, then one teacher-forced pass on <s> + output.
    input_ids = torch.tensor([generated.source_ids])
    sequence = model.generate(input_ids=input_ids, max_new_tokens=6)[0].tolist()
    assert sequence[: len(generated.target_ids)] == generated.target_ids
    forced = record_from_ids(model, tokenizer, generated.source_ids, generated.target_ids)
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(generated.attention(kind), forced.attention(kind), atol=1e-6)


def test_row_t_is_the_generation_step_that_predicts_token_t_plus_1(model, tokenizer):
    """Greedy generation with step-wise attentions: step t reads decoder input t; it equals record row t."""
    record = extract(model, tokenizer, "el gato negro", direction="es-en", generate_kwargs={"max_new_tokens": 5})
    output = model.generate(
        input_ids=torch.tensor([record.source_ids]),
        max_new_tokens=5,
        output_attentions=True,
        return_dict_in_generate=True,
    )
    assert output.sequences[0].tolist() == record.target_ids
    for step, layers in enumerate(output.cross_attentions):
        for layer, weights in enumerate(layers):
            np.testing.assert_allclose(weights[0, :, -1].numpy(), record.cross[layer, :, step], atol=1e-5)
    for step, layers in enumerate(output.decoder_attentions):
        for layer, weights in enumerate(layers):
            row = record.decoder[layer, :, step, : step + 1]
            np.testing.assert_allclose(weights[0, :, -1].numpy(), row, atol=1e-5)


def test_beam_search_output_is_teacher_forced(model, tokenizer):
    settings = {"num_beams": 3, "max_new_tokens": 6, "num_return_sequences": 2}
    record = extract(model, tokenizer, "la casa roja", direction="es-en", generate_kwargs=settings)
    best = model.generate(input_ids=torch.tensor([record.source_ids]), **settings)[0].tolist()
    assert best[: len(record.target_ids)] == record.target_ids
    forced = record_from_ids(model, tokenizer, record.source_ids, record.target_ids)
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(record.attention(kind), forced.attention(kind), atol=1e-6)
    assert record.generate_kwargs == settings


def test_batch_strips_padding_per_example(model, tokenizer):
    sources = ["el gato negro", "me senté en el banco de la plaza", "hoy"]
    targets = ["the black cat", "i sat on the bench in the square", "today"]
    batch = extract(model, tokenizer, sources, targets, direction="es-en", batch_size=3)
    assert isinstance(batch, list) and len(batch) == 3
    for source, target, record in zip(sources, targets, batch):
        single = extract(model, tokenizer, source, target, direction="es-en")
        assert record.source_tokens == single.source_tokens and record.target_tokens == single.target_tokens
        for kind in ("encoder", "decoder", "cross"):
            np.testing.assert_allclose(record.attention(kind), single.attention(kind), atol=1e-5)
            np.testing.assert_allclose(record.attention(kind).sum(-1), 1.0, atol=1e-5)


def test_generated_batch_with_beams(model, tokenizer):
    records = extract(
        model,
        tokenizer,
        ["el gato negro", "la casa roja"],
        direction="es-en",
        generate_kwargs={"num_beams": 2, "max_new_tokens": 4},
    )
    for record in records:
        assert record.target_tokens[0] == "<s>"
        assert 1 < len(record.target_tokens) <= 5
        np.testing.assert_allclose(record.cross.sum(-1), 1.0, atol=1e-5)


def test_existing_language_token_is_kept(model, tokenizer):
    record = extract(model, tokenizer, ">>en<< el gato negro", "the black cat", direction="es-en")
    assert record.source_tokens.count(">>en<<") == 1
    with pytest.raises(ValueError, match=">>es<<"):
        extract(model, tokenizer, ">>es<< the black cat", "x", direction="es-en")


def test_missing_language_token_warns(model, tokenizer):
    with pytest.warns(UserWarning, match="language token"):
        extract(model, tokenizer, "el gato negro", "the black cat")


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_source_is_refused(model, tokenizer, text):
    with pytest.raises(ValueError, match="empty or whitespace"):
        extract(model, tokenizer, text, direction="es-en")


def test_empty_target_and_bad_arguments_are_refused(model, tokenizer):
    with pytest.raises(ValueError, match="Target #0 is empty or whitespace only."):
        extract(model, tokenizer, "el gato", " ", direction="es-en")
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        extract(model, tokenizer, ["el gato", "la casa"], ["the cat"], direction="es-en")
    with pytest.raises(ValueError, match="empty list"):
        extract(model, tokenizer, [], direction="es-en")
    with pytest.raises(ValueError, match="Unknown translation direction 'es-fr'"):
        extract(model, tokenizer, "el gato", direction="es-fr")
    with pytest.raises(ValueError, match="direction must look like"):
        extract(model, tokenizer, "el gato", direction="spanish")
    with pytest.raises(ValueError, match="must not contain 'input_ids'"):
        extract(model, tokenizer, "el gato", direction="es-en", generate_kwargs={"input_ids": None})


def test_too_long_source_errors_by_default_and_truncates_on_request(model, tokenizer):
    long_text = " ".join(["gato"] * 80)  # 80 words + language token + </s> > max_position_embeddings = 64
    with pytest.raises(ValueError, match="at most 64 positions"):
        extract(model, tokenizer, long_text, "the cat", direction="es-en")
    with pytest.warns(UserWarning, match="truncated to the model's 64 positions"):
        record = extract(model, tokenizer, long_text, "the cat", direction="es-en", truncation=True)
    assert len(record.source_tokens) == 64 and record.source_tokens[-1] == "</s>"
    with pytest.raises(ValueError, match="at most 63 positions"):
        extract(model, tokenizer, "el gato", long_text, direction="es-en")


def test_generation_never_exceeds_the_position_limit(model, tokenizer):
    text = " ".join(["gato"] * 60)
    record = extract(model, tokenizer, text, direction="es-en")
    assert len(record.target_tokens) <= model.config.max_position_embeddings


class _DropAttentions(torch.nn.Module):
    """A model whose outputs lose their attentions, as with an implementation that returns no weights."""

    def __init__(self, inner, name, value):
        super().__init__()
        self.inner, self.config, self.name, self.value = inner, inner.config, name, value

    def forward(self, **kwargs):
        output = self.inner(**kwargs)
        output[self.name] = self.value
        return output


@pytest.mark.parametrize("name", ["encoder_attentions", "decoder_attentions", "cross_attentions"])
@pytest.mark.parametrize("value", [None, ()])
def test_model_without_attentions_gives_a_clear_error(model, tokenizer, name, value):
    with pytest.raises(AttentionUnavailableError, match=f"(no|empty) {name}.*eager"):
        extract(_DropAttentions(model, name, value), tokenizer, "el gato", "the cat", direction="es-en")


def test_non_encoder_decoder_model_is_refused(model, tokenizer):
    with pytest.raises(TypeError, match="encoder-decoder"):
        extract(torch.nn.Linear(2, 2), tokenizer, "el gato", direction="es-en")


def test_training_mode_is_restored_and_dropout_is_off(tokenizer):
    model = tiny_model(len(tokenizer), dropout=0.3, attention_dropout=0.3).train()
    first = extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
    second = extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
    assert model.training
    assert first == second


def test_json_round_trip_exact_without_rounding(record, tmp_path):
    again = AttentionRecord.from_json(record.to_json(decimals=None))
    assert again == record
    for kind in ("encoder", "decoder", "cross"):
        assert np.array_equal(again.attention(kind), record.attention(kind))
    for name in ("record.json", "record.json.gz"):
        assert AttentionRecord.load(record.save(tmp_path / name, decimals=None)) == record


@pytest.mark.parametrize("decimals", [2, 4, 6])
def test_json_round_trip_within_documented_rounding(record, decimals):
    again = AttentionRecord.from_json(record.to_json(decimals=decimals))
    assert again.source_tokens == record.source_tokens and again.target_ids == record.target_ids
    assert again.allclose(record, atol=rounding_tolerance(decimals))
    for kind in ("encoder", "decoder", "cross"):
        worst = np.abs(again.attention(kind) - record.attention(kind)).max()
        assert worst <= rounding_tolerance(decimals)


def test_record_validation():
    ok = dict(
        source_tokens=["a", "b"],
        target_tokens=["<s>"],
        source_ids=[1, 2],
        target_ids=[1],
        encoder=np.full((1, 1, 2, 2), 0.5),
        decoder=np.ones((1, 1, 1, 1)),
        cross=np.full((1, 1, 1, 2), 0.5),
    )
    AttentionRecord(**ok)
    with pytest.raises(ValueError, match="non-empty"):
        AttentionRecord(**{**ok, "encoder": np.zeros((0, 1, 2, 2))})
    with pytest.raises(ValueError, match="query/key positions"):
        AttentionRecord(**{**ok, "cross": np.full((1, 1, 2, 2), 0.5)})
    with pytest.raises(ValueError, match="not a vaswani_inspect"):
        AttentionRecord.from_json('{"format": "other"}')
    record = AttentionRecord(**ok)
    with pytest.raises(ValueError, match="layer 3 does not exist"):
        record.select("encoder", 3, 0)
    with pytest.raises(ValueError, match="head 1 does not exist"):
        record.select("cross", 0, 1)
    with pytest.raises(ValueError, match="Unknown attention kind"):
        record.select("self", 0, 0)


def test_records_carry_the_model_alignment_configuration(tokenizer, tmp_path):
    model = tiny_model(len(tokenizer))
    assert extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en").alignment is None
    model.config.alignment = {"layer": 1, "heads": [2], "shift": True}
    record = extract(model, tokenizer, "el gato negro", "the black cat", direction="es-en")
    assert record.alignment == {"layer": 1, "heads": [2], "shift": True}
    assert record.alignment is not model.config.alignment  # a copy: changing one leaves the other alone
    assert AttentionRecord.load(record.save(tmp_path / "r.json")).alignment == record.alignment
    ids = tokenizer(">>en<< el gato")["input_ids"]
    assert record_from_ids(model, tokenizer, ids, [1, *ids[1:]]).alignment == record.alignment
    with pytest.raises(ValueError, match="AttentionRecord.alignment must be None or"):
        AttentionRecord.from_dict({**record.to_dict(), "alignment": {"layer": 1}})


def test_records_saved_without_the_alignment_field_still_load():
    from vaswani_inspect import align, source_words, target_words

    saved = ROOT / "tests" / "vaswani_inspect" / "data" / "record_without_alignment.json"
    assert "alignment" not in json.loads(saved.read_text(encoding="utf-8"))
    record = AttentionRecord.load(saved)
    assert record.alignment is None and record.source_text == "el ratón."
    assert source_words(record) == ["el", "ratón", "."] and target_words(record) == ["the", "mouse", "."]
    assert len(align(record)) == 3 and len(align(record, skip_punctuation=True)) == 2


@pytest.mark.slow
@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason=f"no shipped checkpoint at {CHECKPOINT} yet")
def test_shipped_checkpoint_course_example():
    model, tokenizer = load_model_and_tokenizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = extract(model, tokenizer, "el gato negro", direction="es-en")
    config = model.config
    assert record.encoder.shape[:2] == (config.encoder_layers, config.encoder_attention_heads)
    assert record.cross.shape[:2] == (config.decoder_layers, config.decoder_attention_heads)
    np.testing.assert_allclose(record.cross.sum(-1), 1.0, atol=1e-4)


def test_works_with_the_project_tokenizer():
    from hf_vaswani import tokenization
    from vaswani_inspect import align, source_words, target_words
    from vaswani_inspect.testing import training_sentences
    from vaswani_inspect.words import text_words

    tokenizer = tokenization.train_tokenizer(training_sentences() * 4, vocab_size=300)
    model = tiny_model(len(tokenizer))
    record = extract(model, tokenizer, "El banco aprobó el crédito.", "The bank approved the loan.", direction="es-en")
    assert record.source_tokens[0] == ">>en<<" and record.source_tokens[-1] == "</s>"
    assert record.target_tokens[0] == "<s>" and record.target_tokens[-1] == "</s>"
    # Punctuation marks are words of their own, whether or not the tokenizer glued them into a piece.
    assert source_words(record) == ["El", "banco", "aprobó", "el", "crédito", "."]
    assert target_words(record) == ["The", "bank", "approved", "the", "loan", "."]
    with_pieces = sum(1 for pieces in text_words(record.target_tokens).pieces if pieces)
    assert len(align(record)) == with_pieces and with_pieces in (5, 6)
    assert len(align(record, skip_punctuation=True)) == 5
    generated = extract(model, tokenizer, ["Me senté en el banco de la plaza."], direction="es-en")
    np.testing.assert_allclose(generated[0].cross.sum(-1), 1.0, atol=1e-5)
