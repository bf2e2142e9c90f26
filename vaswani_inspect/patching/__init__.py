"""Activation patching: where in the network (which layer, source position or head) the information lives that makes
the model write its translation.

Two sources that differ in a word (the *clean* "Me senté en el banco de la plaza." and the *corrupted* "Me senté en
el sofá de la plaza.") are run with the same teacher-forced decoder inputs: the clean translation (or a given
target). A *metric* reads the output: by default the summed log-probability of the target's tokens; with a
`Contrast`, log p(answer) - log p(foil) at the step where the two differ ("bank" against "bench"). Patching a site
runs the corrupted source with the activation at that site replaced by the clean run's; its *effect* is

    (patched - corrupted) / (clean - corrupted)

so 0 means the site carries none of the difference and 1 that it restores the clean output on its own. When the
two sources give the same metric (clean - corrupted is 0) every effect is NaN.

Sites (`SITES`), each an array of effects:

* ``"encoder"``: each encoder layer's output at each source position, (encoder layers, source tokens);
* ``"decoder"``: each decoder layer's output at each decoder input position, (decoder layers, target tokens);
* ``"encoder_heads"``, ``"decoder_heads"``, ``"cross_heads"``: one head's output (its slice of the output
  projection's input, at every position), (layers, heads).

Methods (`METHODS`): ``"exhaustive"`` runs one patched pass per cell (batched: the patched runs are a batch of
copies of the corrupted input); ``"attribution"`` is the first-order approximation (attribution patching): for
each cell, (clean - corrupted activation) . d metric / d activation at the corrupted run, summed over the cell's
dimensions and divided by (clean - corrupted); one forward and backward pass on the corrupted source and one
forward pass on the clean one, whatever the number of cells.

Layers and attention modules are found by `vaswani_inspect.architectures`, so this works on every architecture it
knows (ours, Marian, M2M100/NLLB, mBART, BART, T5); positions are those of `AttentionRecord` (the sources with their
direction tokens, the decoder inputs starting with the decoder start token), as `vaswani_inspect.extract` makes
them.

Modules: `result` (`PatchingResult`, `Contrast`, the sites and methods), `inputs` (the ids and the metric), `sites`
(the hooks), `api` (the runs); the figures are in `vaswani_inspect.patching_plots`.
"""

from .api import patch_activations
from .result import METHODS, SITES, Contrast, PatchingResult

__all__ = ["METHODS", "SITES", "Contrast", "PatchingResult", "patch_activations"]
