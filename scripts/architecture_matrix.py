"""What every tool does on every architecture, as a Markdown table: works, or the refusal it gives (quoted).

    python scripts/architecture_matrix.py            # tiny random models of each architecture, built offline

Rows: ours, Marian (one direction, sentencepiece without offsets), NLLB (M2M100), mBART-50, BART (byte-level BPE),
T5, a `convert-marian` folder (Marian -> ours) and an `export-marian` folder (ours -> Marian). Each model is loaded
the way a user loads it (the Auto classes, default attention); the commands get its folder. The models have random
weights: the table says whether each tool runs and refuses cleanly, not what it finds.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

SOURCE, TARGET = "El gato se comió el ratón.", "The cat ate the mouse."
COLUMNS = (
    "extract (plain load)",
    "words",
    "align",
    "views",
    "attribute (7 methods)",
    "ablate",
    "importance",
    "inspect",
    "explain",
    "head-importance",
    "demo",
)


def build_folders(root: Path) -> dict[str, Path]:
    """{row name: model folder} of tiny random models."""
    from hf_vaswani.marian import convert_marian
    from hf_vaswani.marian.export import export_marian
    from vaswani_demo.testing import write_tiny_model
    from vaswani_inspect.testing_models import ARCHITECTURES, write_tiny_architecture

    folders = {"ours": write_tiny_model(root / "ours")}
    folders.update({name: write_tiny_architecture(name, root / name) for name in ARCHITECTURES})
    with contextlib.redirect_stdout(io.StringIO()):
        convert_marian(str(folders["marian"]), root / "converted")
        export_marian(folders["ours"], root / "exported")
    folders["convert-marian"] = root / "converted"
    folders["export-marian"] = root / "exported"
    return folders


def _cell(step: Callable[[], Any]) -> str:
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()) as out:
            warnings.simplefilter("ignore")
            with contextlib.redirect_stderr(io.StringIO()) as err:
                result = step()
    except Exception as error:  # noqa: BLE001 - the table shows what went wrong
        trace = traceback.format_exception_only(type(error), error)[-1].strip()
        return f"**traceback**: {trace[:160]}"
    if isinstance(result, int) and result != 0:  # a command's exit code: its one-line error
        lines = [line for line in (err.getvalue() + out.getvalue()).splitlines() if "error:" in line]
        return f'refused: "{lines[-1].split("error: ", 1)[1][:160]}"' if lines else f"exit {result}"
    return "✓"


def row(name: str, folder: Path, work: Path) -> list[str]:
    """One row of the table: each tool on the model of `folder`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    import hf_vaswani  # noqa: F401  (registers our model type)
    from hf_vaswani.cli import main
    from vaswani_inspect import ablate_heads, align, attribute, extract, head_importance, head_view_html, source_words
    from vaswani_inspect.attribution import METHODS

    option = f"es-en={folder}" if name == "bart" else str(folder)  # (BART's folder does not say its direction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    found: dict[str, Any] = {}

    def extracted() -> None:
        found["record"] = extract(model, tokenizer, SOURCE, TARGET, direction="es-en")

    def words() -> None:
        assert source_words(found["record"]) == ["El", "gato", "se", "comió", "el", "ratón", "."], found["record"]

    def explained() -> None:
        for method in METHODS:  # (integrated gradients with few steps: the table checks that it runs)
            options = {"n_steps": 4} if method == "integrated_gradients" else {}
            attribute(model, tokenizer, found["record"], method=method, **options)

    def ablated() -> None:
        with ablate_heads(model, {"cross": {0: "all"}}):
            extract(model, tokenizer, SOURCE, direction="es-en", generate_kwargs={"max_new_tokens": 4})

    def importance() -> None:
        head_importance(model, tokenizer, [(TARGET, SOURCE)], "es-en", curves=(), max_new_tokens=3, progress=False)

    def demo() -> None:
        from vaswani_demo import DemoBackend
        from vaswani_demo.events import ablation_outputs, translate_outputs

        backend = DemoBackend.load([option])
        try:
            defaults = backend.choices.default_choices()
            result, (_, status, _, record) = translate_outputs(
                backend, SOURCE, "es-en", 2, 8, defaults["layer"], defaults["head"]
            )
            assert result.ok, status
            ablated, (status, *_) = ablation_outputs(backend, record, cross_heads=backend.choices.head_labels("cross"))
            assert ablated.ok, status
        finally:
            backend.close()

    pairs = work / "pairs.tsv"
    pairs.write_text(f"{TARGET}\t{SOURCE}\n", encoding="utf-8")
    common = ["--model", str(folder), "--direction", "es-en"]
    steps = {
        "extract (plain load)": extracted,
        "words": words,
        "align": lambda: align(found["record"]),
        "views": lambda: head_view_html(found["record"], kind="cross"),
        "attribute (7 methods)": explained,
        "ablate": ablated,
        "importance": importance,
        "inspect": lambda: main(["inspect", SOURCE, "--out", str(work / "inspect"), "--max-new-tokens", "4", *common]),
        "explain": lambda: main(["explain", SOURCE, "--target", TARGET, "--out", str(work / "explain"), *common]),
        "head-importance": lambda: main(
            [
                "head-importance",
                "--pairs",
                str(pairs),
                "--no-pruning",
                "--max-new-tokens",
                "3",
                "--out",
                str(work / "importance"),
                "--no-progress",
                *common,
            ]
        ),  # fmt: skip
        "demo": demo,
    }
    return [_cell(steps[column]) for column in COLUMNS]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        folders = build_folders(root)
        print("| model | " + " | ".join(COLUMNS) + " |")
        print("| --- |" + " --- |" * len(COLUMNS))
        for name, path in folders.items():
            work = root / f"work-{name}"
            work.mkdir()
            print(f"| {name} | " + " | ".join(row(name, path, work)) + " |", flush=True)


if __name__ == "__main__":
    main()
