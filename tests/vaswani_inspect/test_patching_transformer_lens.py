"""`patch_activations`'s cells recomputed through TransformerLens's hook points, on T5, BART, Marian, mBART and
M2M100 (TransformerLens 4.3 has a bridge adapter for each).

TransformerLens 4 wraps a transformers model in a `TransformerBridge` (its `HookedEncoderDecoder` of 3.x was
removed) whose blocks carry named hook points: the residual stream after each block
(``encoder_blocks.{l}.hook_resid_post``, ``decoder_blocks.{l}.hook_resid_post``) and each attention's heads before
the output projection (``...attn.hook_z``, ``...self_attn.hook_z``, ``...cross_attn.hook_z``, shaped
(batch, positions, heads, head size)). Each cell is recomputed the TransformerLens way: `run_with_cache` on the clean
source, `run_with_hooks` on the corrupted one with the activation replaced at that cell (exhaustive), or with a
backward hook collecting the gradient there (attribution), and the metric read from the bridge's logits. The bridge
runs on its own copy of the weights: booting it replaces the model's modules with TransformerLens's wrappers.

Both models run in float64, the bridge without weight processing (`boot_transformers` keeps the raw weights; no
layer norm is folded). `patch_activations` reads the metric through a float32 log-softmax: a metric of about 50
nats summed over about ten tokens is then exact to about 1e-5 nats, and an effect, a ratio of metric differences,
to 1e-4 nats over clean - corrupted (`_TOLERANCE_NATS`); a cell at the wrong position or head, or an activation
taken before or after the wrong module, is off by the size of the effects themselves, which the test checks are
large (`_spread`).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from vaswani_inspect.patching import SITES, patch_activations

bridges = pytest.importorskip("transformer_lens.model_bridge")

# Slow as a whole (tests/README.md, the fast lane): every cell of every site, twice, on five architectures
pytestmark = pytest.mark.slow

#: The TransformerLens hook point of each site, by layer.
HOOKS = {
    "encoder": "encoder_blocks.{}.hook_resid_post",
    "decoder": "decoder_blocks.{}.hook_resid_post",
    "encoder_heads": "encoder_blocks.{}.attn.hook_z",
    "decoder_heads": "decoder_blocks.{}.self_attn.hook_z",
    "cross_heads": "decoder_blocks.{}.cross_attn.hook_z",
}
CLEAN = "El gato se comió el ratón."
#: Words that may replace "gato"; the first that keeps the number of pieces is used (the tiny tokenizers differ).
SUBSTITUTES = ("perro", "niño", "ratón", "pan")
TARGET = "The cat ate the mouse."
_TOLERANCE_NATS = 1e-4


def _corrupted(tokenizer) -> str:
    length = len(tokenizer(CLEAN).input_ids)
    for word in SUBSTITUTES:
        candidate = CLEAN.replace("gato", word)
        if len(tokenizer(candidate).input_ids) == length:
            return candidate
    raise AssertionError(f"no substitute of {SUBSTITUTES} keeps {CLEAN!r} at {length} pieces")


@pytest.fixture(scope="module", params=["t5", "bart", "marian", "mbart", "m2m100"])
def loaded(request, tiny_architecture_folders):
    """(model, bridge on a copy of it, tokenizer, corrupted sentence), in float64."""
    folder = tiny_architecture_folders[request.param]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Marian's tokenizer warns that sacremoses is missing
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float64)
        tokenizer = AutoTokenizer.from_pretrained(folder)
    model.eval()
    if request.param != "t5":
        # The BART family's initialisation (std 0.02) on d_model 32 gives nearly uniform outputs: the two sources
        # would differ by 1e-4 nats, below what a float32 metric resolves. Larger random weights make it nats.
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() == 2:
                    parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype) * 0.3)
    bridge = bridges.TransformerBridge.boot_transformers(
        str(folder), hf_model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu", dtype=torch.float64
    )
    return model, bridge, tokenizer, _corrupted(tokenizer)


def _metric(logits: torch.Tensor, result) -> torch.Tensor:
    """Per batch row: the sum of log p(target token) at the result's metric steps (the token after each step)."""
    log_probs = torch.log_softmax(logits, dim=-1)
    steps = torch.tensor(result.metric_steps)
    return log_probs[:, steps, torch.tensor(result.target_ids)[steps + 1]].sum(-1)


def _inputs(result, copies: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    clean, corrupted, target = (
        torch.tensor([ids]) for ids in (result.source_ids, result.corrupted_ids, result.target_ids)
    )
    return clean, corrupted.expand(copies, -1), target.expand(copies, -1)


def _spread(effects: np.ndarray) -> float:
    return float(np.nanmax(effects) - np.nanmin(effects))


def _check(site: str, ours: np.ndarray, theirs: np.ndarray, difference: float) -> None:
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=_TOLERANCE_NATS / abs(difference), err_msg=site)


def _patch(clean: torch.Tensor, site: str):
    """A TransformerLens hook that patches row i of the batch at cell i of this layer with the clean activation
    `clean` (positions, d) or (positions, heads, head size)."""

    def hook(activation: torch.Tensor, hook) -> torch.Tensor:
        patched = activation.clone()
        rows = torch.arange(len(activation))
        if site.endswith("_heads"):  # head i at every position
            patched[rows, :, rows] = clean[:, rows].transpose(0, 1)
        else:  # position i
            patched[rows, rows] = clean[rows]
        return patched

    return hook


def test_exhaustive_cells_match_transformer_lens_patching(loaded):
    model, bridge, tokenizer, corrupted = loaded
    result = patch_activations(model, tokenizer, CLEAN, corrupted, direction="es-en", target=TARGET)
    clean, corrupted_ids, target = _inputs(result)
    with torch.no_grad():
        clean_logits, cache = bridge.run_with_cache(clean, decoder_input=target)
        clean_metric = float(_metric(clean_logits, result)[0])
        corrupted_metric = float(_metric(bridge(corrupted_ids, decoder_input=target), result)[0])
    assert result.clean_metric == pytest.approx(clean_metric, abs=_TOLERANCE_NATS)
    assert result.corrupted_metric == pytest.approx(corrupted_metric, abs=_TOLERANCE_NATS)
    difference = clean_metric - corrupted_metric
    for site in SITES:
        layers, width = result.effects[site].shape
        theirs = np.empty((layers, width))
        for layer in range(layers):
            name = HOOKS[site].format(layer)
            _, batch, target_batch = _inputs(result, width)
            with torch.no_grad():
                logits = bridge.run_with_hooks(
                    batch, decoder_input=target_batch, fwd_hooks=[(name, _patch(cache[name][0], site))]
                )
            theirs[layer] = (_metric(logits, result).numpy() - corrupted_metric) / difference
        _check(site, result.effects[site], theirs, difference)
        assert _spread(theirs) > 0.1, site  # cells that differ: a misplaced patch could not agree by chance


def test_attribution_cells_match_transformer_lens_gradients(loaded):
    model, bridge, tokenizer, corrupted = loaded
    result = patch_activations(
        model, tokenizer, CLEAN, corrupted, direction="es-en", target=TARGET, method="attribution"
    )
    clean, corrupted_ids, target = _inputs(result)
    names = [HOOKS[site].format(layer) for site in SITES for layer in range(len(result.effects[site]))]
    with torch.no_grad():
        clean_logits, clean_cache = bridge.run_with_cache(clean, decoder_input=target)
    activations: dict[str, torch.Tensor] = {}
    gradients: dict[str, torch.Tensor] = {}

    def keeper(store: dict, name: str):  # keyed by our name: an alias's hook point has its own name
        def keep(tensor, hook):
            store[name] = tensor.detach()

        return keep

    try:
        logits = bridge.run_with_hooks(
            corrupted_ids,
            decoder_input=target,
            fwd_hooks=[(name, keeper(activations, name)) for name in names],
            bwd_hooks=[(name, keeper(gradients, name)) for name in names],
            reset_hooks_end=False,  # the backward pass below still needs the backward hooks
        )
        corrupted_metric = _metric(logits, result)[0]
        corrupted_metric.backward()
    finally:
        bridge.reset_hooks()  # the bridge is the module's: no hook may outlive the test
    difference = float(_metric(clean_logits, result)[0] - corrupted_metric.detach())
    for site in SITES:
        rows = []
        for layer in range(len(result.effects[site])):
            name = HOOKS[site].format(layer)
            product = ((clean_cache[name] - activations[name]) * gradients[name])[0]
            rows.append(product.sum(-1) if not site.endswith("_heads") else product.sum((0, 2)))
        theirs = torch.stack(rows).numpy() / difference
        _check(site, result.effects[site], theirs, difference)
        assert _spread(theirs) > 0.1, site
