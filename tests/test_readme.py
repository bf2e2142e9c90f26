"""README's quick tour runs as written, on the shipped checkpoint."""

import re

import pytest

from tests.helpers import CHECKPOINT, ROOT


def quick_tour() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick tour", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "README's quick tour has no python block"
    return blocks[0]


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="the shipped checkpoint is not in this checkout")
def test_quick_tour_runs(tmp_path, monkeypatch, capsys):
    (tmp_path / "pretrained").symlink_to(ROOT / "pretrained")
    monkeypatch.chdir(tmp_path)
    exec(compile(quick_tour(), "README.md quick tour", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "cat" in printed.lower()
    assert (tmp_path / "alignment.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "cross.html").read_text()
    assert "<script" in html and "cdnjs" not in html
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?https?:", html)
