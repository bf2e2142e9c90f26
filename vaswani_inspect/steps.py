"""The decoder step by step: a decoding trace of greedy or beam search (`trace_decoding` -> `DecodingTrace`).

`model.generate()` returns the translation and, at most, the scores of the tokens it kept; it does not show the
candidates each hypothesis weighed, the hypotheses beam search dropped, or where each new position looked. The
trace runs the same search one step at a time and records, at step t (the step that writes target token t + 1):

* per live hypothesis, its `top_k` candidates (piece label, token id, probability), the cross-attention row of its
  new position over the source pieces (every layer and head) and its decoder self-attention row over the target
  prefix (the future is masked: the row only covers what the position can see);
* the token the final translation took at that step (`DecodingStep.chosen`) and the model's aligner reading of it
  (`cross_attention["aligner"]`, over source pieces, and `["aligner_words"]`, over source words): the reading of
  ``config.alignment`` (`vaswani_inspect.alignment.config`) for our models, and for a model without a trained aligner
  the penultimate decoder layer, every head averaged, not shifted (where the demo starts reading);
* the search tree (`DecodingTrace.beams`, `BeamNode`): every hypothesis the search expanded, with its parent, token,
  the token's log-probability, the cumulative log-probability, the length-penalised score, whether it was kept,
  pruned or finished, and the winner (`DecodingTrace.winner`). Greedy search is a single path.

The search is the one ``generate()`` runs with the same settings (the model's ``generation_config`` filled in as
``generate()`` fills it, then the arguments): transformers' own logits processors (no_repeat_ngram_size,
forced_bos_token_id...) and stopping criteria are used, and the beam bookkeeping follows its ``_beam_search``
step for step (the top 2 x num_beams continuations, the length penalty on finished hypotheses, early stopping), so
the trace gives the tokens and ``sequences_scores`` ``generate()`` gives (the tests check it to 1e-5).

Probabilities of candidates are the softmax of the scores the search compared (after the processors: a banned
token has probability 0 and the others are renormalised); log-probabilities in the tree are the ones it summed.

Long because the record (its data classes and JSON round trip) and the two search loops that fill it are one
concept: the loops write exactly the fields the classes document, and the beam loop must stay next to the
bookkeeping it mirrors from transformers, step for step.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

__all__ = [
    "BeamNode",
    "Candidate",
    "DecodingStep",
    "DecodingTrace",
    "generation_defaults",
    "trace_decoding",
]

#: Below this, a beam score is one of the search's "-1e9" placeholders (an empty beam slot), not a hypothesis.
_PLACEHOLDER = -1.0e8
#: Decimal places kept for attention weights in a trace (scores and probabilities are kept whole).
_WEIGHT_DECIMALS = 6


class Candidate(NamedTuple):
    """One of the top-k next tokens of a hypothesis: its piece label, token id and probability."""

    piece: str
    token_id: int
    probability: float


@dataclass
class BeamNode:
    """One hypothesis of the search tree (for greedy search, one node per step on a single path).

    Attributes:
        id: its index in `DecodingTrace.beams`; the root (id 0) is the decoder start token.
        parent: the id of the hypothesis it extends (None for the root).
        step: the step that wrote its last token (the root: -1).
        token_id, piece: its last token and the token's label.
        log_probability: the log-probability the search gave that token (after the logits processors).
        cumulative_log_probability: the sum over its tokens (what beam search ranks live hypotheses by).
        score: `cumulative_log_probability` / (generated length ** length_penalty): the score it has when it
            finishes (or would have, had it finished here); greedy search uses length_penalty 1 for it.
        status: "kept" (it went on to the next step), "pruned" (dropped: not among the best, or the search stopped
            before it ended), "finished" (it ended, with `</s>` or at the length limit, among the best finished
            hypotheses); the root is "kept".
        ended: it ends with `</s>` or reached the length limit (a finished one may still have been pruned).
    """

    id: int
    parent: int | None
    step: int
    token_id: int
    piece: str
    log_probability: float
    cumulative_log_probability: float
    score: float
    status: str = "kept"
    ended: bool = False


@dataclass
class DecodingStep:
    """One step of the search: what each live hypothesis weighed and saw, and which token the output took.

    Attributes:
        index: the step (0: the first token after the decoder start); it writes target position index + 1.
        hypotheses: the ids (`BeamNode.id`) of the live hypotheses going into the step, in beam order.
        prefixes: the piece labels of each live hypothesis (decoder start included): what its self-attention row
            covers.
        candidates: per live hypothesis, its `top_k` next tokens (`Candidate`s), most probable first.
        chosen: the token the final translation took at this step (None after the winner ended).
        chosen_hypothesis: the index (in `hypotheses`) of the winner's prefix at this step (None after it ended).
        cross_attention: ``{"layers": per hypothesis [layer][head][source piece], "aligner": [source piece] or None,
            "aligner_words": [source word] or None}``: the new position's row over the source, every layer and
            head; the aligner reading (module docstring) of the chosen token, over source pieces and words.
        self_attention: ``{"layers": per hypothesis [layer][head][prefix piece]}``: the new position's row over the
            target prefix (the positions after it are masked, so they are not in the row).
    """

    index: int
    hypotheses: list[int] = field(default_factory=list)
    prefixes: list[list[str]] = field(default_factory=list)
    candidates: list[list[Candidate]] = field(default_factory=list)
    chosen: Candidate | None = None
    chosen_hypothesis: int | None = None
    cross_attention: dict[str, Any] = field(default_factory=dict)
    self_attention: dict[str, Any] = field(default_factory=dict)


@dataclass
class DecodingTrace:
    """A whole decoding, step by step (module docstring). JSON-serialisable with `to_dict`, rebuilt by `from_dict`.

    Attributes:
        source: the sentence as given; `direction` the direction asked for (or None).
        source_pieces: the labels of the source pieces the model read (language token or task prefix included).
        source_words: the source words (special tokens left out; `vaswani_inspect.alignment.source_words`).
        target_pieces: the labels of the final output, decoder start token first.
        target_ids: their token ids.
        text: the translation (special tokens left out).
        steps: one `DecodingStep` per step of the search.
        beams: the search tree (`BeamNode`s by id; greedy: one path).
        winner: the id of the final hypothesis (the translation); `finished`: the ids of the finished hypotheses
            beam search kept, best first (greedy: the winner). A beam search where no hypothesis finished (every
            token suppressed, a very negative length penalty) ends as ``generate()`` ends it: the winner is the
            hypothesis in its first slot, unfinished, or the root (the decoder start token alone).
        sequence_score: the winner's score (beam search: ``generate()``'s ``sequences_scores``; greedy: its
            cumulative log-probability / length).
        settings: the decoding settings used (num_beams, length_penalty, no_repeat_ngram_size, early_stopping,
            max_length...), ``"generate"``: the keyword arguments ``generate()`` reproduces it with, and the
            aligner reading.
    """

    source: str
    direction: str | None
    source_pieces: list[str]
    source_words: list[str]
    target_pieces: list[str]
    target_ids: list[int]
    text: str
    steps: list[DecodingStep]
    beams: list[BeamNode]
    winner: int
    finished: list[int]
    sequence_score: float
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """A dict of JSON types only (``json.dumps(trace.to_dict())`` works); `from_dict` rebuilds the trace."""
        data = asdict(self)
        for step in data["steps"]:  # (asdict keeps NamedTuples as tuples: JSON writes them as lists anyway)
            step["candidates"] = [[list(c) for c in per] for per in step["candidates"]]
            step["chosen"] = None if step["chosen"] is None else list(step["chosen"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecodingTrace:
        """The trace `to_dict` wrote (also after a JSON round trip).

        Raises:
            ValueError: `data` is not a trace's dict (a field missing).
        """
        try:
            steps = [
                DecodingStep(
                    **{
                        **step,
                        "candidates": [[Candidate(*c) for c in per] for per in step["candidates"]],
                        "chosen": None if step["chosen"] is None else Candidate(*step["chosen"]),
                    }
                )
                for step in data["steps"]
            ]
            beams = [BeamNode(**node) for node in data["beams"]]
            fields = {key: value for key, value in data.items() if key not in ("steps", "beams")}
            return cls(steps=steps, beams=beams, **fields)
        except (KeyError, TypeError) as error:
            raise ValueError(f"Not a decoding trace's dict: {error}.") from None

    def path(self, node_id: int | None = None) -> list[BeamNode]:
        """The nodes from the root to `node_id` (default: the winner)."""
        node = self.beams[self.winner if node_id is None else node_id]
        nodes = [node]
        while node.parent is not None:
            node = self.beams[node.parent]
            nodes.append(node)
        return nodes[::-1]

    @property
    def num_beams(self) -> int:
        """The beam size of the search (1: greedy)."""
        return int(self.settings.get("num_beams", 1))


# ---------------------------------------------------------------------------------------------------- settings


def generation_defaults(model: Any) -> dict[str, Any]:
    """The decoding settings a model's ``generation_config`` asks for that the toolkit's commands pass on
    (``num_beams``, and ``max_new_tokens`` from its ``max_new_tokens`` or ``max_length``, within the model's
    position limit): what the demo starts with, so that ``inspect`` translates as the demo does. The other settings
    (length_penalty, no_repeat_ngram_size...) ``generate()`` reads from the config itself."""
    from .architectures import position_limit

    generation = getattr(model, "generation_config", None)
    settings: dict[str, Any] = {"num_beams": int(getattr(generation, "num_beams", None) or 1)}
    new_tokens = getattr(generation, "max_new_tokens", None)
    if not new_tokens and getattr(generation, "max_length", None):
        new_tokens = int(generation.max_length) - 1  # the decoder start token counts in max_length
    if new_tokens:
        limit = position_limit(model.config)
        settings["max_new_tokens"] = int(new_tokens) if limit is None else max(1, min(int(new_tokens), limit - 1))
    return settings


@dataclass
class _Search:
    """What the loop needs, prepared as ``generate()`` prepares it."""

    config: Any  # the filled-in GenerationConfig
    processors: Any  # transformers LogitsProcessorList
    stopping: Any  # transformers StoppingCriteriaList
    start_id: int
    num_beams: int
    length_penalty: float
    early_stopping: bool | str
    max_length: int
    eos_ids: list[int]
    generate_kwargs: dict[str, Any]


def _prepare_search(model: Any, input_ids: torch.Tensor, kwargs: dict[str, Any]) -> _Search:
    """The generation config, logits processors and stopping criteria ``generate(input_ids, **kwargs)`` would use.

    transformers' own (private) preparation steps are called, in ``generate()``'s order, rather than re-derived: a
    setting the model's generation_config holds (no_repeat_ngram_size, forced_bos_token_id...) then acts exactly
    as it does in ``generate()``; the tests compare both on every architecture, so a change upstream shows.
    """
    from transformers import LogitsProcessorList, StoppingCriteriaList

    has_default_max_length = kwargs.get("max_length") is None and model.generation_config.max_length is None
    has_default_min_length = kwargs.get("min_length") is None and model.generation_config.min_length is None
    from transformers.generation.configuration_utils import GenerationMode

    config, _ = model._prepare_generation_config(None, **kwargs)
    mode = config.get_generation_mode()
    if mode not in (GenerationMode.GREEDY_SEARCH, GenerationMode.BEAM_SEARCH):
        raise ValueError(
            f"trace_decoding() follows greedy and beam search only; these settings ask for "
            f"{mode.name.replace('_', ' ').lower()} (do_sample, assistant_model...)."
        )
    device = input_ids.device
    model._prepare_special_tokens(config, False, device=device, batch_size=1)
    start = config._decoder_start_token_tensor
    start_id = int(start.reshape(-1)[0])
    config = model._prepare_generated_length(
        generation_config=config,
        has_default_max_length=has_default_max_length,
        has_default_min_length=has_default_min_length,
        model_input_name="input_ids",
        input_ids_length=1,
        inputs_tensor=input_ids,
    )
    processors = model._get_logits_processor(
        generation_config=config,
        input_ids_seq_length=1,
        encoder_input_ids=input_ids,
        logits_processor=LogitsProcessorList(),
        device=device,
        model_kwargs={},
    )
    stopping = model._get_stopping_criteria(generation_config=config, stopping_criteria=StoppingCriteriaList())
    eos = config._eos_token_tensor
    eos_ids = [] if eos is None else [int(i) for i in eos.reshape(-1).tolist()]
    return _Search(
        config=config,
        processors=processors,
        stopping=stopping,
        start_id=start_id,
        num_beams=int(config.num_beams or 1),
        length_penalty=float(config.length_penalty),
        early_stopping=config.early_stopping,
        max_length=int(config.max_length),
        eos_ids=eos_ids,
        generate_kwargs=kwargs,
    )


def _generate_kwargs(
    model: Any,
    source_ids: list[int],
    direction: Any,
    num_beams: int | None,
    length_penalty: float | None,
    max_new_tokens: int | None,
    generate_settings: dict[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of the equivalent ``generate()`` call: the direction's (forced_bos_token_id), the
    model's defaults for the length (`generation_defaults`, else extract's rule), then what the caller gave."""
    from hf_vaswani.generation_options import GENERATE_ARGUMENTS

    from .architectures import position_limit
    from .extract import _generate_settings

    given = dict(generate_settings)
    for name, value in (("num_beams", num_beams), ("length_penalty", length_penalty)):
        if value is not None:
            given[name] = value
    if max_new_tokens is not None:
        given["max_new_tokens"] = max_new_tokens
    elif "max_length" not in given:
        generation = getattr(model, "generation_config", None)
        if getattr(generation, "max_new_tokens", None) is None and getattr(generation, "max_length", None):
            # (the config's own max_length: passing max_new_tokens beside it makes generate() warn)
            given["max_length"] = int(generation.max_length)
        elif (default := generation_defaults(model).get("max_new_tokens")) is not None:
            given["max_new_tokens"] = default
    for reserved in ("output_scores", "return_dict_in_generate", "output_attentions", "num_return_sequences"):
        given.pop(reserved, None)  # the trace records these itself
    passed_on = sorted(GENERATE_ARGUMENTS.intersection(given))
    if passed_on:
        raise ValueError(
            f"trace_decoding() takes generation options only, not {passed_on[0]!r}: it runs the search itself."
        )
    # (the options are checked as extract() checks them: hf_vaswani.generation_options)
    return _generate_settings(model, given, [source_ids], position_limit(model.config), direction)


# ---------------------------------------------------------------------------------------------------- the model


class _Forward(NamedTuple):
    logits: torch.Tensor  # (hypotheses, vocabulary), float32
    cross: np.ndarray  # (hypotheses, layers, heads, source pieces): the new position's rows
    decoder: np.ndarray  # (hypotheses, layers, heads, prefix length)


def _encode(model: Any, input_ids: torch.Tensor) -> Any:
    return model.get_encoder()(input_ids=input_ids, return_dict=True)


#: Set only inside `_last_position_logits`, in the context (thread) of the trace that set it.
_CUTTING_LOGITS: contextvars.ContextVar[bool] = contextvars.ContextVar("cutting_logits", default=False)


@contextlib.contextmanager
def _last_position_logits(model: Any) -> Iterator[None]:
    """Inside: the model's output layer reads the last decoder position only. The loop feeds whole prefixes
    (below), and projecting every earlier position onto the vocabulary would be most of its work; none of the
    architectures' forward takes ``logits_to_keep``, so the output layer's input is cut by a hook.

    The model may be shared (the demo serves one model to every session, and copies it for gradient methods): the
    hook cuts only this module, only in the context that entered here, so another thread's forward, or a copy of
    the model made meanwhile (which carries a copy of the hook), computes every position as usual."""
    head = model.get_output_embeddings()

    def cut(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if module is not head or not _CUTTING_LOGITS.get():
            return None
        return (args[0][:, -1:, :], *args[1:])

    handle = head.register_forward_pre_hook(cut)
    token = _CUTTING_LOGITS.set(True)
    try:
        yield
    finally:
        _CUTTING_LOGITS.reset(token)
        handle.remove()


def _decode_step(model: Any, encoded: Any, prefixes: torch.Tensor) -> _Forward:
    """One decoder pass over whole prefixes (no cache: each row of attention is read fresh, the same rows a
    teacher-forced pass gives, and the few extra positions cost little at a sentence's length)."""
    from transformers.modeling_outputs import BaseModelOutput

    count = prefixes.shape[0]
    states = encoded.last_hidden_state.expand(count, -1, -1)
    outputs = model(
        encoder_outputs=BaseModelOutput(last_hidden_state=states),
        decoder_input_ids=prefixes,
        output_attentions=True,
        use_cache=False,
        return_dict=True,
    )
    logits = outputs.logits[:, -1, :].to(dtype=torch.float32, copy=True)
    cross = torch.stack([layer[:, :, -1, :] for layer in outputs.cross_attentions], dim=1)
    decoder = torch.stack([layer[:, :, -1, :] for layer in outputs.decoder_attentions], dim=1)
    return _Forward(logits, cross.float().cpu().numpy(), decoder.float().cpu().numpy())


# ---------------------------------------------------------------------------------------------------- the tree


class _Tree:
    """The nodes of the search and the steps, built while the loop runs."""

    def __init__(self, labels: Any, start_id: int, top_k: int) -> None:
        self.labels = labels  # token id -> piece label
        self.top_k = top_k
        self.nodes = [BeamNode(0, None, -1, start_id, labels(start_id), 0.0, 0.0, 0.0)]
        self.steps: list[DecodingStep] = []

    def add(
        self, parent: int, step: int, token_id: int, log_probability: float, cumulative: float, score: float
    ) -> int:
        node = BeamNode(
            len(self.nodes), parent, step, token_id, self.labels(token_id), log_probability, cumulative, score, "pruned"
        )
        self.nodes.append(node)
        return node.id

    def prefix(self, node_id: int) -> list[str]:
        pieces = []
        node: BeamNode | None = self.nodes[node_id]
        while node is not None:
            pieces.append(node.piece)
            node = None if node.parent is None else self.nodes[node.parent]
        return pieces[::-1]

    def record_step(
        self, index: int, live: list[int], rows: list[int], scores: torch.Tensor, forward: _Forward
    ) -> None:
        """A `DecodingStep` for the live hypotheses `live`, whose processed scores are rows `rows` of `scores`."""
        probabilities = torch.softmax(scores[rows], dim=-1)
        best = torch.topk(probabilities, k=min(self.top_k, probabilities.shape[-1]), dim=-1)
        candidates = [
            [
                Candidate(self.labels(int(token)), int(token), float(p))
                for p, token in zip(values.tolist(), indices.tolist())
            ]
            for values, indices in zip(best.values, best.indices)
        ]
        self.steps.append(
            DecodingStep(
                index=index,
                hypotheses=list(live),
                prefixes=[self.prefix(node) for node in live],
                candidates=candidates,
                cross_attention={"layers": _rounded(forward.cross[rows])},
                self_attention={"layers": _rounded(forward.decoder[rows])},
            )
        )


def _rounded(array: np.ndarray) -> list:
    return np.round(array.astype(np.float64), _WEIGHT_DECIMALS).tolist()


# ---------------------------------------------------------------------------------------------------- the loops


def _greedy(
    model: Any, encoded: Any, search: _Search, tree: _Tree, device: torch.device
) -> tuple[int, list[int], float]:
    """Greedy search as transformers' ``_sample`` runs it without sampling: the processors act on the raw logits,
    the best processed score wins, the stopping criteria end it. Returns (winner id, finished ids, its score)."""
    sequence = torch.tensor([[search.start_id]], dtype=torch.long, device=device)
    node, cumulative, step = 0, 0.0, 0
    while True:
        forward = _decode_step(model, encoded, sequence)
        scores = search.processors(sequence, forward.logits)
        tree.record_step(step, [node], [0], scores, forward)
        token = int(torch.argmax(scores[0]))
        # Its log-probability is that of the processed scores (what compute_transition_scores(normalize_logits=True)
        # gives for a greedy output).
        log_probability = float(torch.log_softmax(scores[0], dim=-1)[token])
        cumulative += log_probability
        node = tree.add(node, step, token, log_probability, cumulative, cumulative / (step + 1))
        tree.nodes[tree.nodes[node].parent].status = "kept"
        sequence = torch.cat([sequence, torch.tensor([[token]], device=device)], dim=-1)
        step += 1
        if bool(search.stopping(sequence, None).all()):
            break
    tree.nodes[node].status, tree.nodes[node].ended = "finished", True
    return node, [node], tree.nodes[node].score


def _beam(model: Any, encoded: Any, search: _Search, tree: _Tree, device: torch.device) -> tuple[int, list[int], float]:
    """Beam search as transformers' ``_beam_search`` runs it (one sentence), written out step by step because
    ``generate()`` does not expose the tree: the same tensor operations in the same order, so that ties and the
    "-1e9" placeholders of empty slots fall the same way. Returns (winner id, finished ids best first, the
    winner's score as ``sequences_scores`` gives it)."""
    beams = search.num_beams
    keep = max(2, 1 + len(search.eos_ids)) * beams  # candidates kept per step: enough to refill after EOS
    top_beams = torch.arange(keep, device=device) < beams  # only these may finish
    running = torch.full((beams, 1), search.start_id, dtype=torch.long, device=device)
    running_scores = torch.zeros(beams, device=device)
    running_scores[1:] = -1.0e9  # only the first slot is a hypothesis at the start (the others are copies)
    running_nodes: list[int | None] = [0] + [None] * (beams - 1)
    finished_scores = torch.full((beams,), -1.0e9, device=device)
    finished_flags = torch.zeros(beams, dtype=torch.bool, device=device)
    finished_nodes: list[int | None] = [None] * beams
    improvable = True
    cur_len, prompt_len, step = 1, 1, 0
    while True:
        forward = _decode_step(model, encoded, running)
        log_probs = search.processors(running, torch.log_softmax(forward.logits, dim=-1))
        live_rows = [row for row, node in enumerate(running_nodes) if node is not None]
        tree.record_step(step, [running_nodes[row] for row in live_rows], live_rows, log_probs, forward)
        vocabulary = log_probs.shape[-1]
        accumulated = (log_probs + running_scores[:, None]).reshape(-1)
        top_scores, top_indices = torch.topk(accumulated, k=keep)
        parents = top_indices // vocabulary
        tokens = top_indices % vocabulary
        candidates = torch.cat([running[parents], tokens[:, None]], dim=-1)
        ends = search.stopping(candidates, None).to(device)
        # The next live beams: the best candidates that did not end.
        next_rows = torch.topk(top_scores + ends.to(torch.float32) * -1.0e9, k=beams)[1]
        # Finished hypotheses: among the first `beams` candidates, length-penalised, merged with the earlier ones.
        just_finished = ends & top_beams
        penalised = top_scores / ((cur_len + 1 - prompt_len) ** search.length_penalty)
        closing = penalised.clone()
        full = bool(finished_flags.all()) and search.early_stopping is True
        closing += float(full) * -1.0e9
        closing += float(not improvable) * -1.0e9
        closing += (~just_finished).to(torch.float32) * -1.0e9
        merged_scores = torch.cat([finished_scores, closing])
        merged_flags = torch.cat([finished_flags, just_finished])
        chosen = torch.topk(merged_scores, k=beams)[1]
        # The tree: one node per candidate that extends a hypothesis (not a placeholder copy).
        candidate_nodes: list[int | None] = []
        for i in range(keep):
            parent = running_nodes[int(parents[i])]
            score = float(top_scores[i])
            if parent is None or not math.isfinite(score) or score < _PLACEHOLDER:
                candidate_nodes.append(None)
                continue
            token = int(tokens[i])
            node = tree.add(parent, step, token, float(log_probs[int(parents[i]), token]), score, float(penalised[i]))
            tree.nodes[node].ended = bool(ends[i])
            candidate_nodes.append(node)
        merged_nodes = finished_nodes + candidate_nodes
        finished_nodes = [merged_nodes[int(i)] for i in chosen]
        finished_scores, finished_flags = merged_scores[chosen], merged_flags[chosen]
        running = candidates[next_rows]
        running_scores = top_scores + ends.to(torch.float32) * -1.0e9
        running_scores = running_scores[next_rows]
        running_nodes = [candidate_nodes[int(i)] for i in next_rows]
        for node in running_nodes:
            if node is not None:
                tree.nodes[node].status = "kept"
        cur_len += 1
        step += 1
        improvable = improvable and _can_improve(
            running_scores, finished_scores, finished_flags, cur_len, prompt_len, search
        )
        open_beam = not (bool(finished_flags.all()) and search.early_stopping is True)
        if not (improvable and open_beam and not bool(ends.all())):
            break
    kept = [node for node, flag in zip(finished_nodes, finished_flags.tolist()) if flag and node is not None]
    for node in kept:
        tree.nodes[node].status = "finished"
    # generate() returns the first of its best `beams` slots whether or not it finished: with no finished
    # hypothesis (every token suppressed, or a length penalty that pushes them under the -1e9 placeholders) that is
    # a live candidate, or an empty slot, which holds the decoder start token alone (the root).
    first = finished_nodes[0]
    return (0 if first is None else first), kept, float(finished_scores[0])


def _can_improve(
    running_scores: torch.Tensor,
    finished_scores: torch.Tensor,
    finished_flags: torch.Tensor,
    cur_len: int,
    prompt_len: int,
    search: _Search,
) -> bool:
    """transformers' early-stop heuristic: can the best live hypothesis still beat the worst finished one?"""
    if search.early_stopping == "never" and search.length_penalty > 0.0:
        length = search.max_length - prompt_len
    else:
        length = cur_len - prompt_len
    best_possible = running_scores[:1] / (length**search.length_penalty)
    worst = torch.where(finished_flags, torch.min(finished_scores), torch.tensor(-1.0e9, device=finished_scores.device))
    return bool(torch.any(best_possible > worst))


# ---------------------------------------------------------------------------------------------------- the aligner


def _aligner_reading(model: Any) -> dict[str, Any]:
    """The model's aligner reading (``config.alignment``), or for a model without one the penultimate decoder layer,
    every head, not shifted (the reading the demo starts at for such models)."""
    from .alignment.config import model_alignment
    from .architectures import UnsupportedModelError, head_counts

    reading = model_alignment(model.config)
    if reading is not None:
        return reading
    try:
        layers = head_counts(model)["cross"][0]
    except UnsupportedModelError:
        layers = int(getattr(model.config, "decoder_layers", 1) or 1)
    return {"layer": max(0, int(layers) - 2), "heads": "all", "shift": False}


def _reading_row(cross: np.ndarray, reading: dict[str, Any], row: int) -> np.ndarray | None:
    """The (source pieces,) row one reading gives for decoder row `row` of `cross` (layers, heads, T, S)."""
    if row >= cross.shape[2]:
        return None
    layers = cross if reading["layer"] == "mean" else cross[[int(reading["layer"])]]
    heads = slice(None) if reading["heads"] == "all" else [int(h) for h in reading["heads"]]
    return layers[:, heads, row, :].mean(axis=(0, 1))


def _fill_aligner(trace_steps: list[DecodingStep], record: Any, reading: dict[str, Any]) -> None:
    """Each step's aligner row for the token the output took there: every reading of the configuration at its
    row (the row that predicted the token, or with ``shift`` the row where it is the input), averaged, special
    tokens' columns left out and renormalised; and the same summed over each source word's pieces."""
    from .words import DEFAULT_SPECIAL_TOKENS, is_special, text_words

    specials = record.special_tokens or DEFAULT_SPECIAL_TOKENS
    keep = np.array([not is_special(token, specials) for token in record.source_tokens], dtype=np.float64)
    source = text_words(record.source_tokens, specials)
    cross = record.cross.astype(np.float64)
    readings = [reading, *reading.get("average_with", [])]
    for step in trace_steps:
        if step.chosen is None:
            continue
        rows = [_reading_row(cross, r, step.index + (1 if r["shift"] else 0)) for r in readings]
        rows = [row for row in rows if row is not None]
        piece_row = np.mean(rows, axis=0) * keep
        total = piece_row.sum()
        piece_row = piece_row / total if total > 0 else piece_row
        words = [float(piece_row[pieces].sum()) if pieces else 0.0 for pieces in source.pieces]
        step.cross_attention["aligner"] = np.round(piece_row, _WEIGHT_DECIMALS).tolist()
        step.cross_attention["aligner_words"] = np.round(words, _WEIGHT_DECIMALS).tolist()


# ---------------------------------------------------------------------------------------------------- the API


def trace_decoding(
    model: Any,
    tokenizer: Any,
    source: str,
    direction: str | None = None,
    *,
    num_beams: int | None = None,
    length_penalty: float | None = None,
    max_new_tokens: int | None = None,
    top_k: int = 5,
    **generate_settings: Any,
) -> DecodingTrace:
    """Translate `source` step by step as ``model.generate()`` would, recording every step (module docstring).

    Args:
        model, tokenizer: an encoder-decoder translation model the toolkit knows (ours, Marian, NLLB/M2M100,
            mBART, BART, T5; `vaswani_inspect.loading.load_for_inspection`) and its tokenizer.
        source: one sentence.
        direction: ``"es-en"``...: how the model is told the direction (`vaswani_inspect.directions`); None for a
            source that already says it (``">>en<< ..."``) or a one-direction model.
        num_beams, length_penalty, max_new_tokens: left at None, the model's ``generation_config``'s (as
            ``generate()`` uses them; the length as `generation_defaults`, else the source's length + 16).
        top_k: candidates recorded per hypothesis and step.
        **generate_settings: any other greedy or beam search setting of ``generate()`` (no_repeat_ngram_size,
            early_stopping, min_new_tokens, forced_bos_token_id...).

    Returns:
        A `DecodingTrace`; ``trace.settings["generate"]`` are the keyword arguments that make ``generate()`` give
        the same output.

    Raises:
        ValueError: a source or setting ``extract()`` refuses (a setting ``generate()`` would refuse:
            `hf_vaswani.generation_options.check_generation_options`), a ``generate()`` argument that is not a
            setting (``logits_processor``...), a direction the model does not translate, sampling or another
            decoding strategy than greedy and beam search, or `top_k` below 1.
    """
    from .architectures import position_limit
    from .extract import _check_model, _device, _direction, _eval_mode, _source_ids, record_from_ids
    from .pieces import mark_task_prefix, piece_labels

    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be a whole number of at least 1, got {top_k!r}.")
    if not isinstance(source, str):
        raise ValueError(f"source must be one sentence (a string), got {type(source).__name__}.")
    config = _check_model(model)
    how = _direction(model, tokenizer, direction)
    (source_ids,) = _source_ids(model, tokenizer, [source], how, position_limit(config), False)
    kwargs = _generate_kwargs(model, source_ids, how, num_beams, length_penalty, max_new_tokens, generate_settings)
    device = _device(model)
    input_ids = torch.tensor([source_ids], dtype=torch.long, device=device)
    with _eval_mode(model), torch.inference_mode():
        search = _prepare_search(model, input_ids, kwargs)
        labels = functools.lru_cache(maxsize=None)(lambda token: piece_labels(tokenizer, [token])[0])
        tree = _Tree(labels, search.start_id, top_k)
        encoded = _encode(model, input_ids)
        loop = _greedy if search.num_beams == 1 else _beam
        with _last_position_logits(model):
            winner, finished, score = loop(model, encoded, search, tree, device)
    trace_nodes = tree.nodes
    path = _path(trace_nodes, winner)
    target_ids = [node.token_id for node in path]
    record = record_from_ids(model, tokenizer, source_ids, target_ids)
    mark_task_prefix(record, tokenizer, how)
    _mark_chosen(tree.steps, path)
    reading = _aligner_reading(model)
    _fill_aligner(tree.steps, record, reading)
    from .alignment import source_words

    return DecodingTrace(
        source=source.strip(),
        direction=direction,
        source_pieces=list(record.source_tokens),
        source_words=source_words(record),
        target_pieces=piece_labels(tokenizer, target_ids),
        target_ids=target_ids,
        text=tokenizer.decode(target_ids[1:], skip_special_tokens=True).strip(),
        steps=tree.steps,
        beams=trace_nodes,
        winner=winner,
        finished=finished,
        sequence_score=score,
        settings=_settings_record(search, model, top_k, reading),
    )


def _path(nodes: Sequence[BeamNode], node_id: int) -> list[BeamNode]:
    path = [nodes[node_id]]
    while path[-1].parent is not None:
        path.append(nodes[path[-1].parent])
    return path[::-1]


def _mark_chosen(steps: list[DecodingStep], path: list[BeamNode]) -> None:
    """Each step's `chosen` token and `chosen_hypothesis`: the winner's, while it had not ended."""
    for step in steps:
        if step.index + 1 >= len(path):
            continue
        before, token = path[step.index], path[step.index + 1]
        step.chosen_hypothesis = step.hypotheses.index(before.id)
        for candidate in step.candidates[step.chosen_hypothesis]:
            if candidate.token_id == token.token_id:
                step.chosen = candidate
                break
        else:  # (outside the top-k: beam search may keep a hypothesis whose token was not its own best)
            step.chosen = Candidate(token.piece, token.token_id, math.exp(token.log_probability))


def _settings_record(search: _Search, model: Any, top_k: int, reading: dict[str, Any]) -> dict[str, Any]:
    config = search.config
    from .extract import _json_safe

    return _json_safe(
        {
            "num_beams": search.num_beams,
            "length_penalty": search.length_penalty,
            "early_stopping": search.early_stopping,
            "no_repeat_ngram_size": config.no_repeat_ngram_size,
            "max_length": search.max_length,
            "max_new_tokens": search.max_length - 1,
            "decoder_start_token_id": search.start_id,
            "eos_token_id": search.eos_ids,
            "forced_bos_token_id": config.forced_bos_token_id,
            "top_k": top_k,
            "aligner": reading,
            "model": str(getattr(model.config, "_name_or_path", "") or type(model).__name__),
            "generate": search.generate_kwargs,
        }
    )
