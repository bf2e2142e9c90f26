"""vaswani_inspect: look inside the attention of the project's Transformer (hf_vaswani).

Extract every attention matrix of a translation (`extract`), find its words (`text_words`: punctuation marks are
words of their own) and merge pieces into words (`to_words`), draw them (`head_view_html`/`model_view_html` for
offline bertviz pages, `plot_heatmap`/`plot_layer_grid`/`plot_alignment`/`plot_alignment_links` with matplotlib),
read word alignments off the cross-attention (`align`, by default as the model's `config.alignment` says), score
them (`alignment_error_rate`) and search the layer, heads and shift that align best (`search_alignments`),
describe each head (`head_statistics`, `attention_rollout`), write it all to a folder (`write_report`), and compare
the heads with a pretrained BERT's (`compare_bert`, more in `vaswani_inspect.compare`). Attention weights are not an
explanation; to see what a head does for the output, switch it off (`ablate_heads`, `gradient_masks`) and measure
every head's importance on sentence pairs (`head_importance`, `write_importance_report`). Without a model,
`load_model_and_tokenizer` loads the shipped checkpoint (`hf_vaswani.paths.default_model_path()`).

Command line: the ``inspect``, ``align-eval``, ``compare-bert`` and ``head-importance`` subcommands of ``hf-vaswani``
(`vaswani_inspect.commands`), also run as ``python -m vaswani_inspect``::

    hf-vaswani inspect "el gato negro" --direction es-en --out report/

The optional libraries (matplotlib, bertviz, mpld3, scikit-learn...) come with ``pip install 'hf-vaswani[inspect]'``;
matplotlib, bertviz, mpld3 and scikit-learn are imported when a figure, a page or a map is made.
"""

from .dependencies import is_extra_module, missing_extra_error

try:
    from .ablation import Head, ablate_heads, gradient_masks, list_heads
    from .alignment import (
        DEFAULT_ALIGNMENT,
        AlignmentCandidate,
        AlignmentScores,
        AlignmentSearch,
        GoldAlignment,
        LayerSearch,
        align,
        alignment_error_rate,
        alignment_matrix,
        alignment_settings,
        best_layer,
        read_gold,
        search_alignments,
        source_words,
        target_words,
        to_pharaoh,
        write_alignment_config,
    )
    from .compare import compare_bert
    from .extract import AttentionUnavailableError, extract, load_model_and_tokenizer, record_from_ids
    from .heads import HeadStats, attention_rollout, head_statistics, head_statistics_table
    from .importance import HeadImportance, HeadScore, head_importance
    from .importance_report import write_importance_report
    from .plots import plot_alignment, plot_alignment_links, plot_heatmap, plot_layer_grid, save_figure
    from .record import KINDS, AttentionRecord
    from .report import write_report
    from .views import head_view_html, model_view_html, save_html
    from .words import TextWords, merge_attention, text_words, to_words, word_spans, words
except ModuleNotFoundError as error:
    if not is_extra_module(error):
        raise
    raise missing_extra_error(error, "vaswani_inspect") from error

__all__ = [
    "DEFAULT_ALIGNMENT",
    "KINDS",
    "AlignmentCandidate",
    "AlignmentScores",
    "AlignmentSearch",
    "AttentionRecord",
    "AttentionUnavailableError",
    "GoldAlignment",
    "Head",
    "HeadImportance",
    "HeadScore",
    "HeadStats",
    "LayerSearch",
    "TextWords",
    "ablate_heads",
    "align",
    "alignment_error_rate",
    "alignment_matrix",
    "alignment_settings",
    "attention_rollout",
    "best_layer",
    "compare_bert",
    "extract",
    "gradient_masks",
    "head_importance",
    "head_statistics",
    "head_statistics_table",
    "head_view_html",
    "list_heads",
    "load_model_and_tokenizer",
    "merge_attention",
    "model_view_html",
    "plot_alignment",
    "plot_alignment_links",
    "plot_heatmap",
    "plot_layer_grid",
    "read_gold",
    "record_from_ids",
    "save_figure",
    "save_html",
    "search_alignments",
    "source_words",
    "target_words",
    "text_words",
    "to_pharaoh",
    "to_words",
    "word_spans",
    "words",
    "write_alignment_config",
    "write_importance_report",
    "write_report",
]
