"""Each loader (torch.export, safetensors for each shipped architecture, ONNX Runtime float and
int8, a local folder, a Hugging Face hub id resolved by snapshot_download from a local cache),
and the models that do not match their cards (output count, input size, digest, missing file)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.foreign.adapter import ForeignClassifier
from recourse.foreign.export import export_onnx, quantize_onnx_static, quantize_program_pt2e, save_program
from recourse.foreign.loaders import (ForeignModelError, OnnxRuntimeModel, OutputCountError, load_foreign,
                                      onnx_session)
from tests.foreign_models import (DIFFERENT_ATTRIBUTES, different_card, different_model, reference_logits,
                                  save_different, write_card_file)

# the TorchScript-based ONNX exporter warns that it is deprecated; it is the one that needs no onnxscript
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.slow
@pytest.mark.parametrize("fmt, runtime", [("torch-export", "torch.export"), ("safetensors", "torch (safetensors)"),
                                          ("onnx", "onnxruntime")])
def test_each_loader_gives_the_model(tmp_path: Path, fmt: str, runtime: str) -> None:
    model = different_model()
    loaded = load_foreign(save_different(tmp_path, fmt, model))
    assert loaded.runtime == runtime and loaded.differentiable == (fmt != "onnx") and not loaded.quantized
    x = torch.rand(5, 3, 96, 96)
    with torch.no_grad():
        expected = model(x)
    assert torch.allclose(loaded.model(x), expected, atol=1e-5)
    if fmt != "onnx":
        assert torch.equal(loaded.model(x), expected)  # the very same float ops


def test_attribute_classifier_from_safetensors(tmp_path: Path) -> None:
    config = ClassifierConfig(widths=(8, 16), mean=(0.5, 0.4, 0.3), std=(0.3, 0.3, 0.3))
    torch.manual_seed(1)
    model = AttributeClassifier(config).eval()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "model.safetensors"))
    card = {"format": "safetensors", "weights": "model.safetensors",
            "architecture": {"name": "AttributeClassifier",
                             "config": {"widths": [8, 16], "mean": [0.5, 0.4, 0.3], "std": [0.3, 0.3, 0.3]}},
            "input": {"size": 64}, "output": {"kind": "logits", "attributes": list(config.attributes)}}
    write_card_file(tmp_path, card)
    classifier = ForeignClassifier(load_foreign(tmp_path))
    x = torch.rand(3, 3, 64, 64)
    assert torch.equal(classifier(x), model(x).detach())  # identity adapter: 64×64, [0, 1], CelebA order
    assert len(classifier.supported_attributes) == 40


def test_safetensors_weights_that_do_not_fit_the_architecture(tmp_path: Path) -> None:
    save_different(tmp_path, "safetensors")
    card = json.loads((tmp_path / "recourse-card.json").read_text())
    card["architecture"]["config"]["widths"] = [6, 12, 24]
    write_card_file(tmp_path, card)
    with pytest.raises(ForeignModelError, match="does not match architecture PlainConvNet"):
        load_foreign(tmp_path)


def test_nan_weights_refused(tmp_path: Path) -> None:
    model = different_model()
    with torch.no_grad():
        model.head.bias[0] = float("nan")
    save_different(tmp_path, "safetensors", model)
    with pytest.raises(ForeignModelError, match="head.bias holds NaN"):
        load_foreign(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["torch-export", "onnx", "safetensors"])
def test_output_count_not_matching_the_card(tmp_path: Path, fmt: str) -> None:
    save_different(tmp_path, fmt)
    card = json.loads((tmp_path / "recourse-card.json").read_text())
    card["output"]["attributes"] = ["Young", "Smiling"]  # the model has 3 outputs
    write_card_file(tmp_path, card)
    with pytest.raises(OutputCountError) as error:
        load_foreign(tmp_path)
    assert "returns 3 numbers per image" in str(error.value) and "lists 2 attributes" in str(error.value)
    card["output"] = {"kind": "pair-probabilities", "attributes": ["Young", "Smiling", "Male"]}  # 6 expected
    write_card_file(tmp_path, card)
    with pytest.raises(OutputCountError, match=r"3 attributes as 'pair-probabilities' \(6 numbers\)"):
        load_foreign(tmp_path)


def test_input_size_not_matching_the_model(tmp_path: Path) -> None:
    """A static ONNX input of another size is refused from the graph, before any run."""
    save_different(tmp_path, "onnx")
    model = different_model()
    torch.onnx.export(model, (torch.rand(1, 3, 96, 96),), str(tmp_path / "model.onnx"), dynamo=False)  # static
    card = json.loads((tmp_path / "recourse-card.json").read_text())
    card["input"]["size"] = [64, 64]
    write_card_file(tmp_path, card)
    with pytest.raises(ForeignModelError, match=r"has shape \[1, 3, 96, 96\] but its card says NCHW \[3, 64, 64\]"):
        load_foreign(tmp_path)


def test_static_batch_onnx_runs_in_chunks(tmp_path: Path) -> None:
    save_different(tmp_path, "onnx")
    model = different_model()
    torch.onnx.export(model, (torch.rand(2, 3, 96, 96),), str(tmp_path / "model.onnx"), dynamo=False)  # batch 2
    classifier = ForeignClassifier(load_foreign(tmp_path))
    assert classifier.loaded.fixed_batch == 2
    images = torch.rand(5, 3, 64, 64)
    assert torch.allclose(classifier.model_logits(images), reference_logits(model, images), atol=1e-4)


def test_digest_and_missing_file(tmp_path: Path) -> None:
    save_different(tmp_path, "onnx")
    card = json.loads((tmp_path / "recourse-card.json").read_text())
    card["sha256"] = hashlib.sha256((tmp_path / "model.onnx").read_bytes()).hexdigest()
    write_card_file(tmp_path, card)
    load_foreign(tmp_path)
    card["sha256"] = "0" * 64
    write_card_file(tmp_path, card)
    with pytest.raises(ForeignModelError, match="SHA-256 is not the one"):
        load_foreign(tmp_path)
    (tmp_path / "model.onnx").unlink()
    with pytest.raises(ForeignModelError, match="weights file named by .* is missing"):
        load_foreign(tmp_path)


def test_not_a_model_file(tmp_path: Path) -> None:
    save_different(tmp_path, "torch-export")
    (tmp_path / "model.pt2").write_bytes(b"PK not a program")
    with pytest.raises(ForeignModelError, match="not a loadable torch.export program"):
        load_foreign(tmp_path)
    save_different(tmp_path, "onnx")
    (tmp_path / "model.onnx").write_bytes(b"garbage")
    with pytest.raises(ForeignModelError, match="ONNX Runtime cannot load it"):
        load_foreign(tmp_path)


def test_onnx_with_two_outputs_needs_output_name(tmp_path: Path) -> None:
    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = different_model()

        def forward(self, x):
            p = self.net(x)
            return p, p * 2

    save_different(tmp_path, "onnx")
    torch.onnx.export(Two().eval(), (torch.rand(1, 3, 96, 96),), str(tmp_path / "model.onnx"), dynamo=False,
                      input_names=["images"], output_names=["probs", "other"], dynamic_axes={"images": {0: "b"}})
    with pytest.raises(ForeignModelError, match="has 2 outputs .*name the one to read in output.name"):
        load_foreign(tmp_path)
    card = json.loads((tmp_path / "recourse-card.json").read_text())
    card["output"]["name"] = "probs"
    write_card_file(tmp_path, card)
    assert load_foreign(tmp_path).model.output_name == "probs"


def _hub_cache(cache: Path, repo_id: str, files: Path, commit: str = "a" * 40) -> None:
    """A Hugging Face cache as snapshot_download leaves it: refs/main → snapshots/<commit>/."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for file in files.iterdir():
        (snapshot / file.name).write_bytes(file.read_bytes())


def test_hub_id_through_snapshot_download(tmp_path: Path) -> None:
    model = different_model()
    save_different(tmp_path / "saved", "onnx", model)
    _hub_cache(tmp_path / "hub", "auditor/different-int8", tmp_path / "saved")
    for source in ("auditor/different-int8", "hf:auditor/different-int8@main"):
        loaded = load_foreign(source, cache_dir=tmp_path / "hub", local_files_only=True)
        assert loaded.card.folder.parent.name == "snapshots" and loaded.runtime == "onnxruntime"
    with pytest.raises(ForeignModelError, match="hub model 'auditor/other': could not be fetched"):
        load_foreign("auditor/other", cache_dir=tmp_path / "hub", local_files_only=True)


def test_local_folder_and_card_file(tmp_path: Path) -> None:
    save_different(tmp_path, "torch-export")
    assert load_foreign(tmp_path).card.source == str(tmp_path / "recourse-card.json")
    assert load_foreign(tmp_path / "recourse-card.json").runtime == "torch.export"


def _calibration() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(8, 3, 96, 96, generator=generator) for _ in range(3)]


@pytest.fixture(scope="module")
def quantized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module, list[torch.Tensor]]:
    """The different model quantized to int8 by ONNX Runtime's static quantizer."""
    folder = tmp_path_factory.mktemp("quantized")
    model, calibration = different_model(), _calibration()
    export_onnx(model, calibration[0], folder / "float.onnx")
    quantize_onnx_static(folder / "float.onnx", folder / "model.int8.onnx", calibration)
    return folder, model, calibration


@pytest.fixture(scope="module")
def torchao_program(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """The different model quantized to int8 by torchao's pt2e flow (an optional dependency:
    pip install ".[export]")."""
    pytest.importorskip("torchao", reason="torchao is optional (pip install \".[export]\"); the straight-through "
                                          "form is also tested without it")
    folder = tmp_path_factory.mktemp("pt2e")
    model, calibration = different_model(), _calibration()
    torch.export.save(quantize_program_pt2e(model, calibration[0], calibration), str(folder / "model.int8.pt2"))
    return folder, model


def test_onnx_runtime_int8_matches_its_runtime(quantized, tmp_path: Path) -> None:
    folder, model, _ = quantized
    write_card_file(tmp_path, different_card("onnx", "model.int8.onnx"))
    (tmp_path / "model.int8.onnx").write_bytes((folder / "model.int8.onnx").read_bytes())
    loaded = load_foreign(tmp_path)
    assert loaded.quantized and not loaded.differentiable and isinstance(loaded.model, OnnxRuntimeModel)
    x = torch.randn(7, 3, 96, 96)
    runtime = onnx_session(str(folder / "model.int8.onnx")).run(None, {"images": x.numpy()})[0]
    assert np.array_equal(loaded.model(x).numpy(), runtime)  # bit for bit
    assert 0 < np.abs(runtime - model(x).detach().numpy()).max() < 0.1  # really quantized, still close


class _HandQuantized(torch.nn.Module):
    """int8 activations written with the same q/dq ops convert_pt2e leaves in a program."""

    def __init__(self) -> None:
        super().__init__()
        self.net = different_model()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qd = torch.ops.quantized_decomposed
        x = qd.dequantize_per_tensor(qd.quantize_per_tensor(x, 0.02, 0, -128, 127, torch.int8), 0.02, 0, -128, 127,
                                     torch.int8)
        features = self.net.features(x)
        features = qd.dequantize_per_tensor(qd.quantize_per_tensor(features, 0.05, 3, 0, 255, torch.uint8), 0.05, 3,
                                            0, 255, torch.uint8)
        return torch.sigmoid(self.net.head(features.mean(dim=(2, 3))))


@pytest.mark.slow
def test_quantized_program_gets_a_straight_through_form(tmp_path: Path) -> None:
    """Without torchao: a program with quantize→dequantize pairs loads differentiable, with the
    very same values, and its gradient is the float model's wherever nothing was clipped."""
    import recourse.foreign.straight_through  # noqa: F401  (registers the q/dq ops)

    model = _HandQuantized().eval()
    save_program(model, torch.rand(2, 3, 96, 96), tmp_path / "model.pt2")
    write_card_file(tmp_path, different_card("torch-export", "model.pt2"))
    plain = torch.export.load(str(tmp_path / "model.pt2")).module()
    x = torch.rand(2, 3, 96, 96, requires_grad=True)
    out = plain(x)  # as converted: the int8 tensor stops autograd before the input
    assert not out.requires_grad or torch.autograd.grad(out.sum(), x, allow_unused=True)[0] is None
    loaded = load_foreign(tmp_path)
    assert loaded.quantized and loaded.differentiable
    assert torch.equal(loaded.model(x).detach(), plain(x.detach()))
    loaded.model(x)[:, 0].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    reference = x.detach().clone().requires_grad_()
    model.net(reference)[:, 0].sum().backward()  # the float model: gradients agree closely
    cosine = torch.nn.functional.cosine_similarity(x.grad.flatten(), reference.grad.flatten(), dim=0)
    assert cosine > 0.9, cosine


def test_pt2e_program_is_differentiable_and_exact(torchao_program, tmp_path: Path) -> None:
    folder, model = torchao_program
    write_card_file(tmp_path, different_card("torch-export", "model.int8.pt2"))
    (tmp_path / "model.int8.pt2").write_bytes((folder / "model.int8.pt2").read_bytes())
    loaded = load_foreign(tmp_path)
    assert loaded.quantized and loaded.differentiable
    x = torch.randn(6, 3, 96, 96)
    plain = torch.export.load(str(folder / "model.int8.pt2")).module()  # q/dq as converted
    assert torch.equal(loaded.model(x).detach(), plain(x).detach())  # straight-through form: same values
    xg = x.clone().requires_grad_()
    loaded.model(xg)[:, 1].sum().backward()
    reference = x.clone().requires_grad_()
    model(reference)[:, 1].sum().backward()
    cosine = torch.nn.functional.cosine_similarity(xg.grad.flatten(), reference.grad.flatten(), dim=0)
    assert cosine > 0.8, cosine  # the straight-through gradient is close to the float model's
