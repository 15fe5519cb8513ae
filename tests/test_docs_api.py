"""docs/api.md runs as written: its ```python blocks, in order, in one namespace, in a fresh
folder that sees the repository's assets/ (as a reader at the repository's root does), with the
committed models."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def test_the_blocks_are_found():
    blocks = python_blocks("intro\n```python\na = 1\n```\ntext\n```bash\nls\n```\n```python\nb = a\n```\n")
    assert blocks == ["a = 1\n", "b = a\n"]


@pytest.mark.requires("committed_variants")
@pytest.mark.slow
def test_the_api_page_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 4
    (tmp_path / "assets").symlink_to(ROOT / "assets")  # the page's paths are the repository's
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{PAGE.name}, python block {number}", "exec"), namespace)
    printed = capsys.readouterr().out
    result = namespace["result"]
    assert result.verdict in printed and result.predictions.variant == "ptq-int4"
    assert json.loads((tmp_path / "audit.json").read_text())["verdict"] == result.verdict
    assert "Grace Hopper" in (tmp_path / "audit.html").read_text()
    assert namespace["own"].predictions.variant == "my-int4" and "my-int4 integer" in printed
    assert namespace["scan"].summary() in printed and len(namespace["scan"].audited) == 1
