"""Compare our Transformer's attention heads with a pretrained BERT's (Clark et al. 2019, "What Does BERT Look At?").

"BERT" is any encoder of `BERT_FAMILIES`: BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA or DeBERTa-v2 (by
`config.model_type`; `check_bert` refuses anything else, saying what it is). Their tokenizers (WordPiece "##",
byte-level BPE "Ġ", sentencepiece "▁") need nothing special: pieces are located through character offsets.

Question: does a small translation Transformer learn the same kinds of heads as BERT? Both models read the same
English sentences: our ENCODER in the en->es direction (source `>>es<< sentence </s>`), BERT as is
(`[CLS] sentence [SEP]`, or `<s> sentence </s>` for RoBERTa and XLM-RoBERTa). With `decoder=True` our DECODER
self-attention is compared too: the decoder reads the English sentence with teacher forcing (es->en,
`<s> sentence </s>`, the source being the Spanish side of the file or our model's own en->es translation) and BERT
reads it with a causal mask (each token sees only itself and the tokens before it, as in the decoder).

Words (identical for both models):
    1. the sentence is NFC-normalised and split into words once, with character offsets (`split_words`): runs of
       non-space characters, with punctuation and symbols (Unicode categories P* and S*) at the START or END of a
       run split off as one-character words. Inner punctuation stays: "don't", "3.5", "1,000", "e-mail" are words;
       "cat." is "cat" + "."; "café" and "niño" are one word each.
    2. every model's subword pieces are mapped to those words through the tokenizers' character offsets
       (`return_offsets_mapping`); a piece that straddles two words (e.g. a Metaspace piece "o." for "gato.")
       merges them, for both models, so that every piece lies in exactly one word (`shared_words`). A word that
       some tokenizer gives no piece for (a character it drops) joins the previous word. Pieces that cover only
       white space (a lone Metaspace "▁") belong to the next word.
    3. attention is merged with `vaswani_inspect.words.merge_attention`: attention TO a word is the SUM over its
       pieces, attention FROM a word the MEAN over its pieces' rows; rows stay distributions.

Special tokens: each model's structural tokens become two "slots" around the words, `start` ([CLS] / `>>es<<` /
`<s>`) and `end` ([SEP] / `</s>`), merged like words. The per-head statistics (`vaswani_inspect.heads`) keep them
(the `special` statistic is the attention to the two slots, as Clark et al. count [CLS] and [SEP]). For the
head-to-head distance (`specials="drop"`, the default) the slots are removed from both axes and every word row is
renormalised over the words: two heads are compared on where they look *among the words*, and the "no-op"
attention to special tokens is left to the `special` statistic. A row that gave all its weight to the slots
becomes uniform over the words it may see. `specials="keep"` compares the full rows instead, matching
start<->start and end<->end.

Distance: the Jensen-Shannon divergence (base 2, in [0, 1]) between two heads' word-level rows, averaged over every
informative word row of every sentence (a row that may see only one word is skipped: all heads agree on it).
`HeadComparison.distance` is our heads x BERT heads, `distance_all` all heads x all heads (ours first), from which
each of our heads' nearest BERT head and a 2-D multidimensional-scaling map (Clark et al. Fig. 6) are computed.

Too-long sentences (more tokens than either model's `max_position_embeddings`, special tokens included) are NOT
truncated: truncation would give the two models different words. They are rejected: skipped with a warning and
listed in the report (`on_long="skip"`, default), or the run stops with an error (`on_long="error"`).

From Python, `compare_bert` runs the whole comparison and returns a `CompareResult` (one `HeadComparison` per
attention kind); `write_compare_report` writes it to a folder::

    from vaswani_inspect.compare import compare_bert, load_bert, load_ours, read_sentences, write_compare_report

    model, tokenizer = load_ours()                      # our checkpoint (default: the shipped one)
    bert, bert_tokenizer = load_bert("bert-base-uncased")
    result = compare_bert(read_sentences("sentences.txt"), model, tokenizer, bert, bert_tokenizer, decoder=True)
    write_compare_report(result, "report/")

`comparison.compare_records` compares any two lists of word-level records (`records.word_level_record`,
`records.self_attention_record`).

Modules: `words` (the shared words), `sentences` (the input file), `models` (loading both models, BERT's
attention), `records` (word-level `AttentionRecord`s), `distances` (Jensen-Shannon distances, MDS),
`comparison` (`HeadComparison`, `compare_records`), `prepare` and `passes` (the steps of `compare_bert`, in
`api`), `result` (`CompareResult`), `plots` and `report` (the report folder). This package exports what a comparison
from Python needs (the example above, `check_bert`, `BERT_FAMILIES`, `DEFAULT_BERT` and the result types); the rest
is in those modules. What `load_ours` (`--model`) accepts is decided in one place, `models.our_model_problem`.

Command line (registered in `hf-vaswani` by `vaswani_inspect.commands`)::

    hf-vaswani compare-bert --bert bert-base-uncased --sentences FILE --out report/ [--model PATH] [--decoder]

Attention weights show where a head reads from, not why the model decides what it decides: similar attention
patterns are a description, not an explanation.
"""

from .api import compare_bert
from .comparison import HeadComparison
from .models import BERT_FAMILIES, DEFAULT_BERT, check_bert, load_bert, load_ours
from .report import write_compare_report
from .result import CompareResult
from .sentences import read_sentences

__all__ = [
    "BERT_FAMILIES",
    "DEFAULT_BERT",
    "CompareResult",
    "HeadComparison",
    "check_bert",
    "compare_bert",
    "load_bert",
    "load_ours",
    "read_sentences",
    "write_compare_report",
]
