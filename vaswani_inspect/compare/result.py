"""What `compare_bert` returns (`CompareResult`), and the description of the machine stored with its timings."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import Any

from .comparison import HeadComparison, json_ready
from .sentences import Sentence

__all__ = ["CompareResult", "machine_description"]


@dataclass
class CompareResult:
    """The outcome of `compare_bert`: one `HeadComparison` per compared attention ("encoder", and "decoder" with
    `decoder=True`), the sentences used and skipped, settings and timings (seconds)."""

    comparisons: dict[str, HeadComparison]
    sentences: list[Sentence]
    skipped: list[dict[str, Any]]
    settings: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return json_ready(
            {
                "format": "vaswani_inspect.compare_bert",
                "version": 1,
                "settings": self.settings,
                "sentences_compared": len(self.sentences),
                "sentences_skipped": self.skipped,
                "notes": self.notes,
                "timings_s": self.timings,
                "machine": machine_description(),
                "comparisons": {kind: c.to_dict() for kind, c in self.comparisons.items()},
            }
        )


def machine_description() -> dict[str, Any]:
    """Platform, CPU count, torch threads and load average: the context of the timings."""
    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
    try:
        info["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        pass
    return info
