"""What the patching tests compare with: the pair they patch, and the log-probability of a target by the model's own
forward with a hand-written hook in place (written here, independently of vaswani_inspect.patching)."""

from __future__ import annotations

import torch

CLEAN, CORRUPTED, TARGET = "el gato negro", "el perro negro", "the black cat"


def log_prob(model, source_ids, target_ids, hook_module=None, hook=None, pre=False):
    """The summed log-probability of the target's tokens, with an optional hook in place, by the model's forward."""
    handle = None
    if hook_module is not None:
        register = hook_module.register_forward_pre_hook if pre else hook_module.register_forward_hook
        handle = register(hook)
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([source_ids]), decoder_input_ids=torch.tensor([target_ids])).logits
    finally:
        if handle is not None:
            handle.remove()
    log_probs = torch.log_softmax(logits[0, :-1].double(), -1)
    return float(log_probs.gather(-1, torch.tensor(target_ids[1:])[:, None]).sum())


def captured(model, source_ids, target_ids, module, pre=False):
    store = {}

    def hook(module, *args):
        store["value"] = (args[0][0] if pre else args[1]).detach().clone()

    log_prob(model, source_ids, target_ids, module, hook, pre)
    return store["value"]
