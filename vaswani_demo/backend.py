"""The demo's parts for its models, built together: `DemoBackend`.

* `models` (`vaswani_demo.models.ServedModel`): the models served and the directions each serves;
* `choices` (`vaswani_demo.choices.DemoChoices`): what the controls offer, read once from the models;
* `runner` (`vaswani_demo.runner.ModelRunner`): runs the models, translations and translations with heads off;
* `files` (`vaswani_demo.files.RecordFiles`): the attention records offered for download;
* `memory` (`vaswani_demo.memory.FreedMemoryReleaser`): hands freed memory back to the system while it runs.

What is drawn from a record is `vaswani_demo.drawing` (plain functions); what Gradio sees of all this is
`vaswani_demo.events`. Nothing here knows of Gradio.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .choices import DemoChoices
from .files import RecordFiles
from .memory import FreedMemoryReleaser
from .models import ServedModel, load_served_models
from .runner import ModelRunner

__all__ = ["DemoBackend"]


class DemoBackend:
    """The demo without Gradio: its `models`, their `choices`, the `runner` that runs them, the session's `files`.

    `DemoBackend(model, tokenizer, model_name, translator)` serves one loaded model in every direction of the demo
    it offers; `DemoBackend(models=[...])` serves `ServedModel`s (`load` loads them).

    Attributes:
        models: the `ServedModel`s, the one serving the page's first direction first.
        choices: what the controls offer and start at (`DemoChoices.from_models`).
        runner: translates (`ModelRunner.translate`, `run`) and switches heads off (`ModelRunner.ablate`).
        files: the attention records offered for download (`RecordFiles`), removed by `close`.
        memory: the thread that hands freed memory back to the system (`FreedMemoryReleaser`), stopped by `close`.
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        model_name: str = "",
        translator: Any = None,
        *,
        models: Sequence[ServedModel] = (),
    ) -> None:
        self.models = list(models) or [ServedModel.of(model, tokenizer, model_name, translator)]
        self.choices = DemoChoices.from_models(self.models)
        self.runner = ModelRunner(self.models, self.choices)
        # Import bertviz now, in this thread, rather than on the first requests in worker threads.
        import bertviz  # noqa: F401

        self.files = RecordFiles()
        self.memory = FreedMemoryReleaser()

    @classmethod
    def load(
        cls,
        model_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        *,
        device: str | None = None,
        backend: str = "auto",
    ) -> DemoBackend:
        """Load the ``--model`` values `model_path` (`vaswani_demo.models.load_served_models`: a folder or Hub id,
        or several ``DIRECTION=PATH``; default ``$VASWANI_DEMO_MODEL``, else the shipped checkpoint) on `device`,
        translated by `backend` ("auto", "torch" or "ctranslate2").

        Raises:
            FileNotFoundError: when a folder does not exist (the message says how to pass one).
            ValueError: a model that cannot be loaded or served, or a backend that does not serve it.
        """
        return cls(models=load_served_models(model_path, device=device, backend=backend))

    def close(self) -> None:
        """Remove the downloadable records and stop handing freed memory back; the runner translates on, without
        downloads."""
        self.files.close()
        self.memory.close()
