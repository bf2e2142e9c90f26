"""Exact exports: Marian (`hf_vaswani.marian.export`), CTranslate2 (`hf_vaswani.export.ctranslate2`) and ONNX
(`hf_vaswani.export.onnx`), each compared with the model it came from.

Tiny random models get random LayerNorms, biases and (where the config has one) a random `final_logits_bias`, so
that a weight put in the wrong place changes the outputs. The shipped checkpoint is checked where it matters: its
Marian export and its float32 CTranslate2 export give our beam-search tokens. The CTranslate2 and ONNX tests are
skipped when the `[fast]` / `[onnx]` extras are not installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, MarianMTModel

from hf_vaswani import VaswaniForConditionalGeneration
from hf_vaswani.cli import main
from hf_vaswani.export import ExportError
from hf_vaswani.export.layout import to_concatenated_layout
from hf_vaswani.marian.convert import convert_marian
from hf_vaswani.marian.export import export_marian, to_marian
from tests.helpers import CHECKPOINT, PAIRS, tiny_config, tiny_tokenizer, unwritable_folder

ATOL = 1e-5
BEAM = dict(num_beams=4, length_penalty=0.6, max_new_tokens=12)

#: Model variants: the layout of the sinusoids, LayerNorm placement, vocabularies and output layer.
VARIANTS = {
    "interleaved": {},
    "concatenated": dict(sinusoidal_layout="concatenated"),
    "separate-vocab-bias-gelu": dict(
        share_embeddings=False,
        decoder_vocab_size=250,
        tie_word_embeddings=False,
        final_logits_bias=True,
        activation_function="gelu",
    ),
}


def random_model(seed: int = 3, vocab_size: int = 300, **overrides) -> VaswaniForConditionalGeneration:
    """A tiny model whose LayerNorms, biases and final_logits_bias are random too (eval mode)."""
    torch.manual_seed(seed)
    model = VaswaniForConditionalGeneration(tiny_config(vocab_size=vocab_size, **overrides))
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layer_norm" in name or name.endswith("bias"):
                parameter.copy_(parameter + 0.3 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def padded_batch(vocab_size: int = 300) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(7)
    input_ids = torch.randint(6, vocab_size, (3, 10), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 6:] = 0
    input_ids[1, 6:] = 0
    input_ids[:, -1] = 2
    input_ids[1, 5] = 2
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def teacher_forced(vocab_size: int = 250) -> torch.Tensor:
    decoder_input_ids = torch.randint(3, vocab_size, (3, 7), generator=torch.Generator().manual_seed(8))
    decoder_input_ids[:, 0] = 1
    return decoder_input_ids


def marian_start(decoder_input_ids: torch.Tensor, marian: MarianMTModel) -> torch.Tensor:
    """Our decoder inputs for the exported Marian model: the same ids after its own start token (in OPUS-MT's
    layout, the appended <pad>, id V; our ids otherwise)."""
    shifted = decoder_input_ids.clone()
    shifted[:, 0] = marian.config.decoder_start_token_id
    return shifted


def tokens(sequences: torch.Tensor) -> list[list[int]]:
    """Generated ids without the start token and what follows the end token: the two models' start and padding ids
    differ in OPUS-MT's layout (the appended <pad>; ours pads with </s> or <pad> as generate decides)."""
    return [until_eos(row) for row in sequences.tolist()]


def until_eos(row: list[int], eos: int = 2) -> list[int]:
    """Generated ids without the start token, cut before the first end-of-sentence token."""
    row = row[1:]
    return row[: row.index(eos)] if eos in row else row


# ----------------------------------------------------------------------------------------------------------------
# The change of sinusoidal layout
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer_norm_position", ["post", "pre"])
def test_changing_the_sinusoidal_layout_keeps_the_function(layer_norm_position):
    model = random_model(layer_norm_position=layer_norm_position)
    converted = to_concatenated_layout(model).eval()
    assert converted.config.sinusoidal_layout == "concatenated" and model.config.sinusoidal_layout == "interleaved"
    inputs = dict(**padded_batch(), decoder_input_ids=teacher_forced())
    with torch.no_grad():
        difference = (converted(**inputs).logits - model(**inputs).logits).abs().max()
    assert difference <= ATOL
    # Not a no-op: the weights did move, and a concatenated model is left as it is.
    embedding = "model.encoder.embed_tokens.weight"
    assert not torch.equal(converted.state_dict()[embedding], model.state_dict()[embedding])
    again = to_concatenated_layout(converted)
    assert all(torch.equal(again.state_dict()[k], v) for k, v in converted.state_dict().items())


# ----------------------------------------------------------------------------------------------------------------
# Marian
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=list(VARIANTS))
def exported_marian(request, tmp_path_factory):
    """(variant, our model, the MarianMTModel loaded back from its exported folder)."""
    model = random_model(**VARIANTS[request.param])
    folder = export_marian(model, tmp_path_factory.mktemp(f"marian-{request.param}"))
    return request.param, model, MarianMTModel.from_pretrained(folder).eval()


def test_exported_marian_gives_our_logits(exported_marian):
    variant, model, marian = exported_marian
    inputs = dict(**padded_batch(), decoder_input_ids=teacher_forced())
    with torch.no_grad():
        ours = model(**inputs).logits
        theirs = marian(**{**inputs, "decoder_input_ids": marian_start(inputs["decoder_input_ids"], marian)}).logits
    vocab = model.config.decoder_vocab_size
    assert (ours - theirs[..., :vocab]).abs().max() <= ATOL
    # The appended <pad> gets probability 0: the log-probabilities over our vocabulary are ours too.
    assert (ours.log_softmax(-1) - theirs.log_softmax(-1)[..., :vocab]).abs().max() <= ATOL
    assert marian.config.forced_eos_token_id is None
    if variant == "separate-vocab-bias-gelu":  # no room for the appended token: our ids, decoding from <s>
        assert marian.config.decoder_vocab_size == vocab and marian.config.decoder_start_token_id == 1
    else:  # OPUS-MT's layout: <pad> appended last is the pad and decoder start token
        assert marian.config.vocab_size == marian.config.decoder_vocab_size == vocab + 1
        assert marian.config.decoder_start_token_id == marian.config.pad_token_id == vocab


def test_exported_marian_gives_our_beam_and_greedy_tokens(exported_marian):
    _, model, marian = exported_marian
    with torch.inference_mode():
        for options in (BEAM, dict(num_beams=1, max_new_tokens=12)):
            ours = model.generate(**padded_batch(), **options)
            assert tokens(marian.generate(**padded_batch(), **options)) == tokens(ours)


def test_convert_marian_inverts_export_marian(exported_marian, tmp_path):
    variant, model, marian = exported_marian
    back = convert_marian(marian, tmp_path / "back")
    converted = VaswaniForConditionalGeneration.from_pretrained(back).eval()
    inputs = dict(**padded_batch(), decoder_input_ids=teacher_forced())
    with torch.no_grad():
        assert (converted(**inputs).logits - model(**inputs).logits).abs().max() <= ATOL
    # The round trip gives back our weights, in Marian's layout: an interleaved model comes back reordered.
    original, returned = to_concatenated_layout(model).state_dict(), converted.state_dict()
    assert converted.config.sinusoidal_layout == "concatenated"
    assert (variant == "concatenated") == all(torch.equal(t, model.state_dict()[n]) for n, t in original.items())
    for name, tensor in original.items():
        assert torch.equal(returned[name], tensor), name
    assert set(returned) - set(original) <= {"final_logits_bias"}  # Marian always has one: zeros when we had none
    for field in (
        "d_model",
        "encoder_layers",
        "decoder_layers",
        "vocab_size",
        "decoder_vocab_size",
        "share_embeddings",
        "tie_word_embeddings",
        "activation_function",
        "decoder_start_token_id",
        "label_smoothing",  # a training setting MarianMTModel ignores, kept in its config.json for the way back
    ):
        assert getattr(converted.config, field) == getattr(model.config, field), field
    assert model.config.label_smoothing == 0.1


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (dict(layer_norm_position="pre"), "layer_norm_position"),
        (dict(position_encoding="learned"), "position_encoding"),
        (dict(layer_norm_eps=1e-6), "layer_norm_eps"),
    ],
)
def test_export_marian_refuses_what_marian_cannot_compute(overrides, named):
    with pytest.raises(ExportError, match=named):
        to_marian(random_model(**overrides))


@pytest.mark.slow
def test_export_marian_of_the_shipped_checkpoint_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "marian"
    assert main(["export-marian", str(CHECKPOINT), str(out)]) == 0
    assert "MarianMTModel" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["model_type"] == "marian"
    marian = MarianMTModel.from_pretrained(out).eval()
    model = VaswaniForConditionalGeneration.from_pretrained(CHECKPOINT, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    sources = [f">>en<< {spanish}" for _, spanish in PAIRS[:6]] + [f">>es<< {english}" for english, _ in PAIRS[:6]]
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    ours_batch = AutoTokenizer.from_pretrained(CHECKPOINT)(sources, return_tensors="pt", padding=True)
    # The same ids, but for the padding: the exported tokenizer pads with the appended <pad> (id 8000).
    assert tokenizer.pad_token_id == 8000 and tokenizer.convert_ids_to_tokens(0) == "<vaswani_pad>"
    assert torch.equal(batch["input_ids"].masked_fill(batch["input_ids"] == 8000, 0), ours_batch["input_ids"])
    with torch.inference_mode():
        ours = model.generate(**ours_batch)  # the generation config: beam 4, length penalty 0.6
        theirs = marian.generate(**batch)
        assert tokens(theirs) == tokens(ours) and set(theirs[:, 0].tolist()) == {8000}
        inputs = dict(**ours_batch, decoder_input_ids=ours[:, :-1])
        expected = model(**inputs).logits
        actual = marian(**{**batch, "decoder_input_ids": marian_start(ours[:, :-1], marian)}).logits[..., :8000]
        # Reordering the interleaved dimensions changes the order of float additions (as sdpa vs eager does).
        assert (actual - expected).abs().max() <= ATOL * expected.abs().max()
    assert tokenizer.batch_decode(theirs, skip_special_tokens=True)[0] == "The black cat sleeps."
    assert marian.config.alignment == model.config.alignment  # how vaswani_inspect reads alignments: kept


ALIGNMENT = {"layer": 1, "heads": [0], "shift": True, "average_with": [{"layer": 2, "heads": "all", "shift": False}]}


def test_export_and_convert_keep_the_alignment_reading(tmp_path):
    """config.alignment (how vaswani_inspect reads word alignments off the cross-attention) is an extra field of the
    Marian config.json: the exported model's records read the same default as ours, and converting back keeps it."""
    pytest.importorskip("vaswani_inspect")  # the [inspect] extra
    from vaswani_inspect import alignment_settings, extract
    from vaswani_inspect.alignment.config import model_alignment

    model = random_model(alignment=ALIGNMENT)
    folder = export_marian(model, tmp_path / "marian", tokenizer=tiny_tokenizer())
    marian = MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    assert marian.config.alignment == ALIGNMENT and model_alignment(marian.config) == model_alignment(model.config)
    records = [
        extract(m, t, "el gato negro", direction="es-en", generate_kwargs=dict(max_new_tokens=4))
        for m, t in ((model, tiny_tokenizer()), (marian, AutoTokenizer.from_pretrained(folder)))
    ]
    assert alignment_settings(records[1]) == alignment_settings(records[0]) == ALIGNMENT
    back = convert_marian(folder, tmp_path / "back")
    assert VaswaniForConditionalGeneration.from_pretrained(back).config.alignment == ALIGNMENT


def test_convert_marian_gives_back_the_exported_folder_with_its_tokenizer(tmp_path):
    """export-marian then convert-marian from the shell: our weights, ids and tokenizer files come back."""
    folder = model_folder(tmp_path / "model")
    assert main(["export-marian", str(folder), str(tmp_path / "marian")]) == 0
    assert main(["convert-marian", str(tmp_path / "marian"), str(tmp_path / "back")]) == 0
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert json.loads((tmp_path / "back" / name).read_text()) == json.loads((folder / name).read_text()), name
    back = VaswaniForConditionalGeneration.from_pretrained(tmp_path / "back")
    original = VaswaniForConditionalGeneration.from_pretrained(folder)
    for field in ("vocab_size", "pad_token_id", "decoder_start_token_id", "bos_token_id", "eos_token_id"):
        assert getattr(back.config, field) == getattr(original.config, field), field
    assert (back.generation_config.decoder_start_token_id, back.generation_config.pad_token_id) == (1, 0)
    reordered = to_concatenated_layout(original).state_dict()
    assert all(torch.equal(back.state_dict()[name], tensor) for name, tensor in reordered.items())


def test_a_model_converted_from_a_one_direction_opus_mt_model_exports_and_converts_back_whole(
    tiny_architecture_folders, tmp_path, capsys
):
    """Its MarianTokenizer files (source.spm, target.spm, vocab.json) go into the export, vocab.json in OPUS-MT's
    layout, and come back with convert-marian: every folder of the round trip loads and translates."""
    converted, marian, back = tmp_path / "converted", tmp_path / "marian", tmp_path / "back"
    assert main(["convert-marian", str(tiny_architecture_folders["marian"]), str(converted)]) == 0
    assert main(["export-marian", str(converted), str(marian)]) == 0
    assert main(["convert-marian", str(marian), str(back)]) == 0
    for folder in (marian, back):
        assert all((folder / name).is_file() for name in ("source.spm", "target.spm", "vocab.json")), folder
    size = VaswaniForConditionalGeneration.from_pretrained(converted).config.vocab_size
    vocab = json.loads((marian / "vocab.json").read_text())
    assert (len(vocab), vocab["<pad>"], vocab["<vaswani_pad>"]) == (size + 1, size, size - 1)
    assert json.loads((back / "vocab.json").read_text()) == json.loads((converted / "vocab.json").read_text())
    sentence = "El gato se comió el ratón."
    ids = [AutoTokenizer.from_pretrained(folder)(sentence).input_ids for folder in (converted, marian, back)]
    assert ids[0] == ids[1] == ids[2]
    capsys.readouterr()
    translations = []
    for folder in (converted, marian, back):
        assert main(["translate", sentence, "--model", str(folder), "--backend", "torch"]) == 0, folder
        translations.append(capsys.readouterr().out.strip())
    assert translations[0] == translations[2] and all(translations)


def test_a_re_saved_export_converts_as_the_marian_model_it_has_become(tmp_path, caplog):
    """MarianMTModel.save_pretrained drops the decoder's position table that carries our start token: the copy
    starts from the position encoding alone. convert-marian says so and converts that model, exactly."""
    folder = export_marian(random_model(), tmp_path / "marian")
    MarianMTModel.from_pretrained(folder).save_pretrained(tmp_path / "re-saved")
    with caplog.at_level("WARNING", logger="hf_vaswani.marian.convert"):
        back = convert_marian(tmp_path / "re-saved", tmp_path / "back")  # its logits check passes
    assert "the weights no longer hold it" in caplog.text
    config = VaswaniForConditionalGeneration.from_pretrained(back).config
    assert config.vocab_size == 301 and config.decoder_start_token_id == config.pad_token_id == 300


def test_export_marian_refuses_to_write_into_its_source(tmp_path, capsys):
    model_dir = tmp_path / "model"
    random_model().save_pretrained(model_dir)
    assert main(["export-marian", str(model_dir), str(model_dir)]) == 2
    assert "is also an input of this command" in capsys.readouterr().err  # (hf_vaswani.outputs' wording)


# ----------------------------------------------------------------------------------------------------------------
# The OUT folder of every export: checked before the model is loaded, written whole, replaced with --overwrite
# ----------------------------------------------------------------------------------------------------------------

#: The extra each export command needs (None: the core install).
EXPORT_EXTRAS = {"export-marian": None, "export-ctranslate2": "ctranslate2", "export-onnx": "onnxruntime"}

OUT_ERRORS = {
    "non-empty": ("{out}", [], "is not empty: choose a new folder, or pass --overwrite"),
    "the-source": ("{model}", ["--overwrite"], "is also an input of this command"),
    "holds-the-source": ("{tmp}", ["--overwrite"], "holds the input"),
    "a-file": ("{out}/keep.txt", [], "is a file, not a folder"),
    "inside-the-source": ("{model}/export", [], "is inside the input folder"),
    "unwritable": ("{ro}/out", [], "Cannot write the"),
}


@pytest.mark.parametrize("case", list(OUT_ERRORS))
@pytest.mark.parametrize("command", list(EXPORT_EXTRAS))
def test_export_out_folder_is_checked_before_the_model_loads(command, case, tmp_path, capsys, monkeypatch):
    if EXPORT_EXTRAS[command]:
        pytest.importorskip(EXPORT_EXTRAS[command])

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the output folder was refused")

    monkeypatch.setattr("hf_vaswani.export.loading._from_pretrained", no_loading)
    model_dir = tmp_path / "model"
    random_model().save_pretrained(model_dir)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("an earlier export")
    target, options, message = OUT_ERRORS[case]
    target = target.format(out=out, model=model_dir, tmp=tmp_path, ro=unwritable_folder(tmp_path))
    capsys.readouterr()  # the setup's own output (saving the model may show a progress bar)
    assert main([command, str(model_dir), target, *options]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and message in err, err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "out"]  # no temporary sibling


def test_export_marian_overwrite_replaces_the_folder_whole(tmp_path, capsys):
    folder = model_folder(tmp_path / "model")
    out = tmp_path / "marian"
    out.mkdir()
    (out / "stale.bin").write_text("from an earlier export")
    assert main(["export-marian", str(folder), str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert not (out / "stale.bin").exists() and (out / "model.safetensors").is_file()
    assert "# marian" in (out / "README.md").read_text()  # the folder's name, not its temporary sibling's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marian", "model"]
    assert torch.equal(
        MarianMTModel.from_pretrained(out).model.encoder.layers[0].fc1.weight,
        to_marian(VaswaniForConditionalGeneration.from_pretrained(folder)).model.encoder.layers[0].fc1.weight,
    )


def test_export_ctranslate2_overwrite_and_the_deprecated_force(tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    folder = model_folder(tmp_path / "model")
    out = tmp_path / "ct2"
    out.mkdir()
    (out / "stale.bin").write_text("from an earlier export")
    assert main(["export-ctranslate2", str(folder), str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.bin", "shared_vocabulary.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ct2", "model"]
    capsys.readouterr()
    assert main(["export-ctranslate2", str(folder), str(out), "--force"]) == 0
    err = capsys.readouterr().err
    assert "hf-vaswani export-ctranslate2: warning: --force is deprecated: use --overwrite" in err, err
    assert (out / "model.bin").is_file()


# ----------------------------------------------------------------------------------------------------------------
# CTranslate2
# ----------------------------------------------------------------------------------------------------------------


def model_folder(path: Path, seed: int = 3, **overrides) -> Path:
    """A tiny random model saved with the tiny tokenizer (300 pieces) and a beam-4 generation config."""
    model = random_model(seed, **overrides)
    model.generation_config.update(num_beams=4, length_penalty=0.6, max_length=13, early_stopping=True)
    model.save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


CT2_VARIANTS = {
    **VARIANTS,
    "pre-ln-learned": dict(layer_norm_position="pre", position_encoding="learned"),
    "no-positions-unscaled": dict(position_encoding="none", scale_embedding=False),
}


@pytest.mark.parametrize("variant", list(CT2_VARIANTS))
def test_ctranslate2_float32_scores_and_beam_tokens_are_ours(variant, tmp_path):
    pytest.importorskip("ctranslate2")
    from hf_vaswani.backends import load_ctranslate2

    folder = model_folder(tmp_path / "model", **CT2_VARIANTS[variant])
    translator = load_ctranslate2(folder, quantization="float32", threads=1, cache_dir=tmp_path / "cache")
    model = VaswaniForConditionalGeneration.from_pretrained(folder).eval()
    tokenizer = tiny_tokenizer()
    sentences = [spanish for _, spanish in PAIRS[:8]]
    sources = [f">>en<< {sentence}" for sentence in sentences]
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    with torch.inference_mode():
        ours = [until_eos(row) for row in model.generate(**batch).tolist()]
    assert translator.translate_ids(sentences, "es-en", batch_size=3) == ours

    # CTranslate2's log-probabilities of our outputs (and of the end token after them) are ours, token by token.
    source_tokens = [tokenizer.convert_ids_to_tokens(ids) for ids in tokenizer(sources).input_ids]
    scored = translator.translator.score_batch(source_tokens, [tokenizer.convert_ids_to_tokens(ids) for ids in ours])
    for row, (ids, result) in enumerate(zip(ours, scored, strict=True)):
        with torch.inference_mode():
            logits = model(
                input_ids=batch["input_ids"][row : row + 1],
                attention_mask=batch["attention_mask"][row : row + 1],
                decoder_input_ids=torch.tensor([[1, *ids]]),
            ).logits[0]
        expected = logits.log_softmax(-1)[torch.arange(len(ids) + 1), torch.tensor([*ids, 2])]
        assert torch.allclose(torch.tensor(result.log_probs), expected, atol=1e-4), row


def test_ctranslate2_export_keeps_every_piece_and_starts_from_bos(tmp_path):
    pytest.importorskip("ctranslate2")
    out = tmp_path / "ct2"
    assert main(["export-ctranslate2", str(CHECKPOINT), str(out)]) == 0
    vocabulary = json.loads((out / "shared_vocabulary.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert len(vocabulary) == 8000 and vocabulary[:3] == ["<pad>", "<s>", "</s>"]
    assert config["decoder_start_token"] == "<s>" and config["layer_norm_epsilon"] == 1e-5
    # An existing folder is replaced only with --overwrite (or --force, its deprecated alias).
    assert main(["export-ctranslate2", str(CHECKPOINT), str(out), "--quantization", "int8"]) == 2
    assert main(["export-ctranslate2", str(CHECKPOINT), str(out), "--quantization", "int8", "--force"]) == 0
    assert (out / "model.bin").stat().st_size < 10_000_000  # int8: a quarter of the float32 weights


def test_ctranslate2_converts_the_marian_export_and_translates_as_it_does(tmp_path):
    """CTranslate2's own converter (``ct2-transformers-converter``) takes the Marian export (OPUS-MT's layout: it
    drops the appended <pad>, and starts from a zero embedding, which the stored position table completes into our
    start token): greedy tokens and log-probabilities are the exported MarianMTModel's, and so ours."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    # CTranslate2's Marian loader reads one number of heads for both stacks (the encoder's): the same here.
    folder = export_marian(model_folder(tmp_path / "model", seed=5, decoder_attention_heads=4), tmp_path / "marian")
    converted = ctranslate2.converters.TransformersConverter(str(folder)).convert(str(tmp_path / "ct2"))
    assert json.loads((tmp_path / "ct2" / "shared_vocabulary.json").read_text())[:2] == ["<vaswani_pad>", "<s>"]
    translator = ctranslate2.Translator(converted, device="cpu", intra_threads=1)
    marian = MarianMTModel.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    sources = [f">>en<< {spanish}" for _, spanish in PAIRS[:8]]
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    with torch.inference_mode():
        greedy = tokens(marian.generate(**batch, num_beams=1, max_new_tokens=10))
    assert len(set(map(tuple, greedy))) > 4, "the sources should lead to different outputs"
    source_tokens = [tokenizer.convert_ids_to_tokens(ids) for ids in tokenizer(sources).input_ids]
    results = translator.translate_batch(source_tokens, beam_size=1, max_decoding_length=10)
    assert [tokenizer.convert_tokens_to_ids(result.hypotheses[0]) for result in results] == greedy

    scored = translator.score_batch(source_tokens, [tokenizer.convert_ids_to_tokens(ids) for ids in greedy])
    for row, (ids, result) in enumerate(zip(greedy, scored, strict=True)):
        decoder_input_ids = torch.tensor([[marian.config.decoder_start_token_id, *ids]])
        with torch.inference_mode():
            source = {name: tensor[row : row + 1] for name, tensor in batch.items()}
            logits = marian(**source, decoder_input_ids=decoder_input_ids).logits[0]
        expected = logits.log_softmax(-1)[torch.arange(len(ids) + 1), torch.tensor([*ids, 2])]
        assert torch.allclose(torch.tensor(result.log_probs), expected, atol=1e-4), row


def test_export_ctranslate2_needs_a_tokenizer_and_the_fast_extra(tmp_path, capsys, monkeypatch):
    pytest.importorskip("ctranslate2")
    random_model().save_pretrained(tmp_path / "weights-only")
    assert main(["export-ctranslate2", str(tmp_path / "weights-only"), str(tmp_path / "out")]) == 2
    assert "has no tokenizer" in capsys.readouterr().err
    for name in [name for name in sys.modules if name.split(".")[0] == "ctranslate2"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the [fast] extra were not installed
    monkeypatch.delitem(sys.modules, "hf_vaswani.export.ctranslate2", raising=False)
    assert main(["export-ctranslate2", str(CHECKPOINT), str(tmp_path / "out")]) == 2
    assert "needs the [fast] extra" in capsys.readouterr().err


def test_the_command_offers_the_weight_types_the_exporter_takes():
    pytest.importorskip("ctranslate2")
    from hf_vaswani.commands import export as command
    from hf_vaswani.export import ctranslate2 as exporter

    assert command.QUANTIZATIONS == exporter.QUANTIZATIONS


@pytest.fixture(scope="module")
def shipped_translations():
    """The shipped checkpoint's beam-search translations of 12 hand-written sentences, per direction (float32)."""
    from hf_vaswani.inference import load_translator, translate

    model, tokenizer = load_translator(CHECKPOINT, device="cpu", dtype="float32")
    spanish, english = [s for _, s in PAIRS[:12]], [e for e, _ in PAIRS[:12]]
    return {
        "es-en": (spanish, translate(model, tokenizer, spanish, "es-en")),
        "en-es": (english, translate(model, tokenizer, english, "en-es")),
    }


@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory):
    """A copy of the shipped checkpoint, to check that it stays as it is."""
    import shutil

    copy = tmp_path_factory.mktemp("shipped") / "model"
    return Path(shutil.copytree(CHECKPOINT, copy, ignore=shutil.ignore_patterns("ctranslate2-*")))


@pytest.mark.slow
def test_ctranslate2_float32_translates_the_shipped_checkpoint_as_we_do(shipped_translations, shipped_copy):
    pytest.importorskip("ctranslate2")
    from hf_vaswani.backends import load_ctranslate2, user_cache_dir

    translator = load_ctranslate2(shipped_copy, quantization="float32", threads=1)
    assert translator.export_folder.parent == user_cache_dir()  # cached there, not in the model folder
    assert not list(shipped_copy.glob("ctranslate2-*"))
    for direction, (sources, ours) in shipped_translations.items():
        assert translator.translate(sources, direction) == ours


def test_ctranslate2_int8_translations_are_sensible(shipped_translations, shipped_copy):
    pytest.importorskip("ctranslate2")
    from hf_vaswani.backends import load_ctranslate2

    translator = load_ctranslate2(shipped_copy, threads=1)  # int8 on the CPU by default
    assert translator.quantization == "int8" and translator.translator.compute_type.startswith("int8")
    same = total = 0
    for direction, (sources, ours) in shipped_translations.items():
        theirs = translator.translate(sources, direction)
        assert all(theirs)
        same += sum(a == b for a, b in zip(theirs, ours, strict=True))
        total += len(ours)
    assert same >= 0.7 * total  # rounded weights: a few translations may change, most do not
    assert translator.translate(["El gato negro duerme."], "es-en") == ["The black cat sleeps."]


# ----------------------------------------------------------------------------------------------------------------
# ONNX
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")  # torch.export's own
def test_onnx_encoder_and_decoder_decode_greedily_as_we_do(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from hf_vaswani.export.onnx import OnnxGreedyTranslator

    folder = model_folder(tmp_path / "model", **VARIANTS["separate-vocab-bias-gelu"])
    out = tmp_path / "onnx"
    out.mkdir()
    (out / "stale.onnx").write_text("from an earlier export")
    assert main(["export-onnx", str(folder), str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert {"encoder.onnx", "decoder.onnx", "tokenizer.json", "config.json"} <= {p.name for p in out.iterdir()}
    assert not (out / "stale.onnx").exists()  # replaced whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "onnx"]
    model = VaswaniForConditionalGeneration.from_pretrained(folder).eval()
    onnx = OnnxGreedyTranslator(out, threads=1)
    for length in (10, 4):  # other batch and source lengths than the export's, with padding
        batch = {name: tensor[:, :length] for name, tensor in padded_batch().items()}
        with torch.inference_mode():
            ours = model.generate(**batch, num_beams=1, max_new_tokens=12)
        theirs = onnx.generate(batch["input_ids"].numpy(), batch["attention_mask"].numpy(), max_new_tokens=12)
        assert theirs.tolist() == ours.tolist()
    sentences = [spanish for _, spanish in PAIRS[:3]]
    with torch.inference_mode():
        tokens = model.generate(
            **tiny_tokenizer()([f">>en<< {s}" for s in sentences], return_tensors="pt", padding=True),
            num_beams=1,
            max_new_tokens=12,
        )
    assert onnx.translate(sentences, "es-en", max_new_tokens=12) == [
        text.strip() for text in tiny_tokenizer().batch_decode(tokens, skip_special_tokens=True)
    ]
