"""Tiny hand-written English–Spanish pairs and a tiny tokenizer trained on them, shared by the tests.

The sentences are written for these tests (no corpus data), short and varied enough to exercise accents,
inverted punctuation, quotes, numbers and contractions.
"""

from __future__ import annotations

from functools import lru_cache

from transformers import PreTrainedTokenizerFast

from hf_vaswani.tokenization import train_tokenizer

PAIRS: list[tuple[str, str]] = [
    ("The black cat sleeps.", "El gato negro duerme."),
    ("The white dog runs in the park.", "El perro blanco corre en el parque."),
    ("What is that?", "¿Qué es eso?"),
    ("Hello!", "¡Hola!"),
    ("Where is the station?", "¿Dónde está la estación?"),
    ("I don't know.", "No lo sé."),
    ("She doesn't eat meat.", "Ella no come carne."),
    ('He said "yes".', 'Él dijo "sí".'),
    ("I have 3 brothers and 12 cousins.", "Tengo 3 hermanos y 12 primos."),
    ("The boy reads a book.", "El niño lee un libro."),
    ("We live in a small town.", "Vivimos en un pueblo pequeño."),
    ("It costs 25 euros.", "Cuesta 25 euros."),
    ("My mother is a teacher.", "Mi madre es profesora."),
    ("Open the window, please.", "Abre la ventana, por favor."),
    ("The train leaves at 8.", "El tren sale a las 8."),
    ("Do you speak Spanish?", "¿Hablas español?"),
    ("I'm hungry.", "Tengo hambre."),
    ("They're at home.", "Están en casa."),
    ("The coffee is very hot.", "El café está muy caliente."),
    ("Tomorrow is Monday.", "Mañana es lunes."),
    ("The penguin swims.", "El pingüino nada."),
    ("I like green apples.", "Me gustan las manzanas verdes."),
    ("Why are you sad?", "¿Por qué estás triste?"),
    ("Good morning, Tom!", "¡Buenos días, Tom!"),
    ("The old tree fell.", "El árbol viejo se cayó."),
    ("We can't go today.", "No podemos ir hoy."),
    ("Her name is María.", "Se llama María."),
    ("The sea is blue.", "El mar es azul."),
    ("Read this sentence aloud.", "Lee esta oración en voz alta."),
    ("Is it raining?", "¿Está lloviendo?"),
]

TINY_VOCAB_SIZE = 300


@lru_cache(maxsize=1)
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A Unigram tokenizer with a vocabulary of at most 300 pieces, trained on both sides of `PAIRS`.

    Cached: do not modify the returned tokenizer in a test.
    """
    return train_tokenizer([text for pair in PAIRS for text in pair], vocab_size=TINY_VOCAB_SIZE)
