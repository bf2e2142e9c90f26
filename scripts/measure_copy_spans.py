"""How often the model changes the numbers, URLs, e-mail addresses and rare names of a source, with and without the
guard of `hf_vaswani.placeholders`, and the BLEU / chrF of both, on a held-out split of the training data.

    python scripts/measure_copy_spans.py --data ../shared/data/spa-eng/spa-eng.tsv --split test --json out.json

The split is the training run's (`hf_vaswani.data.prepare_splits` with the sizes and seed of
configs/tatoeba-es-en.yaml). Translations come from the CTranslate2 backend in float32 (the tokens `generate()`
chooses), with the model's generation config (beam 4, length penalty 0.6). A span counts as kept when its exact
text stands in the translation (not inside a longer word or number); every number of a source is counted, the
short ones the guard leaves to the model too. Only the sources holding a span the guard protects are translated
again with it: it hands the others to the model unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from hf_vaswani.backends import load_ctranslate2
from hf_vaswani.data import prepare_splits, read_pairs
from hf_vaswani.inference import score_translations
from hf_vaswani.placeholders import (
    NAME_PLACEHOLDERS,
    NUMBER_PLACEHOLDERS,
    KeepSpansWarning,
    find_spans,
    translate_keeping_spans,
    vocabulary_of,
)

DIRECTIONS = {"es-en": (1, 0), "en-es": (0, 1)}  # (source column, reference column) of an (English, Spanish) pair


def kept(span_text: str, translation: str) -> bool:
    """Whether `span_text` stands in `translation` as it is, not inside a longer word or number."""
    pattern = rf"(?<![\w]){re.escape(span_text)}(?!\w|[.,:]\d)"
    return re.search(pattern, translation) is not None


def split_pairs_of(data: str, split: str, size: int, seed: int) -> list[tuple[str, str]]:
    """The pairs of `split`, as the training run holds it out."""
    splits = prepare_splits(read_pairs(data), validation_size=size, test_size=size, seed=seed)
    return [tuple(pair) for pair in splits[split]]


NUMBER = re.compile(r"(?<!\w)\d+(?:[.,:]\d+)*(?!\w)")


def measured_spans(source: str, vocabulary: Any) -> list[tuple[str, str]]:
    """(kind, text) of what should come through unchanged: every number (short ones too, which the guard leaves to
    the model), and the URLs, e-mail addresses and rare names the guard finds."""
    spans = [(span.kind, span.text) for span in find_spans(source, vocabulary) if span.kind != "number"]
    return spans + [("number", match.group()) for match in NUMBER.finditer(source)]


def span_counts(sources: list[str], translations: list[str], vocabulary: Any) -> dict[str, dict[str, int]]:
    """Per kind of span: sentences holding one, spans, spans kept, sentences whose spans of that kind are all kept."""
    counts: dict[str, Counter[str]] = {}
    for source, translation in zip(sources, translations, strict=True):
        by_kind: dict[str, list[bool]] = {}
        for kind, text in measured_spans(source, vocabulary):
            by_kind.setdefault(kind, []).append(kept(text, translation))
        for kind, flags in by_kind.items():
            count = counts.setdefault(kind, Counter())
            count["sentences"] += 1
            count["spans"] += len(flags)
            count["spans_kept"] += sum(flags)
            count["sentences_all_kept"] += all(flags)
    return {kind: dict(count) for kind, count in sorted(counts.items())}


def changed_examples(sources: list[str], before: list[str], after: list[str], vocabulary: Any) -> list[dict[str, str]]:
    """The sentences whose translation differs with the guard."""
    return [{"source": s, "before": b, "after": a} for s, b, a in zip(sources, before, after, strict=True) if b != a]


def cached_translations(cache: Path | None, direction: str, sources: list[str], translate: Any) -> list[str]:
    """The unguarded translations of `sources`, from `cache` (a JSON file) when it holds them for these sources."""
    stored = json.loads(cache.read_text(encoding="utf-8")) if cache is not None and cache.is_file() else {}
    entry = stored.get(direction, {})
    if entry.get("sources") == sources:
        return entry["translations"]
    translations = translate()
    if cache is not None:
        stored[direction] = {"sources": sources, "translations": translations}
        cache.write_text(json.dumps(stored, ensure_ascii=False), encoding="utf-8")
    return translations


def measure_direction(
    translator: Any, pairs: list[tuple[str, str]], direction: str, options: dict[str, Any], cache: Path | None = None
) -> dict[str, Any]:
    source_column, reference_column = DIRECTIONS[direction]
    sources = [pair[source_column] for pair in pairs]
    references = [pair[reference_column] for pair in pairs]
    vocabulary = vocabulary_of(translator.tokenizer)
    started = time.perf_counter()
    before = cached_translations(cache, direction, sources, lambda: translator.translate(sources, direction, **options))
    # The guard hands a sentence without spans to the model as it is: only the others are translated again.
    guarded = [i for i, source in enumerate(sources) if find_spans(source, vocabulary)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KeepSpansWarning)
        kept_translations = translate_keeping_spans(
            lambda texts, labels: translator.translate(texts, direction, labels=labels, **options),
            [sources[i] for i in guarded],
            vocabulary,
            [f"{direction} pair {i + 1}" for i in guarded],
        )
    after = list(before)
    for i, translation in zip(guarded, kept_translations, strict=True):
        after[i] = translation
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, KeepSpansWarning)]
    return {
        "sentences": len(sources),
        "sentences_with_spans": len(guarded),
        "spans_before": span_counts(sources, before, vocabulary),
        "spans_after": span_counts(sources, after, vocabulary),
        "scores_before": score_translations(before, references),
        "scores_after": score_translations(after, references),
        "fallback_warnings": fallbacks,
        "changed": changed_examples(sources, before, after, vocabulary),
        "seconds": round(time.perf_counter() - started, 1),
    }


#: Sentences written for this measurement: the held-out splits hold no URL or e-mail address and few long numbers.
PROBE = {
    "es-en": [
        "Tengo 764884 euros.",
        "Aisha vive en Buenos Aires desde 1982.",
        "La casa cuesta 250.000 dólares.",
        "Mi número es 555 1234.",
        "Visita www.ejemplo.org para saber más.",
        "Escríbeme a ana.perez@correo.es mañana.",
        "La página es https://tatoeba.org/es/sentences.",
        "Nací en 1975 en Lanzarote.",
        "El tren sale a las 10:45 y llega a las 13:20.",
        "Hay 1.250 alumnos en la escuela.",
        "Conocí a Achille en Milton en 2004.",
        "Perdí 3,5 kilos en 12 semanas.",
    ],
    "en-es": [
        "I have 764884 euros.",
        "Aisha has lived in Buenos Aires since 1982.",
        "The house costs 250,000 dollars.",
        "My number is 555 1234.",
        "Visit www.example.org to learn more.",
        "Write to me at ana.perez@mail.com tomorrow.",
        "The page is https://tatoeba.org/en/sentences.",
        "I was born in 1975 in Lanzarote.",
        "The train leaves at 10:45 and arrives at 13:20.",
        "There are 1,250 students at the school.",
        "I met Achille in Milton in 2004.",
        "I lost 3.5 kilos in 12 weeks.",
    ],
}


def measure_probe(translator: Any, direction: str) -> dict[str, Any]:
    """What the guard changes on `PROBE`: spans kept before and after, and every translation."""
    sources = PROBE[direction]
    vocabulary = vocabulary_of(translator.tokenizer)
    before = translator.translate(sources, direction)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KeepSpansWarning)
        after = translate_keeping_spans(
            lambda texts, labels: translator.translate(texts, direction, labels=labels), sources, vocabulary
        )
    return {
        "spans_before": span_counts(sources, before, vocabulary),
        "spans_after": span_counts(sources, after, vocabulary),
        "fallback_warnings": [str(w.message) for w in caught if issubclass(w.category, KeepSpansWarning)],
        "translations": [
            {"source": s, "before": b, "after": a} for s, b, a in zip(sources, before, after, strict=True)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the English<TAB>Spanish corpus the model was trained on")
    parser.add_argument("--split", choices=("validation", "test"), default="test")
    parser.add_argument("--size", type=int, default=2000, help="pairs per held-out split (the run's test_size)")
    parser.add_argument("--seed", type=int, default=0, help="the run's split_seed")
    parser.add_argument("--model", default=None, help="model folder (default: the shipped checkpoint)")
    parser.add_argument("--quantization", default="float32")
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads of CTranslate2 (1 is fastest on a busy machine)"
    )
    parser.add_argument("--cache", type=Path, help="keep the unguarded translations in this JSON file, for reruns")
    parser.add_argument("--json", type=Path, help="write the figures (and every changed translation) here")
    args = parser.parse_args(argv)
    pairs = split_pairs_of(args.data, args.split, args.size, args.seed)
    translator = load_ctranslate2(args.model, quantization=args.quantization, threads=args.threads)
    warnings.simplefilter("ignore", UserWarning)  # unknown characters: counted by the project's own checks
    results: dict[str, Any] = {
        "split": args.split,
        "pairs": len(pairs),
        "placeholders": {"name": list(NAME_PLACEHOLDERS), "number": list(NUMBER_PLACEHOLDERS)},
        "quantization": args.quantization,
    }
    for direction in DIRECTIONS:
        results[f"probe {direction}"] = measure_probe(translator, direction)
        probe = {k: results[f"probe {direction}"][k] for k in ("spans_before", "spans_after")}
        print("probe", direction, json.dumps(probe), file=sys.stderr)
    for direction in DIRECTIONS:
        results[direction] = measure_direction(translator, pairs, direction, {}, args.cache)
        summary = {k: results[direction][k] for k in ("spans_before", "spans_after", "seconds")}
        summary["bleu"] = (results[direction]["scores_before"]["bleu"], results[direction]["scores_after"]["bleu"])
        summary["chrf"] = (results[direction]["scores_before"]["chrf"], results[direction]["scores_after"]["chrf"])
        print(direction, json.dumps(summary), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
