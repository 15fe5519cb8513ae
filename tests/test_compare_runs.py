import json

import torch
from safetensors.torch import save_file

from scripts.measurements import compare_runs


def _run(folder, teacher_value: float, cost: float) -> None:
    cache = folder / "cache"
    cache.mkdir(parents=True)
    save_file({"counterfactuals": torch.full((2, 3, 4, 4), teacher_value), "cost": torch.tensor([0.1, 0.2])},
              str(cache / "fp32-000000-abc.safetensors"))
    record = {"accepts_teacher": True, "valid": False, "cost": cost, "cosine": 0.5, "logit": 1.0, "partial": [0.1, 0.2]}
    (cache / "ptq-int4-000000-def.json").write_text(json.dumps({"records": [record, record]}))


def test_identical_runs_pass_and_a_changed_part_fails(tmp_path, capsys):
    _run(tmp_path / "a", 0.5, 0.1)
    _run(tmp_path / "b", 0.5, 0.1)
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "teacher parts compared: 1; largest difference: 0" in capsys.readouterr().out
    _run(tmp_path / "c", 0.5, 0.125)
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "student parts compared: 1; largest difference: 0.025" in capsys.readouterr().out
