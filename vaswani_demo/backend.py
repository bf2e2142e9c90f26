"""The demo's parts for one model, built together: `DemoBackend`.

* `choices` (`vaswani_demo.choices.DemoChoices`): what the controls offer, read once from the model;
* `runner` (`vaswani_demo.runner.ModelRunner`): runs the model, translations and translations with heads off;
* `files` (`vaswani_demo.files.RecordFiles`): the attention records offered for download.

What is drawn from a record is `vaswani_demo.drawing` (plain functions); what Gradio sees of all this is
`vaswani_demo.events`. Nothing here knows of Gradio.
"""

from __future__ import annotations

import os
from typing import Any

from .choices import DemoChoices
from .files import RecordFiles
from .runner import ModelRunner, load_model

__all__ = ["DemoBackend"]


class DemoBackend:
    """The demo without Gradio, for one model: its `choices`, the `runner` that runs it, the session's `files`.

    Attributes:
        choices: what the controls offer and start at (`DemoChoices.from_model`).
        runner: translates (`ModelRunner.translate`, `run`) and switches heads off (`ModelRunner.ablate`).
        files: the attention records offered for download (`RecordFiles`), removed by `close`.
    """

    def __init__(self, model: Any, tokenizer: Any, model_name: str = "", translator: Any = None) -> None:
        self.choices = DemoChoices.from_model(model, tokenizer, model_name)
        self.runner = ModelRunner(model, tokenizer, self.choices, translator)
        # Import bertviz now, in this thread, rather than on the first requests in worker threads.
        import bertviz  # noqa: F401

        self.files = RecordFiles()

    @classmethod
    def load(
        cls, model_path: str | os.PathLike[str] | None = None, *, device: str | None = None, backend: str = "auto"
    ) -> DemoBackend:
        """Load a model folder or Hub id (`vaswani_demo.runner.load_model`: default ``$VASWANI_DEMO_MODEL``, else
        the shipped checkpoint) on `device`, translated by `backend` ("auto", "torch" or "ctranslate2").

        Raises:
            FileNotFoundError: when the folder does not exist (the message says how to pass one).
        """
        model, tokenizer, name, translator = load_model(model_path, device=device, backend=backend)
        return cls(model, tokenizer, model_name=name, translator=translator)

    def close(self) -> None:
        """Remove the downloadable records; the runner translates on, without downloads."""
        self.files.close()
