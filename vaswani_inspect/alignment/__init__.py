"""Word alignments read off the cross-attention, their evaluation against gold alignments, and the search for the
layer, heads and shift that align best. One module per job:

* `links`: the words alignments index (`source_words`, `target_words`), the word-level matrix of a reading
  (`alignment_matrix`) and its links (`align`), in Pharaoh format (`to_pharaoh`);
* `gold`: gold alignment files (`read_gold`, `GoldAlignment`) and their check against the sentences (`check_gold`);
* `aer`: the alignment error rate with precision and recall (`alignment_error_rate`, `AlignmentScores`);
* `search`: the configuration that aligns best on gold or silver links (`search_alignments`, `best_layer`);
* `config`: what a configuration is and how a call's choices meet the model's (`alignment_settings`,
  `DEFAULT_ALIGNMENT`), and the model's own, `config.alignment`, checked where it is read (`model_alignment`) and
  written (`write_alignment_config`).

Every name is importable from here: ``from vaswani_inspect.alignment import read_gold, search_alignments``.

Attention is not an explanation: the weights show where a head read from, not why the model chose its words, and
most heads do not align. A head trained to follow a statistical aligner (guided alignment) is an aligner: what it
shows is that aligner's links, learned.
"""

from .aer import AlignmentScores, alignment_error_rate
from .config import (
    DEFAULT_ALIGNMENT,
    alignment_settings,
    check_model_alignment,
    describe_alignment,
    model_alignment,
    read_model_config,
    write_alignment_config,
)
from .gold import GoldAlignment, check_gold, read_gold, read_lines
from .links import DEFAULT_THRESHOLD, align, alignment_matrix, source_words, target_words, to_pharaoh
from .search import AlignmentCandidate, AlignmentSearch, LayerSearch, best_layer, search_alignments

__all__ = [
    "DEFAULT_ALIGNMENT",
    "DEFAULT_THRESHOLD",
    "AlignmentCandidate",
    "AlignmentScores",
    "AlignmentSearch",
    "GoldAlignment",
    "LayerSearch",
    "align",
    "alignment_error_rate",
    "alignment_matrix",
    "alignment_settings",
    "best_layer",
    "check_gold",
    "check_model_alignment",
    "describe_alignment",
    "model_alignment",
    "read_gold",
    "read_lines",
    "read_model_config",
    "search_alignments",
    "source_words",
    "target_words",
    "to_pharaoh",
    "write_alignment_config",
]
