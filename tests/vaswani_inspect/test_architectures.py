"""The toolkit on every architecture it knows (`vaswani_inspect.architectures`): tiny random Marian (one direction,
a sentencepiece tokenizer without offsets), NLLB (language codes), mBART-50, BART (byte-level BPE, a direction given
once) and T5 (task prefixes), each loaded plainly (sdpa), as a user loads them.

Each test checks a behaviour against its definition, not a snapshot: the attention read on a plainly loaded model
is the eager model's; a head switched off is its output projection's columns zeroed; the function the gradient
methods differentiate gives the model's own log-probabilities; the words are the text's words."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from vaswani_inspect import ablate_heads, align, attribute, extract, head_view_html, source_words, target_words
from vaswani_inspect.architectures import (
    UnsupportedModelError,
    architecture_of,
    attention_modules,
    head_counts,
    head_size,
    layer_stacks,
    output_logits,
    projections,
)
from vaswani_inspect.attribution import METHODS
from vaswani_inspect.attribution.inputs import _final_states, embeddings, log_probabilities, record_inputs
from vaswani_inspect.directions import model_directions, resolve_direction, scheme_of
from vaswani_inspect.testing_models import ARCHITECTURES
from vaswani_inspect.translation import translate_any

SOURCE, TARGET = "El gato se comió el ratón.", "The cat ate the mouse."
SOURCE_WORDS = ["El", "gato", "se", "comió", "el", "ratón", "."]
TARGET_WORDS = ["The", "cat", "ate", "the", "mouse", "."]


@pytest.fixture(scope="module")
def loaded(tiny_architecture_folders):
    """{architecture: (model, tokenizer)}, loaded with the Auto classes and their default attention (sdpa)."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Marian's "pip install sacremoses")
        for name, folder in tiny_architecture_folders.items():
            found[name] = (AutoModelForSeq2SeqLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder))
    return found


@pytest.fixture(scope="module")
def records(loaded):
    """{architecture: the teacher-forced record of SOURCE -> TARGET, es-en}, extracted once per module."""
    found = {}
    for name, (model, tokenizer) in loaded.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found[name] = extract(model, tokenizer, SOURCE, TARGET, direction="es-en")
    return found


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_a_plainly_loaded_model_is_read_as_the_eager_model(name, tiny_architecture_folders):
    folder = tiny_architecture_folders[name]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    plain = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    eager = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager").eval()
    assert plain.config._attn_implementation != "eager"
    with pytest.warns(UserWarning, match="switched to attn_implementation='eager'"):
        ours = extract(plain, tokenizer, SOURCE, TARGET, direction="es-en")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the second extraction switches nothing
        again = extract(plain, tokenizer, SOURCE, TARGET, direction="es-en")
    reference = extract(eager, tokenizer, SOURCE, TARGET, direction="es-en")
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(ours.attention(kind), reference.attention(kind), atol=1e-6)
        np.testing.assert_array_equal(again.attention(kind), ours.attention(kind))
    layers, heads = head_counts(plain)["cross"]
    assert ours.cross.shape[:2] == (layers, heads) and architecture_of(plain).name == name


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_each_model_is_told_its_direction_as_its_entry_declares(name, loaded):
    """The tiny model of each entry uses one of the entry's `direction_schemes` (Marian's is one direction, T5's
    a task prefix, ...)."""
    model, tokenizer = loaded[name]
    assert scheme_of(model, tokenizer) in architecture_of(model).direction_schemes


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_words_are_the_texts_words_whatever_the_tokenizer(name, records):
    record = records[name]
    assert source_words(record) == SOURCE_WORDS, record.source_tokens
    assert target_words(record) == TARGET_WORDS, record.target_tokens
    links = align(record)
    assert links and all(0 <= s < len(SOURCE_WORDS) and 0 <= t < len(TARGET_WORDS) for s, t in links)


def test_byte_level_pieces_are_labelled_with_the_text_they_cover(records, loaded):
    _, tokenizer = loaded["bart"]
    raw = tokenizer.convert_ids_to_tokens(records["bart"].source_ids)
    assert any("Ġ" in token for token in raw) and any("Ã" in token for token in raw)  # byte-level BPE indeed
    labels = records["bart"].source_tokens
    assert not any("Ġ" in label or "Ã" in label for label in labels), labels
    assert "".join(label for label in labels if not label.startswith("<")).replace("▁", " ").strip() == SOURCE


def test_a_task_prefix_is_read_but_is_no_word(records):
    tokens = records["t5"].source_tokens
    prefix = [token for token in tokens if token.startswith("⟨")]
    assert (
        "".join(prefix).replace("⟨", "").replace("⟩", "").replace("▁", " ").strip() == "translate Spanish to English:"
    )
    assert records["t5"].cross.shape[-1] == len(tokens)  # the prefix keeps its attention columns


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_a_head_off_is_its_output_projection_columns_zeroed(name, loaded):
    model, tokenizer = loaded[name]
    batch = tokenizer([SOURCE], text_target=[TARGET], return_tensors="pt")
    inputs = {"input_ids": batch["input_ids"], "labels": batch["labels"]}
    reference = copy.deepcopy(model)
    for kind, layer, head in (("encoder", 0, 1), ("decoder", 1, 0), ("cross", 1, 2)):
        module = attention_modules(reference)[kind][layer]
        size = head_size(reference, module)[1]
        with torch.no_grad():
            projections(reference, module).output.weight[:, head * size : (head + 1) * size] = 0.0
    with torch.no_grad():
        plain = model(**inputs).logits
        with ablate_heads(model, {"encoder": {0: [1]}, "decoder": {1: [0]}, "cross": {1: [2]}}):
            ablated = model(**inputs).logits
            generated = model.generate(input_ids=batch["input_ids"], num_beams=2, max_new_tokens=4)
        expected = reference(**inputs).logits
    torch.testing.assert_close(ablated, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(ablated, plain) and generated.shape[0] == 1
    assert torch.equal(model(**inputs).logits, plain)  # the hooks are gone


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_gradient_methods_differentiate_the_models_own_function(name, loaded, records):
    model, _ = loaded[name]
    record = records[name]
    inputs = record_inputs(model, record)
    source, target = embeddings(model, inputs)  # what the methods feed the stacks (Marian scales its encoder's ids)
    with torch.no_grad():
        states = _final_states(model, source, target)[0]
        encoded = model.get_encoder()(input_ids=inputs.source).last_hidden_state
        expected_states = model.get_decoder()(input_ids=inputs.decoder, encoder_hidden_states=encoded).last_hidden_state
        logits = model(input_ids=inputs.source, decoder_input_ids=inputs.decoder).logits[0]
        positions = torch.arange(inputs.rows)
        ours = log_probabilities(model, source, target.expand(inputs.rows, -1, -1), positions, inputs.labels)
    torch.testing.assert_close(states, expected_states[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(output_logits(model, states), logits, rtol=1e-5, atol=1e-7)  # T5 rescales
    expected = torch.log_softmax(logits.float(), dim=-1)[positions, inputs.labels]
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_every_explanation_method_runs_and_gives_a_distribution_per_target_word(name, loaded, records):
    model, tokenizer = loaded[name]
    for method in METHODS:
        options = {"n_steps": 4} if method == "integrated_gradients" else {}
        attribution = attribute(model, tokenizer, records[name], method=method, **options)
        assert attribution.matrix.shape == (len(TARGET_WORDS), len(SOURCE_WORDS)), method
        assert np.all(np.isfinite(attribution.matrix)), method
    assert "<script" in head_view_html(records[name], kind="cross")


def test_directions_per_scheme(loaded):
    nllb, nllb_tokenizer = loaded["m2m100"]
    assert scheme_of(nllb, nllb_tokenizer) == "language_codes"
    by_iso = extract(nllb, nllb_tokenizer, SOURCE, TARGET, direction="es-en")
    by_code = extract(nllb, nllb_tokenizer, SOURCE, TARGET, direction="spa_Latn-eng_Latn")
    assert by_iso.source_ids == by_code.source_ids and by_iso.target_ids == by_code.target_ids
    assert by_iso.source_tokens[0] == "spa_Latn" and by_iso.target_tokens[1] == "eng_Latn"
    assert resolve_direction(nllb, nllb_tokenizer, "es-en").generate_settings == {
        "forced_bos_token_id": nllb_tokenizer.convert_tokens_to_ids("eng_Latn")
    }
    with pytest.raises(ValueError, match="no language code for 'xx'"):
        resolve_direction(nllb, nllb_tokenizer, "es-xx")
    marian, marian_tokenizer = loaded["marian"]
    assert model_directions(marian, marian_tokenizer) == ["es-en"]  # read from the folder
    with pytest.raises(ValueError, match="translates es-en only"):
        extract(marian, marian_tokenizer, "The cat.", direction="en-es")
    t5, t5_tokenizer = loaded["t5"]
    assert resolve_direction(t5, t5_tokenizer, "en-es").source_prefix == "translate English to Spanish: "
    with pytest.raises(ValueError, match="no task prefix for 'en-fr'"):
        resolve_direction(t5, t5_tokenizer, "en-fr")


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_translating_one_text_instead_of_a_list_or_with_bad_settings_is_refused(name, loaded):
    """A str would be translated one character at a time; NaN as length penalty would rank hypotheses at random."""
    model, tokenizer = loaded[name]
    direction = "es-en" if name == "marian" else "en-es"
    with pytest.raises(TypeError, match="sentences must be a list of texts, got one str"):
        translate_any(model, tokenizer, "gato", direction)
    for settings, message in (
        ({"length_penalty": float("nan")}, "length_penalty must be a finite number"),
        ({"num_beams": 0}, "num_beams must be a positive integer"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"nm_beams": 2}, "'nm_beams' \\(did you mean 'num_beams'\\?\\)"),
    ):
        with pytest.raises(ValueError, match=message):
            translate_any(model, tokenizer, ["gato"], direction, **settings)
    assert len(translate_any(model, tokenizer, ["gato", "perro"], direction, max_new_tokens=3)) == 2


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_a_sentence_longer_than_the_model_reads_is_cut_with_a_warning(name, loaded):
    """2,000 words: cut to what the model reads (64 positions, or the T5 tokenizer's 512), and said, as translate
    says it."""
    from hf_vaswani.source_checks import TruncatedInputWarning

    model, tokenizer = loaded[name]
    direction = "es-en" if name == "marian" else "en-es"
    with pytest.warns(TruncatedInputWarning, match=r"only their first \d+ tokens were translated: sentence 2 \("):
        found = translate_any(model, tokenizer, ["gato", " ".join(["gato"] * 2000)], direction, max_new_tokens=2)
    assert len(found) == 2


def test_a_model_whose_attention_is_elsewhere_is_refused_naming_what_is_missing(loaded):
    model, _ = loaded["bart"]
    broken = copy.deepcopy(model)
    for layer in broken.get_decoder().layers:
        del layer.encoder_attn
    with pytest.raises(UnsupportedModelError, match="cross attention is not at decoder layer.encoder_attn"):
        attention_modules(broken)
    with pytest.raises(UnsupportedModelError, match="not an encoder-decoder"):
        architecture_of(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_the_layer_stacks_hold_the_attention_modules_and_feed_the_last_states(name, loaded):
    model, _ = loaded[name]
    stacks, modules = layer_stacks(model), attention_modules(model)
    for side, kinds in (("encoder", ["encoder"]), ("decoder", ["decoder", "cross"])):
        for kind in kinds:
            assert len(stacks[side]) == len(modules[kind])
            for layer, module in zip(stacks[side], modules[kind]):
                assert any(inner is module for inner in layer.modules()), (name, kind)
    seen = []
    handle = stacks["encoder"][-1].register_forward_hook(lambda module, args, output: seen.append(output))
    try:
        ids = torch.tensor([[5, 6, 7, 2]])
        with torch.no_grad():
            last = model.get_encoder()(input_ids=ids).last_hidden_state
    finally:
        handle.remove()
    output = seen[0][0] if isinstance(seen[0], tuple) else seen[0]
    final_norm = getattr(model.get_encoder(), "layer_norm", None) or getattr(
        model.get_encoder(), "final_layer_norm", None
    )
    torch.testing.assert_close(final_norm(output) if final_norm is not None else output, last)


@pytest.mark.slow
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_the_commands_take_any_supported_model(name, tiny_architecture_folders, tmp_path, capsys):
    from hf_vaswani.cli import main

    folder = str(tiny_architecture_folders[name])
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{TARGET}\t{SOURCE}\n", encoding="utf-8")
    runs = [
        ["inspect", SOURCE, "--target", TARGET, "--out", str(tmp_path / "inspect"), "--format", "svg"],
        ["explain", SOURCE, "--target", TARGET, "--method", "value_zeroing", "--out", str(tmp_path / "explain")],
    ]
    if name in ("marian", "t5"):  # (the slowest command: a translation per head; the API runs it on every model)
        runs.append(["head-importance", "--pairs", str(pairs), "--no-pruning", "--max-new-tokens", "2"])
        runs[-1] += ["--out", str(tmp_path / "importance"), "--no-progress"]
    for argv in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main([*argv, "--model", folder, "--direction", "es-en"])
        captured = capsys.readouterr()
        assert code == 0, (argv[0], captured.err)
    assert (tmp_path / "inspect" / "index.html").is_file() and (tmp_path / "explain" / "table.md").is_file()
    assert name not in ("marian", "t5") or (tmp_path / "importance" / "index.md").is_file()
    code = main(["inspect", SOURCE, "--out", str(tmp_path / "other"), "--model", folder, "--alignment-layer", "5"])
    line = capsys.readouterr().err.strip()
    assert (
        code == 2
        and line
        == "hf-vaswani inspect: error: --alignment-layer 5: the model has 2 decoder layers, 0 to 1 (or 'mean')."
    ), line


def test_the_python_example_of_the_documentation_runs(tiny_architecture_folders, tmp_path, monkeypatch):
    import re

    from tests.helpers import ROOT

    page = (ROOT / "docs" / "other_models.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", page, flags=re.S)[0]
    assert '"Helsinki-NLP/opus-mt-es-en"' in example
    example = example.replace('"Helsinki-NLP/opus-mt-es-en"', repr(str(tiny_architecture_folders["marian"])))
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(example, "docs/other_models.md", "exec"), {"__name__": "docs"})
    assert (tmp_path / "alignment.png").read_bytes()[:4] == b"\x89PNG"


def test_our_model_converted_from_a_one_direction_opus_mt_model_loads_and_keeps_its_direction(
    tiny_architecture_folders, tmp_path
):
    import contextlib
    import io

    from hf_vaswani.marian import convert_marian
    from vaswani_inspect import load_model_and_tokenizer

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        convert_marian(str(tiny_architecture_folders["marian"]), tmp_path / "converted")
        model, tokenizer = load_model_and_tokenizer(tmp_path / "converted")  # its tokenizer has no >>xx<< tokens
        record = extract(model, tokenizer, SOURCE, TARGET, direction="es-en")
    assert model.config.model_type == "vaswani" and scheme_of(model, tokenizer) == "one_direction"
    assert source_words(record) == SOURCE_WORDS and target_words(record) == TARGET_WORDS
    with pytest.raises(ValueError, match="translates es-en only"):
        extract(model, tokenizer, TARGET, direction="en-es")
