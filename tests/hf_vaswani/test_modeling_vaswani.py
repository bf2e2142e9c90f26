"""Correctness of the model on random weights: equivalence with PyTorch's own Transformer layers, masks,
cache, positions, losses and bad input."""

import math
import os

import numpy as np
import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration, VaswaniModel
from tests.helpers import CHECKPOINT, run_without_our_packages, tiny_config

# ----------------------------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "paper_millions"),
    [(VaswaniConfig.base, 65), (VaswaniConfig.big, 213)],
)
def test_presets_match_paper_parameter_counts(preset, paper_millions):
    config = preset(vocab_size=37000)
    with torch.device("meta"):
        model = VaswaniForConditionalGeneration(config)
    count = sum(p.numel() for p in model.parameters()) / 1e6
    assert abs(count - paper_millions) / paper_millions < 0.05, count


def test_presets_follow_table_3():
    base, big = VaswaniConfig.base(), VaswaniConfig.big()
    assert (base.d_model, base.encoder_ffn_dim, base.encoder_attention_heads, base.dropout) == (512, 2048, 8, 0.1)
    assert (big.d_model, big.decoder_ffn_dim, big.decoder_attention_heads, big.dropout) == (1024, 4096, 16, 0.3)
    assert base.encoder_layers == base.decoder_layers == big.encoder_layers == 6
    assert base.label_smoothing == big.label_smoothing == 0.1
    assert VaswaniConfig.big(dropout=0.1).dropout == 0.1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (dict(d_model=30, encoder_attention_heads=4), "divisible by encoder_attention_heads"),
        (dict(position_encoding="rotary"), "position_encoding='rotary' is not supported"),
        (dict(layer_norm_position="middle"), "layer_norm_position"),
        (dict(activation_function="tanh"), "activation_function"),
        (dict(dropout=1.5), "dropout must be in"),
        (dict(encoder_layers=0), "encoder_layers must be a positive integer"),
        (dict(pad_token_id=500), "pad_token_id=500 is outside the vocabulary"),
        (dict(decoder_vocab_size=50), "share_embeddings=True needs one vocabulary"),
    ],
)
def test_invalid_configs_fail_at_construction(overrides, message):
    # A bad `alignment` is refused where it is read: tests/vaswani_inspect/alignment/test_config.py.
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


def test_an_alignment_that_averages_readings_is_kept():
    averaged = {"layer": 0, "heads": [1], "shift": True, "average_with": [{"layer": 1, "heads": [0], "shift": False}]}
    config = tiny_config(alignment=averaged)
    assert VaswaniConfig.from_dict(config.to_dict()).alignment == averaged


# ----------------------------------------------------------------------------------------------------------------
# Equivalence with an independent implementation: torch.nn.TransformerEncoder / TransformerDecoder
# ----------------------------------------------------------------------------------------------------------------


def paper_positional_encoding(length: int, d_model: int) -> torch.Tensor:
    """Sec. 3.5, written out directly from the paper's two formulas."""
    table = np.zeros((length, d_model))
    for pos in range(length):
        for i in range(d_model // 2):
            table[pos, 2 * i] = math.sin(pos / 10000 ** (2 * i / d_model))
            table[pos, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d_model))
    return torch.from_numpy(table)


def copy_projections(theirs: nn.MultiheadAttention, ours: nn.Module) -> None:
    """PyTorch stacks the query, key and value projections as the rows of one `in_proj`."""
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


def torch_reference(model: VaswaniForConditionalGeneration):
    """Build nn.TransformerEncoder/Decoder (post-LN, no final norm) holding our weights."""
    config = model.config
    kwargs = dict(dropout=0.0, activation="relu", batch_first=True, norm_first=False, dtype=torch.float64)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(config.d_model, config.encoder_attention_heads, config.encoder_ffn_dim, **kwargs),
        config.encoder_layers,
        norm=None,
        enable_nested_tensor=False,
    )
    decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(config.d_model, config.decoder_attention_heads, config.decoder_ffn_dim, **kwargs),
        config.decoder_layers,
        norm=None,
    )
    with torch.no_grad():
        for ours, theirs in zip(model.model.encoder.layers, encoder.layers):
            copy_projections(theirs.self_attn, ours.self_attn)
            theirs.linear1.load_state_dict(ours.ffn.fc1.state_dict())
            theirs.linear2.load_state_dict(ours.ffn.fc2.state_dict())
            theirs.norm1.load_state_dict(ours.self_attn_layer_norm.state_dict())
            theirs.norm2.load_state_dict(ours.ffn_layer_norm.state_dict())
        for ours, theirs in zip(model.model.decoder.layers, decoder.layers):
            copy_projections(theirs.self_attn, ours.self_attn)
            cross = ours.cross_attn
            copy_projections(theirs.multihead_attn, cross)
            theirs.linear1.load_state_dict(ours.ffn.fc1.state_dict())
            theirs.linear2.load_state_dict(ours.ffn.fc2.state_dict())
            theirs.norm1.load_state_dict(ours.self_attn_layer_norm.state_dict())
            theirs.norm2.load_state_dict(ours.cross_attn_layer_norm.state_dict())
            theirs.norm3.load_state_dict(ours.ffn_layer_norm.state_dict())
    return encoder.eval(), decoder.eval()


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_logits_equal_torch_nn_transformer(padded, attn_implementation, source_batch):
    torch.manual_seed(0)
    config = tiny_config(decoder_attention_heads=4)
    model = VaswaniForConditionalGeneration(config).double().eval()
    model.set_attn_implementation(attn_implementation)
    input_ids, attention_mask = source_batch
    if not padded:
        attention_mask = torch.ones_like(attention_mask)
    decoder_input_ids = torch.randint(3, config.vocab_size, (2, 6))

    ours = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits

    encoder, decoder = torch_reference(model)
    embedding = model.model.encoder.embed_tokens.weight
    scale = math.sqrt(config.d_model)

    def embed(ids):
        return embedding[ids] * scale + paper_positional_encoding(ids.shape[1], config.d_model)

    padding = attention_mask == 0
    memory = encoder(embed(input_ids), src_key_padding_mask=padding)
    causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    hidden = decoder(embed(decoder_input_ids), memory, tgt_mask=causal, memory_key_padding_mask=padding)
    theirs = hidden @ embedding.T

    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_sinusoidal_table_matches_paper_formula():
    model = VaswaniModel(tiny_config())
    positions = torch.arange(50)
    table = model.encoder.embed_positions(positions).double()
    torch.testing.assert_close(table, paper_positional_encoding(50, 32), atol=1e-6, rtol=0)


# ----------------------------------------------------------------------------------------------------------------
# Attention weights and masks
# ----------------------------------------------------------------------------------------------------------------


def test_attention_weights_shapes_rows_and_masks(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    decoder_input_ids = torch.tensor([[1, 7, 8, 9], [1, 10, 11, 12]])
    assert tiny_model.config._attn_implementation == "sdpa"
    out = tiny_model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        decoder_input_ids=decoder_input_ids,
        output_attentions=True,
    )
    config = tiny_model.config
    assert len(out.encoder_attentions) == config.encoder_layers
    assert len(out.decoder_attentions) == len(out.cross_attentions) == config.decoder_layers
    for weights in out.encoder_attentions:
        assert weights.shape == (2, config.encoder_attention_heads, 8, 8)
    for self_weights, cross_weights in zip(out.decoder_attentions, out.cross_attentions):
        assert self_weights.shape == (2, config.decoder_attention_heads, 4, 4)
        assert cross_weights.shape == (2, config.decoder_attention_heads, 4, 8)
        upper = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
        assert torch.all(self_weights[..., upper] == 0)
        assert torch.all(cross_weights[1, :, :, 5:] == 0)
    for weights in (*out.encoder_attentions, *out.decoder_attentions, *out.cross_attentions):
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    for weights in out.encoder_attentions:
        assert torch.all(weights[1, :, :, 5:] == 0)


def test_sdpa_and_eager_logits_agree(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    decoder_input_ids = torch.tensor([[1, 7, 8, 9], [1, 10, 11, 12]])
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
    sdpa = tiny_model(**inputs).logits
    tiny_model.set_attn_implementation("eager")
    eager = tiny_model(**inputs).logits
    with_weights = tiny_model(**inputs, output_attentions=True).logits
    torch.testing.assert_close(sdpa, eager, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(eager, with_weights)


def test_attentions_in_generate(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    out = tiny_model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        max_new_tokens=4,
        output_attentions=True,
        return_dict_in_generate=True,
    )
    assert len(out.cross_attentions) == out.sequences.shape[1] - 1
    assert out.cross_attentions[0][0].shape[-1] == input_ids.shape[1]
    assert all(step[0] is not None for step in out.decoder_attentions)


# ----------------------------------------------------------------------------------------------------------------
# Positions: attention alone is permutation-equivariant
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("position_encoding", ["none", "sinusoidal", "learned"])
def test_permuting_source_permutes_encoder_output_only_without_positions(position_encoding):
    torch.manual_seed(0)
    model = VaswaniModel(tiny_config(position_encoding=position_encoding)).eval()
    input_ids = torch.randint(6, 97, (1, 7))
    permutation = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    hidden = model.encoder(input_ids=input_ids).last_hidden_state
    permuted = model.encoder(input_ids=input_ids[:, permutation]).last_hidden_state
    equivariant = torch.allclose(permuted, hidden[:, permutation], atol=1e-5)
    assert equivariant == (position_encoding == "none")


# ----------------------------------------------------------------------------------------------------------------
# Cache and generation
# ----------------------------------------------------------------------------------------------------------------


def test_incremental_decoding_equals_full_pass(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    targets = torch.tensor([[1, 7, 8, 9, 10, 11], [1, 12, 13, 14, 15, 16]])
    full = tiny_model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=targets).logits
    encoder_outputs = tiny_model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
    cache, steps = None, []
    for t in range(targets.shape[1]):
        out = tiny_model(
            encoder_outputs=encoder_outputs,
            attention_mask=attention_mask,
            decoder_input_ids=targets[:, t : t + 1],
            cache=cache,
            use_cache=True,
        )
        cache = out.cache
        steps.append(out.logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.get_seq_length() == targets.shape[1]
    assert cache.cross_attention_cache.get_seq_length() == input_ids.shape[1]


def test_cross_attention_keys_values_computed_once(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    calls = []
    handle = tiny_model.model.decoder.layers[0].cross_attn.k_proj.register_forward_hook(lambda *args: calls.append(1))
    try:
        tiny_model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=6, min_new_tokens=6)
    finally:
        handle.remove()
    assert len(calls) == 1


@pytest.mark.parametrize(
    "generate_kwargs", [dict(num_beams=1), dict(num_beams=3), dict(num_beams=3, length_penalty=0.6)]
)
def test_generate_same_tokens_with_and_without_cache(tiny_model, source_batch, generate_kwargs):
    input_ids, attention_mask = source_batch
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=10, **generate_kwargs)
    cached = tiny_model.generate(**inputs, use_cache=True)
    uncached = tiny_model.generate(**inputs, use_cache=False)
    assert cached[:, 0].tolist() == [tiny_model.config.decoder_start_token_id] * 2
    torch.testing.assert_close(cached, uncached)


def test_eval_model_computes_with_weights_edited_through_data(tiny_model, source_batch):
    """An in-place edit through `.data` (PEFT's merge, hand surgery) moves no version counter; the next call in
    eval mode, without autograd, must still use the edited weights."""
    input_ids, attention_mask = source_batch
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=torch.tensor([[1, 7], [1, 8]]))
    with torch.inference_mode():
        before = tiny_model(**inputs).logits
        tiny_model(**inputs)
    for module in tiny_model.modules():
        if isinstance(module, nn.Linear) and module is not tiny_model.lm_head:
            module.weight.data.mul_(0.5)
    with torch.inference_mode():
        after = tiny_model(**inputs).logits
    reference = VaswaniForConditionalGeneration(tiny_model.config).eval()
    reference.load_state_dict(tiny_model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(after, reference(**inputs).logits)
    assert not torch.allclose(before, after)


def test_generate_from_two_threads_with_different_batch_sizes_matches_one_thread(tiny_model):
    """A model shared by threads (the demo serving requests): each projection's cached layouts follow one
    thread's row count, then the other's; every result must still equal the single-threaded one."""
    from concurrent.futures import ThreadPoolExecutor

    generator = torch.Generator().manual_seed(4)
    batches = [torch.randint(6, 97, (rows, 7), generator=generator) for rows in (3, 5, 3, 5, 2, 4)]

    def translate(input_ids: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return tiny_model.generate(input_ids=input_ids, max_new_tokens=12, min_new_tokens=12, num_beams=2)

    expected = [translate(ids) for ids in batches]
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(3):
            results = list(pool.map(translate, batches))
            for got, want in zip(results, expected, strict=True):
                torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_sampling_is_reproducible_with_seed(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, do_sample=True, top_k=20)
    torch.manual_seed(3)
    first = tiny_model.generate(**inputs)
    torch.manual_seed(3)
    second = tiny_model.generate(**inputs)
    torch.testing.assert_close(first, second)


# ----------------------------------------------------------------------------------------------------------------
# Loss: labels, -100, label smoothing, gradient accumulation
# ----------------------------------------------------------------------------------------------------------------


def test_loss_shifts_labels_and_ignores_minus_100(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    labels = torch.tensor([[7, 8, 9, 2], [10, 11, 2, -100]])
    decoder_input_ids = tiny_model.prepare_decoder_input_ids_from_labels(labels)
    assert decoder_input_ids.tolist() == [[1, 7, 8, 9], [1, 10, 11, 2]]
    out = tiny_model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    log_probs = out.logits.log_softmax(-1)
    keep = labels != -100
    nll = -log_probs[keep].gather(-1, labels[keep].unsqueeze(-1)).squeeze(-1)
    smooth = -log_probs[keep].mean(-1)
    eps = tiny_model.config.label_smoothing
    expected = ((1 - eps) * nll + eps * smooth).mean()
    torch.testing.assert_close(out.loss, expected)


def test_loss_is_exact_under_gradient_accumulation(tiny_model):
    """Two micro-batches with different numbers of target tokens must give the gradient of the whole batch."""
    generator = torch.Generator().manual_seed(5)
    input_ids = torch.randint(6, 97, (4, 6), generator=generator)
    labels = torch.randint(6, 97, (4, 5), generator=generator)
    labels[0, 1:] = -100
    labels[1, 3:] = -100
    tiny_model.train()
    tiny_model.zero_grad()
    tiny_model(input_ids=input_ids, labels=labels).loss.backward()
    whole = tiny_model.lm_head.weight.grad.clone()

    tiny_model.zero_grad()
    total_tokens = (labels != -100).sum()
    for part in (slice(0, 2), slice(2, 4)):
        tiny_model(input_ids=input_ids[part], labels=labels[part], num_items_in_batch=total_tokens).loss.backward()
    torch.testing.assert_close(tiny_model.lm_head.weight.grad, whole, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_gradient_checkpointing_gives_same_gradients(source_batch, dropout):
    """With dropout too: the recomputed forward replays the same masks (same generator state)."""
    input_ids, attention_mask = source_batch
    labels = torch.randint(6, 97, (2, 5))
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = VaswaniForConditionalGeneration(tiny_config(dropout=dropout)).train()
        if checkpointing:
            model.activation_checkpointing_enable()
        model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
        grads.append(model.model.encoder.layers[0].self_attn.q_proj.weight.grad)
    torch.testing.assert_close(grads[0], grads[1])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_forward_and_backward(tiny_model, source_batch, dtype):
    input_ids, attention_mask = source_batch
    labels = torch.randint(6, 97, (2, 5))
    reference = tiny_model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    tiny_model.train()
    with torch.autocast("cpu", dtype=dtype):
        out = tiny_model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert out.logits.dtype == dtype
    assert out.loss.dtype == torch.float32
    out.loss.backward()
    assert torch.isfinite(tiny_model.lm_head.weight.grad).all()
    assert abs(out.loss.item() - reference.item()) < 0.1


# ----------------------------------------------------------------------------------------------------------------
# Options: pre-LN, learned positions, untied embeddings, Marian-style switches
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        dict(layer_norm_position="pre"),
        dict(position_encoding="learned"),
        dict(share_embeddings=False, decoder_vocab_size=50),
        dict(share_embeddings=False, tie_word_embeddings=False),
        dict(activation_function="silu", sinusoidal_layout="concatenated", final_logits_bias=True),
    ],
)
def test_options_build_train_and_generate(overrides, source_batch):
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(**overrides))
    input_ids, attention_mask = source_batch
    labels = torch.randint(6, model.config.decoder_vocab_size, (2, 5))
    model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    out = model.eval().generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=4)
    assert out.shape[0] == 2
    assert (model.model.layer_norm if hasattr(model.model, "layer_norm") else None) is None
    has_final_norm = model.model.encoder.layer_norm is not None
    assert has_final_norm == (model.config.layer_norm_position == "pre")


def test_weight_tying_follows_config():
    shared = VaswaniForConditionalGeneration(tiny_config())
    embeddings = shared.model.encoder.embed_tokens.weight
    assert shared.model.decoder.embed_tokens.weight is embeddings
    assert shared.lm_head.weight is embeddings
    separate = VaswaniForConditionalGeneration(tiny_config(share_embeddings=False, decoder_vocab_size=50))
    assert separate.lm_head.weight is separate.model.decoder.embed_tokens.weight
    assert separate.model.encoder.embed_tokens.weight is not separate.model.decoder.embed_tokens.weight
    untied = VaswaniForConditionalGeneration(tiny_config(tie_word_embeddings=False))
    assert untied.model.decoder.embed_tokens.weight is untied.model.encoder.embed_tokens.weight
    assert untied.lm_head.weight is not untied.model.encoder.embed_tokens.weight


def test_auto_classes_are_registered():
    values = {k: v for k, v in tiny_config().to_diff_dict().items() if k != "model_type"}
    config = AutoConfig.for_model("vaswani", **values)
    assert isinstance(config, VaswaniConfig)
    assert isinstance(AutoModel.from_config(config), VaswaniModel)
    assert isinstance(AutoModelForSeq2SeqLM.from_config(config), VaswaniForConditionalGeneration)


# ----------------------------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------------------------


def test_bad_inputs_give_clear_errors(tiny_model, source_batch):
    input_ids, attention_mask = source_batch
    decoder_input_ids = torch.tensor([[1, 7], [1, 8]])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny_model(input_ids=input_ids + 200, decoder_input_ids=decoder_input_ids)
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(2, 8\)"):
        tiny_model(input_ids=input_ids, attention_mask=attention_mask[:, :5], decoder_input_ids=decoder_input_ids)
    with pytest.raises(ValueError, match="must have shape \\(batch, sequence_length\\)"):
        tiny_model(input_ids=input_ids[0], decoder_input_ids=decoder_input_ids)
    with pytest.raises(ValueError, match="longer than max_position_embeddings=64"):
        tiny_model(input_ids=torch.randint(6, 97, (1, 65)), decoder_input_ids=decoder_input_ids[:1])
    with pytest.raises(ValueError, match="batch"):
        tiny_model(input_ids=input_ids, decoder_input_ids=torch.tensor([[1, 7]] * 3))
    with pytest.raises(ValueError, match="labels have shape"):
        tiny_model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, labels=torch.tensor([[5, 6, 7]] * 2))


def test_generate_refuses_sources_it_cannot_read(tiny_model, source_batch):
    """An all-masked source row translated padding, float ids and empty ids were torch errors: one line each."""
    input_ids, attention_mask = source_batch
    hidden = attention_mask.clone()
    hidden[1] = 0
    with pytest.raises(ValueError, match="attention_mask masks every position of source row 1"):
        tiny_model.generate(input_ids=input_ids, attention_mask=hidden, max_new_tokens=3)
    with pytest.raises(ValueError, match="input ids must be whole token ids .*torch.float32"):
        tiny_model.generate(input_ids=input_ids.float(), attention_mask=attention_mask, max_new_tokens=3)
    with pytest.raises(ValueError, match=r"input ids hold no token \(shape \(batch, 0\)\)"):
        tiny_model.generate(input_ids=input_ids[:, :0], max_new_tokens=3)
    assert tiny_model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3).shape[0] == 2


@pytest.mark.parametrize("num_beams", [1, 3])
def test_decoding_steps_with_a_cache_do_not_check_the_ids(tiny_model, source_batch, monkeypatch, num_beams):
    """Reading the ids' range is a host sync on a GPU: `generate` pays it for the source and the decoder's first
    step, not for the steps fed from the cache, however many there are."""
    calls = []
    aminmax = torch.aminmax

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return aminmax(*args, **kwargs)

    monkeypatch.setattr(torch, "aminmax", counted)
    input_ids, attention_mask = source_batch
    checks = {}
    for new_tokens in (2, 9):
        calls.clear()
        output = tiny_model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            min_new_tokens=new_tokens,
            max_new_tokens=new_tokens,
            num_beams=num_beams,
            do_sample=False,
        )
        assert output.shape[1] == new_tokens + 1
        checks[new_tokens] = len(calls)
    assert checks == {2: 2, 9: 2}  # the encoder's source and the decoder's first step, nothing per step
    with pytest.raises(ValueError, match="outside the vocabulary"):  # ids from the caller are still checked
        tiny_model(input_ids=input_ids, decoder_input_ids=torch.tensor([[1, 300], [1, 7]]))


@pytest.mark.slow
def test_compiled_training_step_matches_eager():
    """`torch.compile(fullgraph=True)` (no graph break allowed) trains the same: loss and gradients, including the
    label-smoothed loss's hand-written backward with an incoming gradient other than 1.

    One encoder and one decoder layer: a deeper model compiles the same operations again, layer after layer, and
    the compile time (most of this test's) grows with the depth."""
    torch.manual_seed(0)
    no_dropout = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    model = VaswaniForConditionalGeneration(tiny_config(encoder_layers=1, decoder_layers=1, **no_dropout))
    model.train()
    input_ids = torch.randint(4, 97, (3, 7))
    labels = torch.randint(4, 97, (3, 6))
    labels[1, 4:] = -100

    def loss_and_gradients(forward, scale):
        model.zero_grad(set_to_none=True)
        loss = forward(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels).loss
        (loss * scale).backward()
        return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}

    eager_loss, eager_gradients = loss_and_gradients(model, 1.0)
    compiled = torch.compile(model, fullgraph=True)
    for scale in (1.0, 2.5):
        loss, gradients = loss_and_gradients(compiled, scale)
        torch.testing.assert_close(loss, eager_loss, atol=1e-6, rtol=1e-6)
        for name, gradient in gradients.items():
            torch.testing.assert_close(gradient, scale * eager_gradients[name], atol=1e-6, rtol=1e-5, msg=name)


# ----------------------------------------------------------------------------------------------------------------
# Without decoder inputs, the error names what the decoder takes: decoder_input_ids, decoder_inputs_embeds or labels
# ----------------------------------------------------------------------------------------------------------------

DECODER_INPUTS_MESSAGE = "Pass exactly one of decoder_input_ids and decoder_inputs_embeds, or labels"


def test_the_missing_decoder_input_error_names_the_decoder_inputs_and_labels():
    model = VaswaniForConditionalGeneration(tiny_config()).eval()
    input_ids = torch.tensor([[4, 10, 11, 2]])
    with pytest.raises(ValueError, match=DECODER_INPUTS_MESSAGE):
        model(input_ids=input_ids)
    with pytest.raises(ValueError, match=DECODER_INPUTS_MESSAGE):  # both at once
        model(input_ids=input_ids, decoder_input_ids=input_ids, decoder_inputs_embeds=torch.zeros(1, 4, 32))
    assert model(input_ids=input_ids, labels=torch.tensor([[10, 2]])).loss is not None


@pytest.mark.slow
@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_the_shipped_remote_code_gives_the_same_error(tmp_path):
    script = """
        import torch
        from transformers import AutoModelForSeq2SeqLM

        model = AutoModelForSeq2SeqLM.from_pretrained(sys.argv[1], trust_remote_code=True)
        try:
            model(input_ids=torch.tensor([[4, 10, 2]]))
        except ValueError as error:
            print(json.dumps(str(error)))
        """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    assert DECODER_INPUTS_MESSAGE in run_without_our_packages(script, str(CHECKPOINT), env=env)
