"""Which heads matter for the translation: switch each off and measure (Michel et al. 2019), estimate the same from
one gradient pass, and set both next to what the head's attention looks like (Voita et al. 2019, Clark et al. 2019).

`head_importance(model, tokenizer, pairs, direction)` measures, on sentence pairs:

(a) *ablation*: for each head alone switched off (`vaswani_inspect.ablate_heads`), the drop in corpus BLEU and chrF
    of the translations (greedy by default) and in the reference log-likelihood (teacher-forced, the sum of
    log p(reference token) per sentence, averaged over sentences, no label smoothing);
(b) the *gradient estimate* of Michel et al. (2019): I_h = mean over sentences of |dL/dmask_h|, L the negative
    reference log-likelihood of one sentence, from one forward and backward pass per sentence with every head's
    mask at 1; and its Spearman rank correlation with each measure of (a), over all heads and per kind;
(c) the head's *confidence* (Voita et al. 2019: the mean over query rows of the row's largest weight, rows whose
    query is ``</s>`` left out) and its category (`vaswani_inspect.head_statistics`: positional, special-token,
    broad, other), both from the attention of the teacher-forced references; and the rank correlation of the
    confidence with (a), as for (b);
(d) the *pruning curve*: BLEU as the heads of one kind (and of all kinds together) are switched off one after the
    other in order of estimated importance, least important first (Michel et al. Fig. 1);

and the joint ablation of each head category and of the model's alignment heads (`config.alignment`).

Attention is not explanation: what a head's weights look like (c) need not say what it does for the output (a).
This measures what the output loses without the head, on these sentences, with the other heads left as they are.

Modules: `result` (`HeadImportance` and its parts), `measures` (the reference log-likelihood, the gradient estimate,
the confidence, the alignment heads), `run` (`head_importance`: the whole measurement) and `report`
(`write_importance_report`: the report folder).
"""

from .measures import alignment_heads, head_confidence, reference_log_likelihood
from .report import importance_markdown, plot_importance, plot_pruning_curves, write_importance_report
from .result import MEASURES, PRUNING_CURVES, GroupAblation, HeadImportance, HeadScore, PruningPoint, prunable_heads
from .run import head_importance

__all__ = [
    "MEASURES",
    "PRUNING_CURVES",
    "GroupAblation",
    "HeadImportance",
    "HeadScore",
    "PruningPoint",
    "alignment_heads",
    "head_confidence",
    "head_importance",
    "importance_markdown",
    "plot_importance",
    "plot_pruning_curves",
    "prunable_heads",
    "reference_log_likelihood",
    "write_importance_report",
]
