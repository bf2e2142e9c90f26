"""The logit and decoder lenses on ours (post- and pre-norm) and every tiny architecture: the last layer is the
model's own output (its distribution, its greedy translation), an intermediate layer is what a hook on that layer
gives through the final norm, and the top pieces are the distribution's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
from transformers.modeling_outputs import BaseModelOutput

from vaswani_inspect import extract
from vaswani_inspect.directions import resolve_direction
from vaswani_inspect.lens import decoder_lens, logit_lens
from vaswani_inspect.pieces import piece_labels
from vaswani_inspect.testing import tiny_model
from vaswani_inspect.testing_models import ARCHITECTURES

SOURCE, TARGET = "El gato se comió el ratón.", "The cat ate the mouse."
OURS = ("vaswani", "vaswani_pre")
#: Tiny random models write long nonsense: the decoder lens tests stop each translation after a few pieces.
NEW_TOKENS = 6


@pytest.fixture(scope="module")
def lens_models(tokenizer, model, tiny_architecture_folders):
    """{name: (model, tokenizer, source)}: ours as the tests' tiny model (post-norm) and pre-norm (a final norm on
    each stack), and each tiny architecture loaded plainly."""
    found = {
        "vaswani": (model, tokenizer, "el gato negro", "the black cat"),
        "vaswani_pre": (tiny_model(len(tokenizer), layer_norm_position="pre"), tokenizer, "el gato negro", "the cat"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Marian's "pip install sacremoses")
        for name, folder in tiny_architecture_folders.items():
            loaded = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
            found[name] = (loaded, AutoTokenizer.from_pretrained(folder), SOURCE, TARGET)
    return found


def _layer_count(model, side):
    config = model.config
    found = getattr(config, f"{side}_layers", None)  # (T5's config names them num_layers, num_decoder_layers)
    return found if found is not None else getattr(config, "num_layers" if side == "encoder" else "num_decoder_layers")


def _probabilities(model, lens):
    with torch.no_grad():
        logits = model(
            input_ids=torch.tensor([lens.source_ids]), decoder_input_ids=torch.tensor([lens.target_ids[:-1]])
        ).logits
    return torch.softmax(logits[0].double(), dim=-1).numpy()


@pytest.mark.slow
@pytest.mark.parametrize("name", [*OURS, *ARCHITECTURES])
def test_the_last_layer_is_the_models_own_distribution(lens_models, name):
    model, tokenizer, source, target = lens_models[name]
    lens = logit_lens(model, tokenizer, source, direction="es-en", target=target, k=4)
    expected = _probabilities(model, lens)
    rows = np.arange(lens.positions)
    assert lens.layers == ["embeddings", *map(str, range(1, _layer_count(model, "decoder") + 1))]
    assert lens.top_probs.shape == (len(lens.layers), lens.positions, 4)
    top = np.sort(expected, axis=-1)[:, ::-1][:, :4]
    np.testing.assert_allclose(lens.top_probs[-1], top, atol=1e-5)
    np.testing.assert_allclose(lens.target_probs[-1], expected[rows, lens.target_ids[1:]], atol=1e-5)
    np.testing.assert_allclose(lens.kl_to_final[-1], 0.0, atol=1e-5)
    assert (np.diff(lens.top_probs, axis=-1) <= 0).all()  # most probable first, at every layer
    assert lens.top_tokens == [[piece_labels(tokenizer, ids.tolist()) for ids in layer] for layer in lens.top_ids]
    # A top piece that is the translation's next piece has the target's probability, at every layer.
    hits = lens.top_ids == np.asarray(lens.target_ids[1:])[None, :, None]
    np.testing.assert_allclose(lens.top_probs[hits], np.broadcast_to(lens.target_probs[..., None], hits.shape)[hits])
    assert (lens.kl_to_final >= 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", [*OURS, *ARCHITECTURES])
def test_the_decoder_lens_of_the_last_layer_is_greedy_generate(lens_models, name):
    model, tokenizer, source, _ = lens_models[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (transformers: max_new_tokens and the config's max_length both set)
        lens = decoder_lens(model, tokenizer, source, direction="es-en", max_new_tokens=NEW_TOKENS)
        settings = {"num_beams": 1, "max_new_tokens": NEW_TOKENS}
        greedy = extract(model, tokenizer, source, direction="es-en", generate_kwargs=settings)
    assert len(lens.translations) == _layer_count(model, "encoder") + 1 == len(lens.token_ids)
    assert lens.token_ids[-1] == greedy.target_ids
    assert lens.translations[-1] == greedy.target_text


@pytest.mark.slow  # (the first test of the fast lane here: it loads the models)
def test_an_intermediate_layer_is_what_a_hook_on_it_gives(lens_models):
    """On M2M100 (pre-norm: a final norm on both stacks, a forced first token): the logit lens of decoder layer 1
    and the decoder lens of encoder layer 1 equal a hook's output through the final norm."""
    model, tokenizer, source, _ = lens_models["m2m100"]
    lens = logit_lens(model, tokenizer, source, direction="es-en", target=TARGET)
    caught = {}
    encoder, decoder = model.get_encoder(), model.get_decoder()
    hooks = [
        side.layers[0].register_forward_hook(lambda module, args, output, key=key: caught.setdefault(key, output))
        for key, side in (("encoder", encoder), ("decoder", decoder))
    ]
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([lens.source_ids]), decoder_input_ids=torch.tensor([lens.target_ids[:-1]]))
    finally:
        for hook in hooks:
            hook.remove()
    states = {key: value if isinstance(value, torch.Tensor) else value[0] for key, value in caught.items()}
    with torch.no_grad():
        probabilities = torch.softmax(model.lm_head(decoder.layer_norm(states["decoder"]))[0].double(), -1).numpy()
    rows = np.arange(lens.positions)
    np.testing.assert_allclose(lens.target_probs[1], probabilities[rows, lens.target_ids[1:]], atol=1e-6)
    np.testing.assert_allclose(lens.top_probs[1], np.sort(probabilities, -1)[:, ::-1][:, :5], atol=1e-6)

    written = decoder_lens(model, tokenizer, source, direction="es-en", max_new_tokens=NEW_TOKENS)
    settings = resolve_direction(model, tokenizer, "es-en").generate_settings
    with torch.no_grad():
        expected = model.generate(
            input_ids=torch.tensor([written.source_ids]),
            encoder_outputs=BaseModelOutput(last_hidden_state=encoder.layer_norm(states["encoder"])),
            num_beams=1,
            do_sample=False,
            max_new_tokens=NEW_TOKENS,
            **settings,
        )[0].tolist()
    assert written.token_ids[1] == expected


def test_a_given_target_is_read_and_bad_k_refused(model, tokenizer):
    lens = logit_lens(model, tokenizer, "el gato negro", direction="es-en", target="the black cat", k=3)
    assert lens.target_text == "the black cat"
    assert lens.target_tokens == piece_labels(tokenizer, lens.target_ids)
    assert lens.to_dict()["top_tokens"] == lens.top_tokens
    for position, piece in enumerate(lens.target_ids[1:]):
        first = [layer for layer in range(len(lens.layers)) if (lens.top_ids[layer:, position, 0] == piece).all()]
        assert lens.first_top_layer(position) == (first[0] if first else None)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        logit_lens(model, tokenizer, "el gato negro", direction="es-en", k=0)
