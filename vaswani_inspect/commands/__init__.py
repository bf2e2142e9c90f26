"""The ``hf-vaswani`` subcommands of vaswani_inspect (registered through the ``hf_vaswani.commands`` entry point):

    hf-vaswani inspect "el gato negro" --direction es-en --out report/ [--model PATH] [--num-beams N]
    hf-vaswani align-eval --gold gold.txt --source-file es.txt --target-file en.txt [--model PATH] [--write-config DIR]
    hf-vaswani compare-bert --bert bert-base-uncased --sentences FILE --out report/ [--model PATH] [--decoder]
    hf-vaswani head-importance --pairs test.tsv --direction es-en --out report/ [--max-pairs N] [--model PATH]
    hf-vaswani explain "el gato negro" --method attention --method integrated_gradients --out report/ [--pairs TSV]
    hf-vaswani patch "el gato negro" "el perro negro" --direction es-en --out report/ [--site S] [--method M]

``inspect`` writes the attention report of a translation (its alignment read as the model's ``config.alignment``
says, unless told otherwise), ``align-eval`` searches the decoder layer, heads and shift whose cross-attention best
matches gold word alignments and can store the best in a model's config.json, ``compare-bert`` compares our heads
with a pretrained BERT's, ``head-importance`` switches each attention head off and measures what the translation
loses (`vaswani_inspect.head_importance`), ``explain`` attributes each target word to the source words by one or
more methods side by side (`vaswani_inspect.attribution`), ``align-eval --method M`` scores any of them as an
aligner, and ``patch`` measures which layers, source positions and heads carry what makes a clean source's
translation, patching them into a corrupted source (`vaswani_inspect.patching`).
``--model`` takes a model folder or a Hub id, as ``hf-vaswani translate --model`` does; without it, the shipped
checkpoint (`hf_vaswani.paths.default_model_path()`). ``python -m vaswani_inspect`` runs the same command line.

As every ``hf-vaswani`` command, they check what they can before any work: the arguments (direction, device, beam
size and length, layers and heads, against the model's limits as soon as it is loaded), the input files (UTF-8,
gold links against the sentences) and every output (`hf_vaswani.outputs.OutputPlan`: writable, not an input, a
non-empty report folder only with ``--overwrite``, which replaces it whole). Reports are written into a temporary
sibling and renamed into place at the end. Bad input is one line ``hf-vaswani COMMAND: error: ...`` and exit code
2, as is a model that returns no attention weights (`AttentionUnavailableError`).

One module per subcommand (`inspect`, `align_eval`, `compare_bert`, `head_importance`, `explain`, `patch`), each with
its own ``add_parser``, and `common` for what they share; `add_parser` here adds all six (the entry point's module).
"""

from __future__ import annotations

from typing import Any

from . import align_eval, compare_bert, explain, head_importance, inspect, patch
from .align_eval import run_align_eval
from .compare_bert import run_compare_bert
from .explain import run_explain
from .head_importance import run_head_importance
from .inspect import run_inspect
from .patch import run_patch

__all__ = [
    "add_parser",
    "run_align_eval",
    "run_compare_bert",
    "run_explain",
    "run_head_importance",
    "run_inspect",
    "run_patch",
]


def add_parser(subparsers: Any) -> None:
    """Add the ``inspect``, ``align-eval``, ``compare-bert``, ``head-importance``, ``explain`` and ``patch``
    subcommands to an argparse `subparsers` object."""
    for command in (inspect, align_eval, compare_bert, head_importance, explain, patch):
        command.add_parser(subparsers)
