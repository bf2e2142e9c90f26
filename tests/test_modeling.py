"""Correctness of the model on random weights: equivalence with PyTorch's own Transformer layers, masks,
cache, positions, losses and bad input."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from hf_vaswani import VaswaniConfig, VaswaniForConditionalGeneration, VaswaniModel, modeling_vaswani
from hf_vaswani.modeling_vaswani import label_smoothed_cross_entropy

from .conftest import tiny_config

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
    with pytest.raises(ValueError, match=message):
        tiny_config(**overrides)


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
            theirs.self_attn.in_proj_weight.copy_(ours.self_attn.qkv_proj.weight)
            theirs.self_attn.in_proj_bias.copy_(ours.self_attn.qkv_proj.bias)
            theirs.self_attn.out_proj.load_state_dict(ours.self_attn.out_proj.state_dict())
            theirs.linear1.load_state_dict(ours.ffn.fc1.state_dict())
            theirs.linear2.load_state_dict(ours.ffn.fc2.state_dict())
            theirs.norm1.load_state_dict(ours.self_attn_layer_norm.state_dict())
            theirs.norm2.load_state_dict(ours.ffn_layer_norm.state_dict())
        for ours, theirs in zip(model.model.decoder.layers, decoder.layers):
            theirs.self_attn.in_proj_weight.copy_(ours.self_attn.qkv_proj.weight)
            theirs.self_attn.in_proj_bias.copy_(ours.self_attn.qkv_proj.bias)
            theirs.self_attn.out_proj.load_state_dict(ours.self_attn.out_proj.state_dict())
            cross = ours.cross_attn
            theirs.multihead_attn.in_proj_weight.copy_(torch.cat([cross.q_proj.weight, cross.kv_proj.weight]))
            theirs.multihead_attn.in_proj_bias.copy_(torch.cat([cross.q_proj.bias, cross.kv_proj.bias]))
            theirs.multihead_attn.out_proj.load_state_dict(cross.out_proj.state_dict())
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


@pytest.mark.parametrize(
    ("dtype", "training", "expected"),
    [
        (torch.float32, True, "sdpa"),  # float32 CPU training: sdpa is the faster path
        (torch.bfloat16, True, "eager"),  # its bf16 backward is slow on the CPU: two matmuls and a softmax instead
        (torch.bfloat16, False, "sdpa"),  # inference keeps sdpa
    ],
)
def test_cpu_attention_path_for_sdpa_models(dtype, training, expected):
    model = VaswaniForConditionalGeneration(tiny_config()).train(training)
    assert model.config._attn_implementation == "sdpa"
    attention = model.model.encoder.layers[0].self_attn
    chosen = attention._attention_function({}, torch.zeros(1, 2, 3, 16, dtype=dtype))
    assert (chosen is modeling_vaswani.eager_attention_forward) == (expected == "eager")


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
    handle = tiny_model.model.decoder.layers[0].cross_attn.kv_proj.register_forward_hook(lambda *args: calls.append(1))
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


def test_beam_search_skips_only_a_no_op_cross_attention_reorder(tiny_model, source_batch, monkeypatch):
    """`_reorder_cache` leaves the encoder-decoder K/V alone; reordering it too changes nothing."""
    input_ids, attention_mask = source_batch
    inputs = dict(
        input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, num_beams=3, num_return_sequences=3
    )
    reorders = []

    def full_reorder(cache, beam_idx):
        reorders.append(beam_idx.clone())
        cache.reorder_cache(beam_idx)
        return cache

    ours = tiny_model.generate(**inputs, output_scores=True, return_dict_in_generate=True)
    monkeypatch.setattr(tiny_model, "_reorder_cache", full_reorder)
    full = tiny_model.generate(**inputs, output_scores=True, return_dict_in_generate=True)
    # The beams did move between sentences' own slots, so the test covers real reorders.
    assert any(not torch.equal(idx, torch.arange(len(idx))) for idx in reorders)
    assert all(torch.equal(idx // 3, torch.arange(len(idx)) // 3) for idx in reorders)
    torch.testing.assert_close(ours.sequences, full.sequences)
    torch.testing.assert_close(ours.sequences_scores, full.sequences_scores)


def test_linear_inference_path_is_nn_linear_with_a_fresh_transposed_copy():
    from hf_vaswani.modeling_vaswani import VaswaniLinear

    torch.manual_seed(0)
    layer = VaswaniLinear(16, 24).eval()
    x = torch.randn(3, 5, 16)
    expected = nn.functional.linear(x, layer.weight, layer.bias)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), expected, rtol=0, atol=1e-6)
        copy = layer.__dict__["_inference_weights"]["column_major"]
        assert copy.shape == (24, 16) and copy.stride() == (1, 24) and torch.equal(copy, layer.weight)
        layer.weight.mul_(2)  # an in-place update (optimizer step, load_state_dict) refreshes the copy
        torch.testing.assert_close(layer(x), nn.functional.linear(x, layer.weight, layer.bias), rtol=0, atol=1e-6)
    with torch.inference_mode():
        torch.testing.assert_close(layer(x), nn.functional.linear(x, layer.weight, layer.bias), rtol=0, atol=1e-6)
    assert set(layer.state_dict()) == {"weight", "bias"}
    copy = layer.__dict__["_inference_weights"]["column_major"]
    layer.eval()  # an evaluation loop calls eval() again and again: the copy stays
    assert layer.__dict__["_inference_weights"]["column_major"] is copy
    layer.train()
    assert "_inference_weights" not in layer.__dict__
    single_row = torch.randn(1, 1, 16)  # a matrix-vector product keeps the row-major weight, no copy
    with torch.inference_mode():
        torch.testing.assert_close(layer.eval()(single_row), nn.functional.linear(single_row, layer.weight, layer.bias))
    assert "_inference_weights" not in layer.__dict__
    layer.train()
    layer(x).sum().backward()  # training: plain F.linear, gradients reach the weight
    assert layer.weight.grad is not None and layer.weight.grad.shape == (24, 16)


@pytest.mark.skipif(not modeling_vaswani._MKL_PACKED_LINEAR, reason="this torch build has no MKL packed GEMM")
def test_linear_packs_the_weight_for_a_repeated_row_count_and_stays_exact():
    from hf_vaswani.modeling_vaswani import VaswaniLinear

    torch.manual_seed(0)
    layer = VaswaniLinear(32, 48).eval()
    step = torch.randn(4, 1, 32)  # a decoding step: 4 rows, again and again
    encoder_rows = torch.randn(2, 7, 32)
    with torch.inference_mode():
        state = lambda: layer.__dict__["_inference_weights"]  # noqa: E731
        layer(step)
        assert state()["packed"] is None  # one call: W^T copy only
        torch.testing.assert_close(layer(step), nn.functional.linear(step, layer.weight, layer.bias))
        assert state()["packed"][0] == 4  # the second call with 4 rows packs the weight for 4 rows
        torch.testing.assert_close(layer(step), nn.functional.linear(step, layer.weight, layer.bias))
        # Another row count uses the W^T copy again, and the packed weight stays for the next step.
        torch.testing.assert_close(layer(encoder_rows), nn.functional.linear(encoder_rows, layer.weight, layer.bias))
        assert state()["packed"][0] == 4
        torch.testing.assert_close(layer(step), nn.functional.linear(step, layer.weight, layer.bias))
    with torch.no_grad():
        layer.weight.add_(1.0)  # a changed weight is packed anew, never served stale
        for _ in range(3):
            torch.testing.assert_close(layer(step), nn.functional.linear(step, layer.weight, layer.bias))
        half = VaswaniLinear(32, 48).to(torch.bfloat16).eval()  # other dtypes: the W^T copy, never packed
        for _ in range(3):
            half(step.to(torch.bfloat16))
        assert half.__dict__["_inference_weights"]["packed"] is None


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


def test_dropout_keeps_the_expected_fraction_scales_it_and_replays_with_the_seed():
    from hf_vaswani.modeling_vaswani import vaswani_dropout

    x = torch.ones(400, 500)
    torch.manual_seed(1)
    y = vaswani_dropout(x, 0.1, training=True)
    kept = y != 0
    p_effective = round(0.1 * 32768) / 32768
    assert abs(kept.float().mean().item() - (1 - p_effective)) < 0.003  # 200k draws: ~4 sigma
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p_effective)))
    assert abs(y.mean().item() - 1.0) < 0.004  # inverted dropout: the expectation is kept
    torch.manual_seed(1)
    assert torch.equal(vaswani_dropout(x, 0.1, training=True), y)  # same generator, same mask
    assert not torch.equal(vaswani_dropout(x, 0.1, training=True), y)
    # Neighbouring elements (two halves of one 32-bit draw) are independent: P(both dropped) ~ p^2.
    both_dropped = (~kept[:, 0::2] & ~kept[:, 1::2]).float().mean().item()
    assert abs(both_dropped - p_effective**2) < 0.003
    assert vaswani_dropout(x, 0.1, training=False) is x and vaswani_dropout(x, 0.0, training=True) is x
    odd = torch.ones(3, 5, 7, dtype=torch.bfloat16)  # odd element count, other dtype
    out = vaswani_dropout(odd, 0.5, training=True)
    assert out.dtype == torch.bfloat16 and set(out.unique().tolist()) <= {0.0, 2.0}
    assert torch.equal(vaswani_dropout(x, 1.0, training=True), torch.zeros_like(x))  # F.dropout's edge case


def test_dropout_gradient_is_the_mask_times_the_scale():
    from hf_vaswani.modeling_vaswani import vaswani_dropout

    x = torch.randn(64, 33, requires_grad=True)
    torch.manual_seed(5)
    y = vaswani_dropout(x, 0.3, training=True)
    y.sum().backward()
    scale = 32768 / (32768 - round(0.3 * 32768))
    kept = y != 0  # (x has no exact zeros)
    torch.testing.assert_close(x.grad, kept.float() * scale)
    torch.testing.assert_close(y, x.detach() * kept * scale)
    assert 0.6 < kept.float().mean().item() < 0.8


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


def test_label_smoothing_zero_is_plain_cross_entropy():
    logits = torch.randn(2, 3, 11)
    labels = torch.tensor([[1, 2, -100], [4, 5, 6]])
    expected = nn.functional.cross_entropy(logits.view(-1, 11), labels.view(-1), ignore_index=-100)
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, labels, 0.0), expected)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothed_loss_and_gradient_equal_torch_cross_entropy(smoothing):
    """The hand-written backward gives the gradient autograd computes through F.cross_entropy (float32 math)."""
    generator = torch.Generator().manual_seed(2)
    logits = torch.randn(3, 4, 13, generator=generator, dtype=torch.float64) * 3
    labels = torch.randint(0, 13, (3, 4), generator=generator)
    labels[0, 2:] = -100
    ours_logits = logits.clone().requires_grad_(True)
    ours = label_smoothed_cross_entropy(ours_logits, labels, smoothing, num_items_in_batch=7)
    (ours * 1.7).backward()
    theirs_logits = logits.clone().requires_grad_(True)
    theirs = nn.functional.cross_entropy(
        theirs_logits.view(-1, 13), labels.view(-1), ignore_index=-100, label_smoothing=smoothing, reduction="sum"
    )
    (theirs / 7 * 1.7).backward()
    torch.testing.assert_close(ours.double(), theirs / 7, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(ours_logits.grad, theirs_logits.grad, atol=1e-7, rtol=1e-5)
    assert ours.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_label_smoothed_loss_in_several_chunks_equals_torch_cross_entropy(dtype):
    """A vocabulary of 2^15 makes the CPU loss work in chunks of 16 rows: 40 rows are two whole chunks and a part."""
    generator = torch.Generator().manual_seed(3)
    logits = (torch.randn(40, 1 << 15, generator=generator) * 4).to(dtype)
    labels = torch.randint(0, 1 << 15, (40,), generator=generator)
    labels[[3, 17, 39]] = -100
    ours_logits = logits.clone().requires_grad_(True)
    ours = label_smoothed_cross_entropy(ours_logits, labels, 0.1)
    ours.backward()  # the incoming gradient is 1: the gradient the forward wrote is handed out as it is
    theirs_logits = logits.float().requires_grad_(True)
    theirs = nn.functional.cross_entropy(theirs_logits, labels, ignore_index=-100, label_smoothing=0.1)
    theirs.backward()
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert ours_logits.grad.dtype == dtype
    tolerance = {"atol": 1e-6, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-6, "rtol": 1e-2}
    torch.testing.assert_close(ours_logits.grad.float(), theirs_logits.grad, **tolerance)
    assert ours_logits.grad[[3, 17, 39]].abs().max() == 0


def test_label_smoothed_loss_backward_twice_through_one_graph():
    """The first backward hands out the gradient the forward wrote; the second (retain_graph) recomputes it."""
    logits = torch.randn(6, 50, requires_grad=True)
    labels = torch.tensor([1, 2, -100, 4, 5, 49])
    loss = label_smoothed_cross_entropy(logits, labels, 0.1)
    loss.backward(retain_graph=True)
    first = logits.grad.clone()
    logits.grad.mul_(-1.0)  # whatever happens to the first gradient must not leak into the second
    (loss * 3.0).backward()
    torch.testing.assert_close(logits.grad, 2.0 * first, atol=1e-7, rtol=1e-6)


def test_label_smoothed_loss_writes_no_gradient_without_grad_mode(monkeypatch):
    calls = []
    original = modeling_vaswani._label_smoothed_chunks

    def recording(*args):
        calls.append(args[-1])
        return original(*args)

    monkeypatch.setattr(modeling_vaswani, "_label_smoothed_chunks", recording)
    logits = torch.randn(4, 11, requires_grad=True)
    labels = torch.tensor([1, 2, -100, 4])
    with torch.no_grad():
        without = label_smoothed_cross_entropy(logits, labels, 0.1)
    with_grad = label_smoothed_cross_entropy(logits, labels, 0.1)
    assert calls == [False, True]
    torch.testing.assert_close(without, with_grad.detach())


def test_label_smoothed_loss_with_every_label_ignored_has_a_zero_gradient():
    logits = torch.randn(2, 3, 11, requires_grad=True)
    loss = label_smoothed_cross_entropy(logits, torch.full((2, 3), -100), 0.1)
    loss.backward()
    assert torch.isnan(loss)  # as F.cross_entropy's mean over no token
    assert torch.equal(logits.grad, torch.zeros_like(logits))


def test_cached_positional_rows_equal_the_formula_and_serve_training():
    model = VaswaniModel(tiny_config())
    encoding = model.encoder.embed_positions
    with torch.inference_mode():  # the first call builds the table inside inference mode ...
        first = encoding.rows(3, 5, torch.device("cpu"), 64).clone()
    torch.testing.assert_close(first, encoding(torch.arange(3, 8)), atol=0, rtol=0)
    torch.testing.assert_close(encoding.rows(60, 4, torch.device("cpu"), 64), encoding(torch.arange(60, 64)))
    embeds = torch.randn(1, 5, 32, requires_grad=True)  # ... and training can still use it
    (embeds + encoding.rows(0, 5, torch.device("cpu"), 64)).sum().backward()
    assert embeds.grad is not None


def test_prepare_inputs_for_generation_equals_the_generic_one(tiny_model, source_batch):
    from transformers.generation import GenerationMixin

    input_ids, attention_mask = source_batch
    seen = []

    def both(self, ids, **kwargs):
        ours = VaswaniForConditionalGeneration.prepare_inputs_for_generation(self, ids, **kwargs)
        generic = GenerationMixin.prepare_inputs_for_generation(self, ids, **kwargs)
        assert ours.keys() == generic.keys()
        for key, value in ours.items():
            if torch.is_tensor(value):
                assert torch.equal(value, generic[key]) and value.stride() == generic[key].stride(), key
            else:
                assert value is generic[key] or value == generic[key], key
        seen.append(1)
        return ours

    tiny_model.prepare_inputs_for_generation = both.__get__(tiny_model)
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3)
    tiny_model.generate(**inputs, num_beams=2)
    tiny_model.generate(**inputs, output_attentions=True, output_hidden_states=True, return_dict_in_generate=True)
    tiny_model.generate(**inputs, use_cache=False)
    tiny_model.generate(**inputs, decoder_input_ids=torch.tensor([[1, 7], [1, 8]]))
    assert len(seen) == 12


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
        grads.append(model.model.encoder.layers[0].self_attn.qkv_proj.weight.grad)
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


def test_compiled_training_step_matches_eager():
    """`torch.compile(fullgraph=True)` (no graph break allowed) trains the same: loss and gradients, including the
    label-smoothed loss's hand-written backward with an incoming gradient other than 1."""
    torch.manual_seed(0)
    model = VaswaniForConditionalGeneration(tiny_config(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0))
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
