"""The lecture views' text tables ("Inside one head", positions, two sentences; vaswani_demo/lecture_texts.py): both
languages say the same things, and every text reaches the page's tables (vaswani_demo.texts) unchanged, none
shadowed by another table's."""

from __future__ import annotations

import pytest

from vaswani_demo import causes_texts, texts
from vaswani_demo.lecture_texts import MESSAGES, PAGE

OTHER = causes_texts  # the other table merged into the same page tables


@pytest.mark.parametrize(
    "table, merged, other", [(PAGE, texts.PAGE, OTHER.PAGE), (MESSAGES, texts.MESSAGES, OTHER.MESSAGES)]
)
def test_both_languages_and_the_page_tables_hold_every_text(table, merged, other):
    assert set(table) == set(texts.LANGUAGES)
    english, spanish = table["en"], table["es"]
    assert set(english) == set(spanish)
    assert all(text.strip() for language in table for text in table[language].values())
    assert not set(english) & set(other["en"])  # one owner per key: a merge would overwrite it silently
    for language in texts.LANGUAGES:
        assert {key: merged[language][key] for key in table[language]} == table[language]
