"""A foreign pair as the audit takes it (recourse.foreign.pairs) and the command line's
--model/--variant CARD refusals, on the tiny different model."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from recourse.cli import main
from recourse.foreign.adapter import ForeignClassifier, UnsupportedAttributeError
from recourse.foreign.blackbox import ZerothOrderClassifier
from recourse.foreign.pairs import BLACK_BOX_COMPONENTS, edit_basis, foreign_pair, is_card
from tests.foreign_models import save_different

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_differentiable_pair(tmp_path: Path) -> None:
    model = save_different(tmp_path / "fp", "safetensors")
    variant = save_different(tmp_path / "q", "torch-export")
    pair = foreign_pair(model, variant, "Smiling")
    assert isinstance(pair.teacher, ForeignClassifier) and pair.black_box is None
    assert pair.student.twin is pair.student.decider and pair.student.kind == "twin"
    x = torch.rand(1, 3, 64, 64, requires_grad=True)
    pair.student.twin(x)[0, 31].backward()
    assert x.grad.abs().sum() > 0


@pytest.mark.slow
def test_black_box_variant_gets_a_zeroth_order_twin(tmp_path: Path) -> None:
    model = save_different(tmp_path / "fp", "torch-export")
    variant = save_different(tmp_path / "q", "onnx")
    pair = foreign_pair(model, variant, "Young")
    assert isinstance(pair.student.twin, ZerothOrderClassifier) and pair.black_box is pair.student.twin
    assert pair.student.kind == "integer" and isinstance(pair.student.decider, ForeignClassifier)
    x = torch.rand(1, 3, 64, 64, requires_grad=True)
    pair.student.twin(x)[0, 39].backward()
    # the gradient is estimated in the committed generator's face basis: 2 passes a component
    assert x.grad is not None and pair.black_box.forward_passes == 1 + 2 * BLACK_BOX_COMPONENTS
    assert pair.black_box.basis.shape == (BLACK_BOX_COMPONENTS, 3, 64, 64)


def test_edit_basis_is_the_face_basis_or_smooth_changes_without_one() -> None:
    components = torch.linalg.qr(torch.randn(3 * 32 * 32, 10, dtype=torch.float64))[0].T.float()
    autoencoder = SimpleNamespace(components=components, config=SimpleNamespace(resolution=32))
    basis = edit_basis(SimpleNamespace(autoencoder=autoencoder), k=4)
    flat = basis.reshape(4, -1).double()
    assert basis.shape == (4, 3, 32, 32)  # at the generator's resolution, that of the images it edits
    assert torch.allclose(flat @ flat.T, torch.eye(4, dtype=torch.float64), atol=1e-5)
    assert edit_basis(SimpleNamespace(autoencoder=autoencoder)).shape[0] == 10  # at most all of them
    assert edit_basis(SimpleNamespace(autoencoder=None)).shape == (3 * 8 * 8, 3, 64, 64)


@pytest.mark.slow
def test_attribute_either_model_lacks_is_refused(tmp_path: Path) -> None:
    variant = save_different(tmp_path / "q", "onnx")
    with pytest.raises(UnsupportedAttributeError, match="does not predict Eyeglasses"):
        foreign_pair(save_different(tmp_path / "fp", "onnx"), variant, "Eyeglasses")


def test_is_card(tmp_path: Path) -> None:
    folder = save_different(tmp_path / "m", "onnx")
    assert is_card(folder) and is_card(folder / "recourse-card.json")
    assert not is_card(tmp_path / "nothing") and not is_card(None) and not is_card(folder / "model.onnx")


@pytest.mark.slow
def test_command_line_refuses_model_without_variant_card(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = save_different(tmp_path / "m", "onnx")
    code = main(["audit", str(tmp_path / "face.png"), "--model", str(folder), "--variant", "ptq-int8",
                 "--attribute", "Smiling"])
    assert code == 2 and "--model needs --variant to be a model card too" in capsys.readouterr().err
    code = main(["audit", str(tmp_path / "face.png"), "--variant", str(folder), "--attribute", "Eyeglasses"])
    assert code == 2 and "does not predict Eyeglasses; it predicts Male, Smiling, Young" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("variant_format", ["torch-export", "onnx"])
def test_scan_ranks_a_folder_for_a_foreign_pair(tmp_path: Path, hq_folder, variant_format: str,
                                                capsys: pytest.CaptureFixture) -> None:
    """`recourse scan --model CARD --variant CARD`: the failure finder on an auditor's own pair
    (differentiable, and a black box whose forward passes are reported), with the committed generator."""
    root, _ = hq_folder
    model = save_different(tmp_path / "fp", "safetensors")
    variant = save_different(tmp_path / "q", variant_format)
    out = tmp_path / "scan.json"
    code = main(["scan", str(root), "--model", str(model), "--variant", str(variant), "--attribute", "Young",
                 "--count", "2", "--edit-steps", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "2 ranked, 0 skipped" in printed and "for different, Young" in printed
    record = json.loads(out.read_text())
    assert {case["file"] for case in record["audited"]} == {"27000.jpg", "27001.jpg"}  # --top 20 audits both
    assert ("is a black box" in printed) == (variant_format == "onnx")
    assert (record["black_box_forward_passes"] is not None) == (variant_format == "onnx")


@pytest.mark.slow
def test_scan_refuses_an_attribute_the_foreign_model_lacks(tmp_path: Path, hq_folder,
                                                          capsys: pytest.CaptureFixture) -> None:
    root, _ = hq_folder
    variant = save_different(tmp_path / "q", "onnx")
    code = main(["scan", str(root), "--variant", str(variant), "--attribute", "Eyeglasses"])
    assert code == 2 and "does not predict Eyeglasses" in capsys.readouterr().err
