"""Noun-phrase pairs mined from training sentences (hf_vaswani.data.phrases)."""

import itertools
import re

from hf_vaswani.data import SentencePair
from hf_vaswani.data.phrases import build_lexicon, mine_noun_phrase_pairs

NOUNS = [("cat", "gato"), ("dog", "perro"), ("horse", "caballo"), ("bird", "pájaro")]
COLOURS = [("black", "negro"), ("white", "blanco"), ("brown", "marrón"), ("grey", "gris")]
VERBS = [("sleeps", "duerme"), ("runs", "corre"), ("eats", "come")]


def training_corpus() -> list[SentencePair]:
    pairs = []
    for (noun_en, noun_es), (colour_en, colour_es), (verb_en, verb_es) in itertools.product(NOUNS, COLOURS, VERBS):
        pairs.append(SentencePair(f"The {colour_en} {noun_en} {verb_en}.", f"El {noun_es} {colour_es} {verb_es}."))
        pairs.append(SentencePair(f"Tom has a {colour_en} {noun_en}.", f"Tom tiene un {noun_es} {colour_es}."))
    for (noun_en, noun_es), (verb_en, verb_es) in itertools.product(NOUNS, VERBS):
        pairs.append(SentencePair(f"My {noun_en} {verb_en} a lot.", f"Mi {noun_es} {verb_es} mucho."))
    for noun_en, noun_es in NOUNS:
        pairs.append(SentencePair(f"I love my {noun_en}.", f"Quiero a mi {noun_es}."))
    return pairs


def test_lexicon_pairs_words_that_translate_and_nothing_else():
    lexicon = build_lexicon(training_corpus())
    for english, spanish in NOUNS + COLOURS + VERBS:
        assert (spanish, english) in lexicon
    assert ("gato", "black") not in lexicon and ("negro", "cat") not in lexicon
    assert not any(s in {"el", "un", "mi"} or e in {"the", "a", "my"} for s, e in lexicon)


def test_mines_reordered_noun_phrases_and_bare_nouns_but_not_subject_verb_spans():
    mined = mine_noun_phrase_pairs(training_corpus())
    assert SentencePair("the black cat", "el gato negro") in mined
    assert SentencePair("a white horse", "un caballo blanco") in mined
    assert SentencePair("my dog", "mi perro") in mined
    assert not any(verb_es in pair.es.split() for pair in mined for _, verb_es in VERBS)
    for pair in mined:
        for text in pair:
            assert text == text.strip() and text[0].islower() and not re.search(r"[.,!?¿¡]", text)


def test_every_phrase_is_in_one_input_pair_and_max_pairs_keeps_the_most_frequent():
    corpus = training_corpus()
    mined = mine_noun_phrase_pairs(corpus)
    for phrase in mined:
        assert any(phrase.en.lower() in pair.en.lower() and phrase.es.lower() in pair.es.lower() for pair in corpus), (
            phrase
        )
    assert len(set(p.es for p in mined)) == len(mined)  # one English translation per Spanish phrase
    top = mine_noun_phrase_pairs(corpus, max_pairs=4)
    assert len(top) == 4 and set(top) <= set(mined)
    # "mi gato" (in 4 sentences) beats "el gato negro" (3) and "un gato negro" (1).
    assert {SentencePair(f"my {en}", f"mi {es}") for en, es in NOUNS} == set(top)


def test_no_pairs_no_phrases():
    assert mine_noun_phrase_pairs([]) == []
    assert mine_noun_phrase_pairs([SentencePair("Hello.", "Hola.")]) == []


def test_casual_copies_are_lowercase_unpunctuated_deterministic_and_about_the_fraction():
    from hf_vaswani.data.phrases import casual_copies

    pairs = [SentencePair(f"Is {i} a number?", f"¿Es {i} un número?") for i in range(2000)]
    copies = casual_copies(pairs, 0.1, seed=0)
    assert 150 < len(copies) < 250
    assert copies == casual_copies(list(reversed(pairs)), 0.1, seed=0)[::-1]  # chosen by content, not position
    assert copies != casual_copies(pairs, 0.1, seed=1)
    first = copies[0]
    number = first.en.split()[1]
    assert first == SentencePair(f"is {number} a number", f"es {number} un número")
    assert all(copy.en.startswith("is ") for copy in copies)
    assert casual_copies(pairs, 0.0) == []
    assert casual_copies([SentencePair("the black cat", "el gato negro")], 1.0) == []  # nothing to change


def test_casual_copies_keep_i_and_names_capitalised():
    from hf_vaswani.data.phrases import capitalised_words, casual_copies

    pairs = [
        SentencePair("I'm hungry.", "Tengo hambre."),
        SentencePair("Tom is here.", "Tom está aquí."),
        SentencePair("I saw Tom.", "Vi a Tom."),
        SentencePair("Ask Tom.", "Pregúntale a Tom."),
        SentencePair("The cat sleeps.", "El gato duerme."),
        SentencePair("I think the cat sleeps.", "Creo que el gato duerme."),
    ]
    keep = capitalised_words(pairs)
    assert {"Tom", "I", "I'm"} <= keep and "The" not in keep and "El" not in keep
    copies = casual_copies(pairs, 1.0)
    assert SentencePair("I'm hungry", "tengo hambre") in copies
    assert SentencePair("Tom is here", "Tom está aquí") in copies
    assert SentencePair("the cat sleeps", "el gato duerme") in copies


def test_noun_phrases_as_sentences():
    from hf_vaswani.data.phrases import sentence_forms

    assert sentence_forms([SentencePair("the black cat", "el gato negro")]) == [
        SentencePair("The black cat.", "El gato negro.")
    ]
