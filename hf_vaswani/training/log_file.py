"""`JsonlLoggerCallback`: a run's ``log.jsonl``, one JSON object per Trainer log event."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

__all__ = ["JsonlLoggerCallback"]


class JsonlLoggerCallback(TrainerCallback):
    """Appends every Trainer log event to a JSONL file (one object a line), with the wall time, the step and,
    for training logs, the number of source tokens per second since the previous log."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._last: tuple[float, int] | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._last = (time.time(), int(state.num_input_tokens_seen or 0))
        # A kill while a line was written left it cut short: the next line would be glued to it, and neither would
        # parse. Drop it (its step is logged again after the checkpoint the run resumes from).
        data = self.path.read_bytes() if state.is_world_process_zero and self.path.is_file() else b""
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        now = time.time()
        record: dict[str, Any] = {"time": now, "step": state.global_step, "epoch": state.epoch, **logs}
        tokens = int(state.num_input_tokens_seen or 0)
        if self._last is not None and "loss" in logs and now > self._last[0] and tokens > self._last[1]:
            record["source_tokens_per_second"] = (tokens - self._last[1]) / (now - self._last[0])
            self._last = (now, tokens)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=float) + "\n")
