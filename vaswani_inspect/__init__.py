"""vaswani_inspect: look inside the attention of the project's Transformer (hf_vaswani).

Extract every attention matrix of a translation (`extract`, an `AttentionRecord`; without a model,
`load_model_and_tokenizer` loads the shipped checkpoint), merge pieces into words (`to_words`), draw them
(`head_view_html`/`model_view_html` and `save_html` for offline bertviz pages, `plot_heatmap`/`plot_layer_grid`/
`plot_alignment`/`plot_alignment_links` with matplotlib), read word alignments off the cross-attention (`align`,
`alignment_matrix`, by default as the model's `config.alignment` says: `alignment_settings`, over the words
`source_words`/`target_words`) and search the layer, heads and shift that align best (`search_alignments`),
describe each head (`head_statistics`) and write it all to a folder (`write_report`). Attention weights are not an
explanation; to see what a head does for the output, switch it off (`ablate_heads`) and measure every head's
importance on sentence pairs (`head_importance`). Which source words made the model write each target word, by
attention, norms, gradients or value zeroing side by side: `attribute` (an `Attribution`; see
`vaswani_inspect.attribution`). The decoder step by step, greedy or beam search, with each step's candidates,
attention rows and the beam search tree: `trace_decoding` (a `DecodingTrace`), drawn by `plot_step` and
`plot_beam_tree`. Inside one head, the lecture's softmax(q·K/√d_k) V step by step on the model's own numbers for
one query position: `head_computation` (a `HeadComputation`), drawn by `plot_head_computation`. Positions: the
model's positional encoding read from its own module (`positional_encoding`, a `PositionalEncoding`: sinusoidal,
learned or T5's relative bias) and attention's blindness to order without it (`order_blindness`, an
`OrderBlindness`), drawn by `plot_positional_encoding` and `plot_order_blindness`; one word in two sentences
(`compare_contexts`, a `ContextComparison`), drawn by `plot_contexts`.

Those are the names this package exports; the rest is in its modules, one concept each: `record`, `extract`,
`words`, `alignment` (links, gold files, AER, search, configuration), `heads`, `views`, `plots`, `report`,
`ablation`, `importance` (and its report), `steps` (the decoding trace), `step_plots` (its figures),
`head_computation` (one head's arithmetic), `head_plots` (its figure), `positions`, `contexts` and `position_plots`
(their figures), `compare` (our heads against a pretrained BERT's), `training_curves`, `commands` (the command line)
and `testing` (tiny stand-ins for tests).

Command line: the ``inspect``, ``align-eval``, ``compare-bert`` and ``head-importance`` subcommands of ``hf-vaswani``
(`vaswani_inspect.commands`), also run as ``python -m vaswani_inspect``::

    hf-vaswani inspect "el gato negro" --direction es-en --out report/

The optional libraries (matplotlib, bertviz, mpld3, scikit-learn...) come with ``pip install 'hf-vaswani[inspect]'``;
matplotlib, bertviz, mpld3 and scikit-learn are imported when a figure, a page or a map is made.
"""

from .dependencies import is_extra_module, missing_extra_error

try:
    from .ablation import ablate_heads
    from .alignment import align, alignment_matrix, alignment_settings, search_alignments, source_words, target_words
    from .attribution import Attribution, attribute
    from .contexts import ContextComparison, compare_contexts
    from .extract import extract, load_model_and_tokenizer
    from .head_computation import HeadComputation, head_computation
    from .head_plots import plot_head_computation
    from .heads import head_statistics
    from .importance import head_importance
    from .plots import plot_alignment, plot_alignment_links, plot_heatmap, plot_layer_grid
    from .position_plots import plot_contexts, plot_order_blindness, plot_positional_encoding
    from .positions import OrderBlindness, PositionalEncoding, order_blindness, positional_encoding
    from .record import AttentionRecord
    from .report import write_report
    from .step_plots import plot_beam_tree, plot_step
    from .steps import DecodingStep, DecodingTrace, trace_decoding
    from .views import head_view_html, model_view_html, save_html
    from .words import to_words
except ModuleNotFoundError as error:
    if not is_extra_module(error):
        raise
    raise missing_extra_error(error, "vaswani_inspect") from error

__all__ = [
    "AttentionRecord",
    "Attribution",
    "ContextComparison",
    "DecodingStep",
    "DecodingTrace",
    "HeadComputation",
    "OrderBlindness",
    "PositionalEncoding",
    "ablate_heads",
    "align",
    "alignment_matrix",
    "alignment_settings",
    "attribute",
    "compare_contexts",
    "extract",
    "head_computation",
    "head_importance",
    "head_statistics",
    "head_view_html",
    "load_model_and_tokenizer",
    "model_view_html",
    "order_blindness",
    "plot_alignment",
    "plot_alignment_links",
    "plot_beam_tree",
    "plot_contexts",
    "plot_head_computation",
    "plot_heatmap",
    "plot_layer_grid",
    "plot_order_blindness",
    "plot_positional_encoding",
    "plot_step",
    "positional_encoding",
    "save_html",
    "search_alignments",
    "source_words",
    "target_words",
    "to_words",
    "trace_decoding",
    "write_report",
]
