"""`vaswani_demo.checks`: a request's text is checked once, at the door, and translated and recorded as checked
(`hf_vaswani.checked_source`)."""

from __future__ import annotations

from hf_vaswani import source_checks
from hf_vaswani.checked_source import is_checked


def test_a_demo_request_checks_its_text_once(backend, monkeypatch):
    from vaswani_demo import checks
    from vaswani_demo.checks import translation_request

    asked = []
    real = source_checks.unknown_characters

    def counted(tokenizer, text):
        asked.append(str(text))
        return real(tokenizer, text)

    monkeypatch.setattr(source_checks, "unknown_characters", counted)
    monkeypatch.setattr(checks, "unknown_characters", counted)
    runner = backend.runner
    request = translation_request(runner.choices, runner.routes, "el gato negro", "es-en", 1, 3)
    assert is_checked(request.text, "es-en") and asked == ["el gato negro"]
    assert runner.run(request).ok
    assert asked == ["el gato negro"]
