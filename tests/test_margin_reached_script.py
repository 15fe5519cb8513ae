"""recourse margin-reached: whether the teacher's recourse reaches the stated margin."""

import json

import pytest
import torch

from recourse.caches import write_tensors
from recourse.benchmark import margin_reached
from recourse.cli import main


def _part(folder, start, logit, target, valid):
    (folder / "cache").mkdir(parents=True, exist_ok=True)
    write_tensors(folder / "cache" / f"fp32-{start:06d}-abc.safetensors",
                  {"logit": torch.tensor(logit), "target": torch.tensor(target), "valid": torch.tensor(valid),
                   "cost": torch.zeros(len(logit))}, {"tasks": len(logit), "first_task": start, "fingerprint": "abc"})


def test_it_counts_valid_recourses_past_the_margin_towards_their_target(tmp_path):
    # target 0 wants a negative logit: -2.5 is 2.5 past the boundary, 1.5 falls short
    _part(tmp_path, 0, [2.0004, -2.5, 1.5], [1, 0, 1], [True, True, True])
    _part(tmp_path, 3, [9.0, -1.0], [1, 1], [False, True])  # the invalid one is left out
    found = margin_reached.margin_reached(tmp_path, margin=2.0)
    assert (found.chunks, found.tasks, found.valid, found.reached) == (2, 5, 4, 2)
    assert found.minimum == pytest.approx(-1.0) and found.maximum == pytest.approx(2.5)
    assert main(["margin-reached", str(tmp_path), "--margin", "2", "--json", str(tmp_path / "m.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["reached"] == 2


def test_a_folder_without_a_cache_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no cached teacher parts"):
        margin_reached.margin_reached(tmp_path, margin=2.0)


def test_a_damaged_part_is_refused(tmp_path):
    _part(tmp_path, 0, [2.0], [1], [True])
    path = next((tmp_path / "cache").glob("*.safetensors"))
    data = bytearray(path.read_bytes())
    data[-4:] = bytes(b ^ 0xFF for b in data[-4:])  # the last tensor bytes change: the checksum no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match="damaged"):
        margin_reached.margin_reached(tmp_path, margin=2.0)
