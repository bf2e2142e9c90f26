"""Noun-phrase pairs mined from the training sentences, so that the model also sees fragments.

Tatoeba holds whole sentences only ("Tom tiene un gato negro." / "Tom has a black cat."): a model trained on it
has never seen a bare noun phrase as input and turns one into a sentence ("el gato negro" -> "The cat is
black."). This module finds noun phrases that the two sides of a TRAINING pair share and adds them as extra
pairs ("un gato negro" / "a black cat"), the way phrase-based MT extracts phrase pairs from aligned sentences.

The alignment is deliberately simple, and written here because no well-kept library offers a small, offline,
dependency-free word aligner for this: a word-translation lexicon from sentence-level co-occurrence (the Dice
coefficient, kept when both words are among each other's best candidates) and three patterns:

* determiner + noun + adjective, reordered in English: "el gato negro" / "the black cat";
* determiner + adjective + noun, in the same order: "la primera vez" / "the first time";
* determiner + noun: "el ratón" / "the mouse".

The determiners must agree ("el" goes with "the", "un" with "a"/"an", "mis" with "my", ...) and every content
word must be in the lexicon with its counterpart. Phrases are mined from the training split only, so no
validation or test sentence leaks into training.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from .pairs import SentencePair

__all__ = [
    "SPANISH_DETERMINERS",
    "build_lexicon",
    "capitalised_words",
    "casual_copies",
    "mine_noun_phrase_pairs",
    "sentence_forms",
]

#: Spanish determiners and the English determiners that translate them.
SPANISH_DETERMINERS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("el", "la", "los", "las"), frozenset({"the"})),
    **dict.fromkeys(("un", "una"), frozenset({"a", "an"})),
    **dict.fromkeys(("unos", "unas"), frozenset({"some"})),
    **dict.fromkeys(("mi", "mis"), frozenset({"my"})),
    **dict.fromkeys(("tu", "tus"), frozenset({"your"})),
    **dict.fromkeys(("su", "sus"), frozenset({"his", "her", "its", "their", "your"})),
    **dict.fromkeys(("nuestro", "nuestra", "nuestros", "nuestras"), frozenset({"our"})),
    **dict.fromkeys(("este", "esta"), frozenset({"this"})),
    **dict.fromkeys(("estos", "estas"), frozenset({"these"})),
    **dict.fromkeys(("ese", "esa", "aquel", "aquella"), frozenset({"that"})),
    **dict.fromkeys(("esos", "esas", "aquellos", "aquellas"), frozenset({"those"})),
}
_ENGLISH_DETERMINERS = frozenset().union(*SPANISH_DETERMINERS.values())
# Words that are never the noun or adjective of a mined phrase (pronouns, prepositions, auxiliaries, ...).
_FUNCTION_WORDS = (
    frozenset(
        "de del a al en con por para que y o e u ni no sí se me te le les lo nos os es son está están ha han hay "
        "muy más menos tan ya yo él ella ellos ellas usted ustedes qué cómo cuando como si pero sin sobre "
        "of to in on at for with by from and or not no is are was were be been has have had do does did will "
        "would can could very more less so too it he she they we you i me him them us that this what who how "
        "there here as if but than".split()
    )
    | _ENGLISH_DETERMINERS
    | frozenset(SPANISH_DETERMINERS)
)
# Spanish adjectives that usually come BEFORE the noun ("la primera vez"); only these start a same-order phrase,
# which keeps subject + verb spans ("el gato duerme" / "the cat sleeps") out.
_PRENOMINAL_ADJECTIVES = frozenset(
    "gran grandes buen bueno buena buenos buenas mal mala malos malas mejor mejores peor peores primer primero "
    "primera primeros primeras segundo segunda tercer tercera último última últimos últimas próximo próxima "
    "próximos próximas otro otra otros otras mismo misma mismos mismas pobre pobres nuevo nueva nuevos nuevas "
    "viejo vieja viejos viejas pequeño pequeña pequeños pequeñas único única antiguo antigua verdadero "
    "verdadera".split()
)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def build_lexicon(
    pairs: Iterable[SentencePair], *, min_count: int = 3, min_dice: float = 0.2, top_k: int = 3
) -> set[tuple[str, str]]:
    """(Spanish word, English word) pairs, lowercased, that translate each other.

    A pair is kept when the two words co-occur in at least `min_count` sentence pairs, their Dice coefficient
    ``2 c(s, e) / (c(s) + c(e))`` is at least `min_dice`, and each is among the other's `top_k` best.
    """
    spanish_counts: Counter[str] = Counter()
    english_counts: Counter[str] = Counter()
    joint: Counter[tuple[str, str]] = Counter()
    for pair in pairs:
        english = {word.lower() for word in _words(pair.en)} - _FUNCTION_WORDS
        spanish = {word.lower() for word in _words(pair.es)} - _FUNCTION_WORDS
        english_counts.update(english)
        spanish_counts.update(spanish)
        joint.update((s, e) for s in spanish for e in english)

    dice = {
        (s, e): 2 * count / (spanish_counts[s] + english_counts[e])
        for (s, e), count in joint.items()
        if count >= min_count
    }
    best_for_spanish: dict[str, list[tuple[float, str]]] = {}
    best_for_english: dict[str, list[tuple[float, str]]] = {}
    for (s, e), score in dice.items():
        if score >= min_dice:
            best_for_spanish.setdefault(s, []).append((score, e))
            best_for_english.setdefault(e, []).append((score, s))

    def top(candidates: dict[str, list[tuple[float, str]]]) -> dict[str, set[str]]:
        return {
            word: {other for _, other in sorted(scored, reverse=True)[:top_k]} for word, scored in candidates.items()
        }

    spanish_top, english_top = top(best_for_spanish), top(best_for_english)
    return {(s, e) for s, targets in spanish_top.items() for e in targets if s in english_top.get(e, ())}


def _lower_initial(text: str) -> str:
    return text[:1].lower() + text[1:]


def _phrases_of_pair(pair: SentencePair, lexicon: set[tuple[str, str]]) -> Iterable[SentencePair]:
    spanish, english = _words(pair.es), _words(pair.en)
    lower_es, lower_en = [w.lower() for w in spanish], [w.lower() for w in english]

    def translates(s: str, e: str) -> bool:
        return s not in _FUNCTION_WORDS and e not in _FUNCTION_WORDS and (s, e) in lexicon

    for i, determiner in enumerate(lower_es):
        english_determiners = SPANISH_DETERMINERS.get(determiner)
        if english_determiners is None:
            continue
        for j, english_determiner in enumerate(lower_en):
            if english_determiner not in english_determiners:
                continue
            es3, en3 = lower_es[i + 1 : i + 3], lower_en[j + 1 : j + 3]
            if len(es3) == 2 and len(en3) == 2:
                reordered = translates(es3[0], en3[1]) and translates(es3[1], en3[0])
                monotone = (
                    es3[0] in _PRENOMINAL_ADJECTIVES and translates(es3[0], en3[0]) and translates(es3[1], en3[1])
                )
                if reordered or monotone:
                    yield SentencePair(
                        _lower_initial(" ".join(english[j : j + 3])), _lower_initial(" ".join(spanish[i : i + 3]))
                    )
                    continue
            # Two words: determiner + noun, never determiner + adjective ("la primera" of "la primera vez").
            if es3 and en3 and es3[0] not in _PRENOMINAL_ADJECTIVES and translates(es3[0], en3[0]):
                yield SentencePair(
                    _lower_initial(" ".join(english[j : j + 2])), _lower_initial(" ".join(spanish[i : i + 2]))
                )


def mine_noun_phrase_pairs(
    pairs: Sequence[SentencePair], *, max_pairs: int | None = None, lexicon: set[tuple[str, str]] | None = None
) -> list[SentencePair]:
    """Noun-phrase pairs found in `pairs` (see the module docstring), deduplicated, in order of first occurrence.

    Each phrase pair is lowercase-initial and unpunctuated, like a fragment a user types ("el gato negro").
    Phrases whose Spanish side has several English translations in the corpus keep the most frequent one.
    `max_pairs` keeps the most frequent phrases first. Pass only TRAINING pairs.
    """
    if lexicon is None:
        lexicon = build_lexicon(pairs)
    found: Counter[SentencePair] = Counter()
    first_seen: dict[SentencePair, int] = {}
    for pair in pairs:
        for phrase in _phrases_of_pair(pair, lexicon):
            found[phrase] += 1
            first_seen.setdefault(phrase, len(first_seen))
    best_by_spanish: dict[str, SentencePair] = {}  # filled most frequent first, so its values stay in that order
    for phrase in sorted(found, key=lambda p: (-found[p], first_seen[p])):
        best_by_spanish.setdefault(phrase.es.lower(), phrase)
    kept = list(best_by_spanish.values())
    if max_pairs is not None:
        kept = kept[:max_pairs]
    return sorted(kept, key=first_seen.__getitem__)


_CASUAL_EDGES = re.compile(r"^[¿¡\s]+|[\s.!?…]+$")
#: English words written with a capital wherever they stand.
_ALWAYS_CAPITALISED = frozenset({"I", "I'm", "I've", "I'd", "I'll"})


def capitalised_words(pairs: Iterable[SentencePair], *, min_count: int = 2) -> frozenset[str]:
    """Words that keep their capital letter inside a sentence: English "I" and its contractions, and the words
    (names: "Tom", "Boston", "María") seen capitalised after the first word of at least `min_count` sentences and
    never in lower case there."""
    capitalised: Counter[str] = Counter()
    lower: set[str] = set()
    for pair in pairs:
        for text in pair:
            for word in _words(text)[1:]:
                if word[:1].isupper():
                    capitalised[word] += 1
                else:
                    lower.add(word.lower())
    names = {word for word, count in capitalised.items() if count >= min_count and word.lower() not in lower}
    return frozenset(names | _ALWAYS_CAPITALISED)


def _casual(text: str, keep: frozenset[str]) -> str:
    text = _CASUAL_EDGES.sub("", text)
    first = _words(text)[:1]
    return text if first and first[0] in keep and text.startswith(first[0]) else _lower_initial(text)


def casual_copies(
    pairs: Sequence[SentencePair], fraction: float, seed: int = 0, keep: frozenset[str] | None = None
) -> list[SentencePair]:
    """Copies of a `fraction` of the pairs written as users often type: no final punctuation (nor opening ¿ ¡),
    first letter lower-cased unless the first word is in `keep` (default: `capitalised_words(pairs)`, so "I"
    and names stay capitalised), on both sides ("Tengo hambre." / "I'm hungry." -> "tengo hambre" / "I'm
    hungry"). With the noun phrases, which are lower-case and unpunctuated too, they keep the model from taking
    every unpunctuated input for a phrase. The pairs are chosen by a hash of their text and `seed`, so every
    process and every resumed run picks the same ones; pairs that would not change are skipped.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction!r}.")
    keep = capitalised_words(pairs) if keep is None else keep
    copies = []
    for pair in pairs:
        digest = hashlib.blake2b(f"{seed}\t{pair.en}\t{pair.es}".encode(), digest_size=8).digest()
        if int.from_bytes(digest, "big") / 2**64 < fraction:
            casual = SentencePair(_casual(pair.en, keep), _casual(pair.es, keep))
            if casual != pair and casual.en and casual.es:
                copies.append(casual)
    return copies


def sentence_forms(phrases: Iterable[SentencePair]) -> list[SentencePair]:
    """The noun phrases written as sentences, capitalised with a final period ("El gato negro." / "The black
    cat."): without them, a noun phrase typed as a sentence comes out as one with a verb added ("The black cat
    is.")."""
    return [SentencePair(_sentence(pair.en), _sentence(pair.es)) for pair in phrases]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."
