"""What activation patching returns (`PatchingResult`), the sites and methods it knows, and the contrast metric
(`Contrast`) it can read instead of the target's log-probability."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["METHODS", "SITES", "Contrast", "PatchingResult"]

#: The sites that can be patched, in the order results list them.
SITES = ("encoder", "decoder", "encoder_heads", "decoder_heads", "cross_heads")
#: How effects are computed: one patched run per cell, or the gradient approximation.
METHODS = ("exhaustive", "attribution")


@dataclass(frozen=True)
class Contrast:
    """The metric log p(answer) - log p(foil) at the one decoder step where the two part ("why this and not that").

    `answer` and `foil` are texts in the target language (a word, ``Contrast("bank", "bench")``, or a whole
    translation) or lists of token ids. The answer's tokens must occur in the target (the teacher-forced
    translation); the step is where the answer's and the foil's tokens first differ, at that place of the target.
    A plain ``(answer, foil)`` tuple passed as ``metric=`` is read as a `Contrast`.
    """

    answer: str | Sequence[int]
    foil: str | Sequence[int]

    def describe(self) -> str:
        """``"log p('bank') - log p('bench')"``: how results name the metric."""
        return f"log p({_shown(self.answer)}) - log p({_shown(self.foil)})"


def _shown(value: str | Sequence[int]) -> str:
    return repr(value) if isinstance(value, str) else repr(list(value))


@dataclass
class PatchingResult:
    """What `patch_activations` found.

    Attributes:
        effects: ``{site: float32 array}``, (layers, positions) for ``"encoder"``/``"decoder"``, (layers, heads) for
            the head sites; (patched - corrupted) / (clean - corrupted), NaN where clean - corrupted is 0.
        clean_metric, corrupted_metric: the metric on the clean and on the corrupted source.
        source_tokens, corrupted_tokens: the labels of both sources' pieces (as `AttentionRecord.source_tokens`).
        target_tokens, target_ids: the teacher-forced decoder inputs (decoder start token, then the translation).
        method: ``"exhaustive"`` or ``"attribution"``; sites: the sites computed, in `SITES` order.
        metric: what the metric is, in words (``"sum of log p(target tokens)"``, or a `Contrast`'s description).
        source_text, corrupted_text, target_text, direction: the inputs as given (target_text: the translation).
        source_ids, corrupted_ids: the token ids the encoder read.
        passes: model runs made, a batched run counting one per copy (backward passes included for attribution).
        metric_steps: the decoder positions whose predictions the metric reads.
    """

    effects: dict[str, np.ndarray]
    clean_metric: float
    corrupted_metric: float
    source_tokens: list[str]
    corrupted_tokens: list[str]
    target_tokens: list[str]
    target_ids: list[int]
    method: str
    sites: tuple[str, ...]
    metric: str
    source_text: str = ""
    corrupted_text: str = ""
    target_text: str = ""
    direction: str | None = None
    source_ids: list[int] = field(default_factory=list)
    corrupted_ids: list[int] = field(default_factory=list)
    passes: int = 0
    metric_steps: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (arrays as nested lists, NaN as None)."""
        data = asdict(self)
        data["sites"] = list(self.sites)
        data["effects"] = {site: _json_array(values) for site, values in self.effects.items()}
        for name in ("clean_metric", "corrupted_metric"):
            data[name] = None if math.isnan(data[name]) else data[name]
        return data

    def to_json(self, path: str | Path | None = None) -> str:
        """The result as JSON text (`as_dict`), also written to `path` when given."""
        text = json.dumps(self.as_dict(), ensure_ascii=False, indent=1)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def position_tokens(self, site: str) -> list[str]:
        """The labels of a position site's columns: the source pieces for ``"encoder"`` (``"banco→sofá"`` where the
        sources differ), the decoder inputs for ``"decoder"``."""
        if site == "encoder":
            return [
                clean if clean == corrupted else f"{clean}→{corrupted}"
                for clean, corrupted in zip(self.source_tokens, self.corrupted_tokens)
            ]
        if site == "decoder":
            return list(self.target_tokens)
        raise ValueError(f"{site!r} is not a position site: 'encoder' or 'decoder'.")


def _json_array(values: np.ndarray) -> list:
    return [[None if math.isnan(v) else float(v) for v in row] for row in np.asarray(values, dtype=np.float64)]
