"""Tiny random-weight models for tests and benchmarks: fast on a CPU, meaningless as translators.

`tiny_config` is the one small `VaswaniConfig` the test helpers build on (d_model 32, 2 encoder and 2 decoder
layers of 4 heads, feed-forward 64, at most 64 positions, no dropout); `tiny_model` builds a seeded random model
from it, in eval mode. `vaswani_demo.testing` (the demo's model folder), `vaswani_inspect.testing` and the
tests' ``tiny_config`` use them. Nothing heavy is imported until they are called.

`TINY_PAIRS` is the one tiny corpus of the tests, benchmarks and tiny models: English-Spanish sentence pairs
written for them (no corpus data), on which every tiny tokenizer is trained; `tiny_sentences` gives both sides.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TINY_PAIRS", "TINY_SETTINGS", "tiny_config", "tiny_model", "tiny_sentences"]

#: The tiny model's settings, besides its vocabulary size.
TINY_SETTINGS: dict[str, Any] = dict(
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=64,
    dropout=0.0,
)

#: The tiny corpus: (English, Spanish) pairs written for the tests. Short sentences with capitals, accents,
#: punctuation, quotes, contractions and numbers, lower-case ones, and a word of two meanings ("banco": bank and
#: bench), enough for a Unigram or BPE trainer to learn a few hundred pieces in milliseconds.
TINY_PAIRS: tuple[tuple[str, str], ...] = (
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
    ("the black cat", "el gato negro"),
    ("the white dog", "el perro blanco"),
    ("the red house", "la casa roja"),
    ("the cat sleeps in the house", "el gato duerme en la casa"),
    ("the bank approved the loan", "el banco aprobó el crédito"),
    ("i sat on the bench in the square", "me senté en el banco de la plaza"),
    ("the children read a book", "los niños leen un libro"),
    ("she drinks cold water", "ella bebe agua fría"),
    ("we live in a big city", "nosotros vivimos en una ciudad grande"),
    ("the train arrives late today", "el tren llega tarde hoy"),
    ("my sister has two black cats", "mi hermana tiene dos gatos negros"),
    ("it is very hot in summer", "hace mucho calor en verano"),
    ("i want to learn to translate sentences", "quiero aprender a traducir frases"),
    ("the book the students were reading was difficult", "el libro que leían los estudiantes era difícil"),
    ("The cat ate the mouse.", "El gato se comió el ratón."),
    ("Where is the mouse?", "¿Dónde está el ratón?"),
    ("The girl ate bread at the station.", "La niña comió pan en la estación."),
    ("The mouse is under the table.", "El ratón está debajo de la mesa."),
    ("What did the dog eat?", "¿Qué comió el perro?"),
    ("Tomorrow I will visit my grandmother in the country.", "Mañana visitaré a mi abuela en el campo."),
)


def tiny_sentences() -> list[str]:
    """Both sides of `TINY_PAIRS`, pair by pair (English, then Spanish)."""
    return [sentence for pair in TINY_PAIRS for sentence in pair]


def tiny_config(vocab_size: int, **overrides: Any) -> Any:
    """A `VaswaniConfig` with `TINY_SETTINGS` and `vocab_size`; keyword arguments override any field."""
    from .configuration_vaswani import VaswaniConfig

    return VaswaniConfig(**{**TINY_SETTINGS, "vocab_size": vocab_size, **overrides})


def tiny_model(vocab_size: int, seed: int = 0, **overrides: Any) -> Any:
    """A small random `VaswaniForConditionalGeneration` (`tiny_config(vocab_size, **overrides)`), weights drawn
    after ``torch.manual_seed(seed)``, in eval mode."""
    import torch

    from .modeling_vaswani import VaswaniForConditionalGeneration

    config = tiny_config(vocab_size, **overrides)
    torch.manual_seed(seed)
    return VaswaniForConditionalGeneration(config).eval()
