"""Keep-spans on sentences full of numbers, times, prices, URLs, e-mail addresses and names, guard off and on.

    python benchmarks/bench_keep_spans.py                  # 214 sentences (107 each way), CTranslate2 if installed
    python benchmarks/bench_keep_spans.py --backend torch  # generate() instead

The sentences are written here (`SPANISH`, `ENGLISH`: frames filled in turn with the values below them), not drawn
from any corpus. Each one is translated alone, once with ``keep_spans=False`` (the model's own output) and once with
``keep_spans=True``, by the shipped checkpoint (`--model`), each call's warnings caught, so that a
`KeepSpansWarning` is tied to its sentence. Per direction and setting:

- ``numbers kept``: sentences whose every number (digits with ``.``, ``,`` or ``:`` between groups, not glued to a
  letter: ``764884``, ``1.250,50``, ``10:30``, ``7``) stands in the translation as it is in the source;
- ``silently lost``: sentences with a number of the source missing from the translation and no warning naming
  the sentence; ``silently gained``: a number in the translation that is not in its source, with no warning;
- ``spans kept``: the URLs, e-mail addresses and names (the values filled in) that stand in the translation as
  they are;
- ``named in a warning``: sentences a `KeepSpansWarning` names (translated again without the guard, or whose
  translation did not keep a number or a span).

The goal the guard is held to: no number lost or gained silently, and numbers kept in at least 95 % of sentences.
``--before FILE`` adds the guard's columns of an earlier run (this script run on other code) to the table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perf_common import loadavg, machine_info, save_and_print  # noqa: E402

NUMBER = re.compile(r"(?<!\w)\d+(?:[.,:]\d+)*(?!\w)")

# Frames: {n} a number, {t} a time, {p} a price, {u} a URL, {e} an e-mail address, {a} a name, {y} a year.
SPANISH_FRAMES = (
    "Tengo {n} euros en el banco.",
    "El tren sale a las {t} de la estación.",
    "Este libro cuesta {p}.",
    "Puedes leer más en {u}.",
    "Escríbeme a {e} mañana.",
    "Ayer conocí a {a} en la fiesta.",
    "Mi abuelo nació en {y}.",
    "La reunión con {a} empieza a las {t}.",
    "Pagamos {p} por la cena de {n} personas.",
    "Hay {n} alumnos en la escuela de {a}.",
    "El museo abre a las {t} y cierra a las 20:00.",
    "Envía las fotos a {e} antes del viernes.",
    "La página {u} tiene los horarios.",
    "En {y} viajamos a Madrid con {a}.",
    "El coche de {a} costó {p}.",
    "Necesito {n} sillas para la boda.",
    "Llamé a {a} a las {t}.",
    "El precio subió a {p} en {y}.",
    "Compré {n} naranjas y 3 manzanas.",
    "Mi número de cliente es {n}.",
    "La tienda {u} vende zapatos.",
    "Pregúntale a {a} por el correo {e}.",
    "El vuelo llega a las {t} del domingo.",
    "Este mes ahorré {p}.",
    "La casa tiene {n} metros cuadrados.",
)
ENGLISH_FRAMES = (
    "I have {n} euros in the bank.",
    "The train leaves the station at {t}.",
    "This book costs {p}.",
    "You can read more at {u}.",
    "Write to me at {e} tomorrow.",
    "Yesterday I met {a} at the party.",
    "My grandfather was born in {y}.",
    "The meeting with {a} starts at {t}.",
    "We paid {p} for dinner for {n} people.",
    "There are {n} students at the school of {a}.",
    "The museum opens at {t} and closes at 20:00.",
    "Send the photos to {e} before Friday.",
    "The page {u} has the timetables.",
    "In {y} we travelled to Madrid with {a}.",
    "The car of {a} cost {p}.",
    "I need {n} chairs for the wedding.",
    "I called {a} at {t}.",
    "The price went up to {p} in {y}.",
    "I bought {n} oranges and 3 apples.",
    "My customer number is {n}.",
    "The shop {u} sells shoes.",
    "Ask {a} about the address {e}.",
    "The flight arrives at {t} on Sunday.",
    "This month I saved {p}.",
    "The house has {n} square metres.",
)
SPANISH_VALUES = {
    "n": ("764884", "125", "1.250", "48", "3.500", "907", "12"),
    "t": ("10:30", "7:15", "18:45", "9:00", "13:20"),
    "p": ("12,50 euros", "199 dólares", "3.999 pesos", "45 euros", "1.250,75 euros"),
    "u": (
        "https://www.ejemplo.es/tienda",
        "http://example.org/docs?id=42",
        "www.museo-prado.es",
        "https://en.wikipedia.org/wiki/Mercury_(planet)",
        "https://tienda.example.com/ofertas",
    ),
    "e": ("ana.garcia@correo.es", "soporte@tienda-online.com", "j.smith@example.org", "info@viajes.es"),
    "a": ("Aisha", "Oluwaseun", "Ngozi Okafor", "Kwame", "Siobhan", "Zbigniew", "Thandiwe", "Yusuf"),
    "y": ("1982", "2013", "1875", "2024", "1999"),
}
ENGLISH_VALUES = {
    "n": ("764884", "125", "1,250", "48", "3,500", "907", "12"),
    "t": ("10:30", "7:15", "18:45", "9:00", "13:20"),
    "p": ("12.50 dollars", "199 euros", "3,999 pesos", "45 dollars", "1,250.75 euros"),
    "u": (
        "https://www.example.com/shop",
        "http://example.org/docs?id=42",
        "www.british-museum.org",
        "https://en.wikipedia.org/wiki/Mercury_(planet)",
        "https://shop.example.com/offers",
    ),
    "e": ("ann.smith@mail.com", "support@online-shop.com", "j.garcia@example.org", "info@travel.co.uk"),
    "a": ("Aisha", "Oluwaseun", "Ngozi Okafor", "Kwame", "Siobhan", "Zbigniew", "Thandiwe", "Yusuf"),
    "y": ("1982", "2013", "1875", "2024", "1999"),
}
#: Sentences made of each frame (every frame filled this many times, with the values in turn).
VARIANTS = 5


def sentences_of(frames: tuple[str, ...], values: dict[str, tuple[str, ...]]) -> list[tuple[str, list[str]]]:
    """(sentence, the URLs, e-mail addresses and names filled in) for every frame and variant: each slot takes the
    next value of its kind (shifted by two for each variant), so the values go round the frames."""
    made = []
    counters = dict.fromkeys(values, 0)
    for variant in range(VARIANTS):
        for frame in frames:
            spans: list[str] = []
            pieces = re.split(r"\{(\w)\}", frame)  # text, kind, text, kind, ..., text
            for i in range(1, len(pieces), 2):
                kind = pieces[i]
                pieces[i] = values[kind][(counters[kind] + 2 * variant) % len(values[kind])]
                counters[kind] += 1
                if kind in "uea":
                    spans.append(pieces[i])
            made.append(("".join(pieces), spans))
    return list({sentence: (sentence, spans) for sentence, spans in made}.values())  # each sentence once


def load(args: argparse.Namespace) -> tuple[Any, Any, str]:
    """(translator, tokenizer, backend name): CTranslate2 when asked for or installed, else PyTorch."""
    from hf_vaswani.paths import default_model_path

    model = args.model or default_model_path()
    if args.backend in ("auto", "ctranslate2"):
        try:
            from hf_vaswani.backends import load_ctranslate2

            translator = load_ctranslate2(model, quantization=args.quantization, device="cpu")
            return translator, translator.tokenizer, "ctranslate2"
        except ImportError:
            if args.backend == "ctranslate2":
                raise
    from hf_vaswani.inference import load_translator

    translator, tokenizer = load_translator(model, device="cpu")
    return translator, tokenizer, "torch"


def measure(translator: Any, tokenizer: Any, sentences: list[tuple[str, list[str]]], direction: str, keep: bool):
    """The counts of the module docstring, and the sentences that went wrong, for one direction and setting."""
    from hf_vaswani.inference import translate
    from hf_vaswani.placeholders import KeepSpansWarning

    counts = dict(sentences=len(sentences), numbers_kept=0, silently_lost=0, silently_gained=0, spans=0)
    counts.update(spans_kept=0, named_in_a_warning=0)
    wrong: list[dict[str, Any]] = []
    started = time.perf_counter()
    for sentence, spans in sentences:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (output,) = translate(translator, tokenizer, [sentence], direction, keep_spans=keep)
        named = any(issubclass(w.category, KeepSpansWarning) for w in caught)
        numbers, out_numbers = NUMBER.findall(sentence), NUMBER.findall(output)
        lost = [n for n in numbers if n not in out_numbers]
        gained = [n for n in out_numbers if n not in numbers]
        counts["numbers_kept"] += not lost
        counts["silently_lost"] += bool(lost) and not named
        counts["silently_gained"] += bool(gained) and not named
        counts["spans"] += len(spans)
        counts["spans_kept"] += sum(span in output for span in spans)
        counts["named_in_a_warning"] += named
        if lost or gained or not all(span in output for span in spans):
            wrong.append(dict(source=sentence, output=output, lost=lost, gained=gained, warned=named))
    counts["seconds"] = round(time.perf_counter() - started, 1)
    return counts, wrong


def table(results: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None = None) -> str:
    rows = [
        ("sentences whose numbers are all kept", lambda c: f"{c['numbers_kept']} / {c['sentences']}"),
        ("  share", lambda c: f"{100 * c['numbers_kept'] / c['sentences']:.1f} %"),
        ("a number lost, no warning", lambda c: str(c["silently_lost"])),
        ("a number gained, no warning", lambda c: str(c["silently_gained"])),
        ("URLs, e-mail addresses, names kept", lambda c: f"{c['spans_kept']} / {c['spans']}"),
        ("sentences named in a warning", lambda c: str(c["named_in_a_warning"])),
        ("seconds", lambda c: str(c["seconds"])),
    ]
    columns = {}
    for name, counts in results.items():
        direction, setting = name.split("_")
        if before is not None and setting == "on":
            columns[f"{direction}, guard on (before)"] = before[name]
        columns[f"{direction}, guard {setting}"] = counts
    lines = ["| | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns)]
    lines += [f"| {label} | " + " | ".join(cell(c) for c in columns.values()) + " |" for label, cell in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--backend", choices=("auto", "ctranslate2", "torch"), default="auto")
    parser.add_argument("--quantization", default=None, help="CTranslate2 weights (default: int8 on the CPU)")
    parser.add_argument("--json", default="keep_spans", help="results name: benchmarks/results/<name>.json")
    parser.add_argument("--before", default=None, help="a results JSON of this script on earlier code, to compare")
    args = parser.parse_args(argv)
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))["results"] if args.before else None
    translator, tokenizer, backend = load(args)
    sets = {
        "es-en": sentences_of(SPANISH_FRAMES, SPANISH_VALUES),
        "en-es": sentences_of(ENGLISH_FRAMES, ENGLISH_VALUES),
    }
    load_before = loadavg()
    results, wrong = {}, {}
    for direction, sentences in sets.items():
        for keep in (False, True):
            name = f"{direction}_{'on' if keep else 'off'}"
            results[name], wrong[name] = measure(translator, tokenizer, sentences, direction, keep)
    payload = dict(
        backend=backend,
        quantization=args.quantization,
        machine=machine_info(),
        load_average=dict(before=load_before, after=loadavg()),
        results=results,
        before=before,
        wrong=wrong,
    )
    save_and_print(args.json, payload, table(results, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
