"""Each rule shared by the packages is written in one module, which every other module reads: the empty-input
messages, the language-token pattern (``>>en<<``), the list of directions and the attention kinds."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT

PACKAGES = ("hf_vaswani", "vaswani_inspect", "vaswani_demo")


def _quoted(*words: str) -> str:
    return ", ".join(f"[\"']{word}[\"']" for word in words)


#: rule -> (what writes it, the one module allowed to).
OWNERS = {
    "empty text": (re.compile(r"whitespace only|only white space|the input is empty"), "hf_vaswani/empty_input.py"),
    "language token pattern": (re.compile(r"re\.compile\(r?[\"'][^\"']*>>"), "hf_vaswani/pipeline_vaswani.py"),
    "directions": (re.compile(r"[\"']es-en[\"'], [\"']en-es[\"']"), "hf_vaswani/languages.py"),
    "attention kinds": (
        re.compile(r"[\"']encoder[\"'], [\"']decoder[\"'], [\"']cross[\"']"),
        "vaswani_inspect/record.py",
    ),
}


def writers(pattern: re.Pattern[str]) -> list[str]:
    """The package modules whose code (comments left out) matches `pattern`."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            code = "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines())
            if pattern.search(code):
                found.append(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.parametrize("rule", OWNERS)
def test_the_rule_is_written_once(rule):
    pattern, owner = OWNERS[rule]
    assert writers(pattern) == [owner]


def test_the_scan_finds_a_second_writer(tmp_path, monkeypatch):
    import tests.test_rule_owners as module

    package = tmp_path / "hf_vaswani"
    package.mkdir()
    (package / "copy.py").write_text('DIRECTIONS = ("es-en", "en-es")\n', encoding="utf-8")
    (package / "comment.py").write_text('x = 1  # ("es-en", "en-es")\n', encoding="utf-8")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    assert writers(OWNERS["directions"][0]) == ["hf_vaswani/copy.py"]
