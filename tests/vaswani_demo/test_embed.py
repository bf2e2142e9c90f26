"""The bertviz pages as the demo embeds them (`vaswani_demo.embed`): on the Spanish page, bertviz's own words that
the demo controls (the model view's axes, a thumbnail's title, the note shown while it draws) are Spanish; and the
frame says it is drawing before the page can."""

from __future__ import annotations

import pytest

from vaswani_demo import drawing
from vaswani_demo.embed import DRAWING_NOTES, localised_view
from vaswani_inspect.views import DRAWING_NOTE, head_view_html, model_view_html


@pytest.mark.parametrize("view", [head_view_html, model_view_html])
def test_bertviz_words_follow_the_page_language(record, view):
    english = view(record, "encoder")
    spanish = localised_view(english, "es")
    assert DRAWING_NOTE not in spanish.split("<body>", 1)[1] and "Dibujando la vista…" in spanish
    assert localised_view(english, "en").count(DRAWING_NOTE) == english.count(DRAWING_NOTE) >= 1
    if view is model_view_html:
        for told in ('.text("Heads")', '.text("Layers")', "'Layer ' +", '", Head "'):
            assert told in english and told not in spanish, told
        assert '.text("Cabezas")' in spanish and '.text("Capas")' in spanish and '", cabeza "' in spanish


def test_the_frame_says_it_is_drawing_until_the_page_paints(record):
    """Behind the frame, in the page's language: what shows while the page reads its libraries, before its own
    note can."""
    from urllib.parse import quote

    for language in ("en", "es"):
        frame = drawing.view(record, "model", "encoder", language)
        assert "data:image/svg+xml," in frame and quote(DRAWING_NOTES[language]) in frame
    assert "html { background: #fff; }" in localised_view(model_view_html(record, "encoder"), "es")
