"""What the docs (README.md, docs/*.md) quote as the shipped model's output is what the shipped model outputs.

Three kinds of quote are read from the pages themselves, so that a page edited, or a checkpoint retrained, cannot
leave a stale quote behind:

* prose pairs `"source" → "output"` anywhere in the pages, translated with the model's own generation settings (where
  the beam ends in a near tie, `tests.helpers.near_ties`, the page may quote any of its top hypotheses);
* the outputs a code example shows in a comment (`# ['The black cat sleeps.']`), each listed in `CODE_QUOTES`
  with the settings that example runs with; a new such comment that is not listed fails the test;
* the few sentences that describe an output without quoting it whole;
* in the course notebooks, a `"source" → "output"` in a markdown cell must be printed by one of the notebook's cells
  (the notebook tests run them).

One model load for the module; a dozen short sentences in all.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tests.helpers import CHECKPOINT, ROOT, near_ties

pytestmark = pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: `"source" → "output"` in prose, once line breaks are joined.
ARROW_QUOTE = re.compile(r'"([^"]+)" → "([^"]+)"')
#: A code comment that shows an output: a Python list of strings or of {'translation_text': ...}.
OUTPUT_COMMENT = re.compile(r"#[^#\n]*?(\[\{?'.*\])\s*$", flags=re.M)
#: Words that only the Spanish side of the quoted pairs has: an output with one of them is Spanish.
SPANISH = re.compile(r"[áéíóúñ¿¡]|\b(?:el|la|los|las|un|una|de|en|se|me|tengo)\b", flags=re.I)

#: (page, the line of the example, its source, direction, settings other than the generation config's).
CODE_QUOTES = [
    ("docs/deployment.md", "model.generate(**batch), skip_special_tokens=True))  # ['The black cat sleeps.']",
     "El gato negro duerme.", "es-en", {}),
    ("docs/deployment.md", 'print(onnx.translate(["El gato negro duerme."], "es-en"))      # greedy:',
     "El gato negro duerme.", "es-en", {"num_beams": 1}),
    ("docs/deployment.md", 'translator.translate(["El gato negro duerme."], "es-en", num_beams=4)',
     "El gato negro duerme.", "es-en", {"num_beams": 4}),
    ("docs/model.md", """translator("El gato negro.", tgt_lang="en")    # [{'translation_text'""",
     "El gato negro.", "es-en", {}),
]  # fmt: skip


def page_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose(path: Path) -> str:
    """A page with its line breaks and runs of spaces made single spaces (quotes may wrap)."""
    return " ".join(page_text(path).split())


def direction_of(output: str) -> str:
    """The direction of a quoted pair, told by its output (a source such as "4" says nothing)."""
    return "en-es" if SPANISH.search(output) else "es-en"


def arrow_quotes() -> list[tuple[str, str, str]]:
    """(page, source, output) for every `"source" → "output"` in the pages."""
    return [(path.name, *match) for path in PAGES for match in ARROW_QUOTE.findall(prose(path))]


def shown_outputs(line: str) -> list[str]:
    """The strings a code comment shows as output: `['a']` or `[{'translation_text': 'a'}]`."""
    shown = ast.literal_eval(OUTPUT_COMMENT.search(line).group(1))
    return [item["translation_text"] if isinstance(item, dict) else item for item in shown]


def translate_one(shipped, source: str, direction: str, **settings) -> str:
    from hf_vaswani.inference import translate

    model, tokenizer = shipped
    return translate(model, tokenizer, [source], direction=direction, **settings)[0]


def test_the_course_sentences_are_read_from_the_pages():
    """The parsing works (a change of quote marks would otherwise leave nothing to check)."""
    quotes = arrow_quotes()
    assert ("README.md", "el gato negro", "the black cat") in quotes
    assert len({source for _, source, _ in quotes}) >= 6
    assert direction_of("El gato comió el ratón.") == "en-es" and direction_of("I sat on the bank") == "es-en"


def test_every_arrow_quote_is_what_the_model_outputs(shipped):
    from hf_vaswani.inference import translate

    model, tokenizer = shipped
    quotes = arrow_quotes()
    wrong = []
    for direction in ("es-en", "en-es"):
        mine = [(page, source, output) for page, source, output in quotes if direction_of(output) == direction]
        outputs = translate(model, tokenizer, [source for _, source, _ in mine], direction=direction)
        wrong += [
            (page, source, quoted, got)
            for (page, source, quoted), got in zip(mine, outputs)
            if got != quoted and quoted not in near_ties(model, tokenizer, source, direction)
        ]
    assert not wrong, "quoted → what the model outputs: " + "; ".join(
        f'{page}: "{source}" → "{quoted}", the model gives "{got}"' for page, source, quoted, got in wrong
    )


def test_every_output_shown_in_a_code_comment_is_checked():
    listed = {(page, line) for page, line, *_ in CODE_QUOTES}
    for path in PAGES:
        page = path.relative_to(ROOT).as_posix()
        for line in page_text(path).splitlines():
            if OUTPUT_COMMENT.search(line):
                assert any(page == p and snippet in line for p, snippet in listed), (
                    f"{page} shows an output that no test computes; add it to CODE_QUOTES: {line.strip()}"
                )


@pytest.mark.parametrize(
    ("page", "snippet", "source", "direction", "settings"), CODE_QUOTES, ids=[q[0] for q in CODE_QUOTES]
)
def test_the_output_a_code_example_shows_is_what_the_model_outputs(shipped, page, snippet, source, direction, settings):
    lines = [line for line in page_text(ROOT / page).splitlines() if snippet in line]
    assert len(lines) == 1, f"{page} no longer has exactly one line with {snippet!r}: update CODE_QUOTES"
    assert source in lines[0] or source in page_text(ROOT / page), f"{page}'s example no longer translates {source!r}"
    assert [translate_one(shipped, source, direction, **settings)] == shown_outputs(lines[0])


def test_the_ablation_sentence_of_the_demo_page(shipped):
    """docs/demo.md: with every cross-attention head off, "el gato negro" comes out without "black" or "cat"."""
    from vaswani_inspect import ablate_heads

    assert (
        'head off, the decoder no longer sees the source: "el gato negro" comes out as English without "black" or'
        in (prose(ROOT / "docs" / "demo.md"))
    )
    model, _ = shipped
    every_cross_head = {"cross": {layer: "all" for layer in range(model.config.decoder_layers)}}
    with ablate_heads(model, every_cross_head):
        output = translate_one(shipped, "el gato negro", "es-en")  # the demo's default settings: the model's
    assert output and not set(re.findall(r"\w+", output.lower())) & {"black", "cat"}, output


def test_the_shipped_model_says_bank_on_the_other_models_page(shipped):
    """docs/other_models.md: for "Me senté en el banco de la plaza" the shipped model says "bank"."""
    assert 'where the shipped teaching model says "bank"' in prose(ROOT / "docs" / "other_models.md")
    assert "bank" in translate_one(shipped, "Me senté en el banco de la plaza", "es-en").split()


def notebook_quotes_not_printed(path: Path) -> list[str]:
    """The outputs quoted as `"source" → "output"` in a notebook's markdown that none of its saved outputs prints."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    markdown = " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    printed = "".join(
        "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
        for cell in cells
        if cell["cell_type"] == "code"
        for output in cell["outputs"]
    )
    return [output for _, output in ARROW_QUOTE.findall(markdown) if output not in printed]


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_what_a_notebook_quotes_as_output_it_prints(path):
    assert not notebook_quotes_not_printed(path), f"{path.name} quotes outputs it does not print"


def test_a_quote_a_notebook_does_not_print_is_found(tmp_path):
    cells = [
        {"cell_type": "markdown", "source": ['El modelo da "el gato negro" → "the black cat" y\n', '"hola" → "hi".']},
        {"cell_type": "code", "source": [], "outputs": [{"output_type": "stream", "text": ["the black cat\n"]}]},
    ]
    (tmp_path / "x.ipynb").write_text(json.dumps({"cells": cells}))
    assert notebook_quotes_not_printed(tmp_path / "x.ipynb") == ["hi"]
