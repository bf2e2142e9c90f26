"""Which source words made the model write each target word: attribution methods side by side, on the words that
alignments index, so that an attribution is read like the aligner's attention (links, AER, heatmaps).

    >>> from vaswani_inspect.attribution import attribute, METHODS
    >>> explained = attribute(model, tokenizer, "El banco cerró mis cuentas.", direction="es-en",
    ...                       method="integrated_gradients")
    >>> explained.matrix            # (target words, source words), rows sum to 1
    >>> explained.source_share      # per target word: how much comes from the source, not the prefix
    >>> explained.links()           # [(source word, target word), ...], argmax per target word

`attribute` takes a source text (extracted first, `vaswani_inspect.extract`) or an `AttentionRecord` (its
attention is reused and its target explained, teacher-forced). Every method gives an `Attribution` whose `matrix`
has exactly the words and shape of `alignment_matrix(record)`. The methods (`METHODS`), each an entry of the
registry (`registry.Method`, registered by its module in `methods`; docs/extending.md adds one), computed in:

* "attention" (`attention`): the model's aligner, `alignment_matrix(record)` (today's default matrix);
* "attention_norm" (`attention`): Kobayashi et al. 2020, alpha * ||f_h(x_s)||, the value vector through the output
  projection, on the aligner's layers and heads (or every layer, `layers="mean"`);
* "rollout" (`rollout`): Abnar & Zuidema's rollout carried through the decoder's self- and cross-attention
  (the encoder's own rollout feeding the cross-attention); gives a source share;
* "saliency", "input_x_gradient", "integrated_gradients" (`gradients`, through Captum): on the token embeddings
  of the source and the target prefix, explaining each target piece's log-probability; token score the L2 norm
  over the embedding dimensions; give a source share (saliency and input x gradient also on a bfloat16 model);
* "value_zeroing" (`value_zeroing`): Mohebbi et al. 2023 on cross-attention: a source token's value vectors
  zeroed in every decoder layer, the cosine distance of each target position's final decoder state;
* "alti_plus" (`alti`): ALTI+ (Ferrando et al. 2022): each attention block's output (residual and layer norm
  included) written as a sum of one vector per input, each input's contribution measured by the Manhattan
  distance, carried through the encoder, the decoder's self-attention and the cross-attention; gives a source
  share. Rollout's share, by contrast, is the constant 1 - 0.5 ** (decoder layers) of its residual convention.

"Why this word and not that one": ``attribute(..., method=<a gradient method>, contrast=FOIL)`` explains
log p(target piece) - log p(foil piece) where a foil translation of as many pieces differs from the target
(`CONTRAST_METHODS`; `attribute`'s docstring gives the design).

`attribute` checks its arguments before any work (`checks`): a direction the model does not translate, an
`n_steps` or `batch_size` that is not a positive integer, integrated gradients larger than `MAX_STEP_POSITIONS`, a
record whose ids are not its tokens: each a ValueError that says which.

The token-to-word pooling is one function for all (`pool_to_words`, `vaswani_inspect.attribution.pooling`):
special-token columns out, each predicted piece's row normalised, source pieces summed, the rows predicting a
target word's pieces averaged, rows renormalised.

Integrated gradients' default is `DEFAULT_STEPS` = 50 Gauss-Legendre nodes, Captum's and inseq's default: the
path from the zero baseline is far from linear on this model, so fewer nodes leave a large completeness error
(`Attribution.details["completeness_error"]`, per predicted piece).

Attention, and every attribution here, says where a prediction's *inputs* matter to the method's measure, not why
the model chose its words; the measurements (plausibility against an aligner, faithfulness by deletion) say how
far to trust each one; so does the agreement with head ablation (`ablation_view`, `ablation_agreement`): do
the source words a method ranks first match where the cross-attention heads the prediction needs are looking?
"""

from . import api
from .ablation_agreement import AblationAgreement, AblationView, ablation_agreement, ablation_view
from .api import attribute, attribute_methods, check_method, foil_ids, method_options
from .gradients import DEFAULT_STEPS, embedding_attributions
from .pooling import pool_rows, pool_to_words, source_shares
from .registry import Method, register
from .result import Attribution, attribution_links

#: `METHODS` and the lists derived from it (`vaswani_inspect.attribution.api`), read from the registry on each
#: access so that a method registered later is in them.
_LISTS = ("CONTRAST_METHODS", "GRADIENT_METHODS", "METHODS", "MODEL_METHODS", "SHARE_METHODS")


def __getattr__(name: str) -> tuple[str, ...]:
    if name in _LISTS:
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CONTRAST_METHODS",
    "DEFAULT_STEPS",
    "GRADIENT_METHODS",
    "METHODS",
    "MODEL_METHODS",
    "SHARE_METHODS",
    "AblationAgreement",
    "AblationView",
    "Attribution",
    "Method",
    "ablation_agreement",
    "ablation_view",
    "attribute",
    "attribute_methods",
    "attribution_links",
    "check_method",
    "embedding_attributions",
    "foil_ids",
    "method_options",
    "pool_rows",
    "pool_to_words",
    "register",
    "source_shares",
]
