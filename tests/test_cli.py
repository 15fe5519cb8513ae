import json

import pytest
import torch

from recourse.checkpoints import read_config, save_classifier
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.cli import main


@pytest.fixture
def tiny_checkpoint(tmp_path):
    torch.manual_seed(0)
    directory = tmp_path / "ckpt"
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), directory, {})
    return directory


def test_evaluate_writes_per_attribute_accuracy_and_baseline(hq_folder, tiny_checkpoint, tmp_path, capsys):
    root, labels = hq_folder
    out = tmp_path / "out.json"
    code = main(["evaluate", "--data", str(root), "--split", "test", "--checkpoint", str(tiny_checkpoint),
                 "--json", str(out), "--no-cache"])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["n_images"] == 3 and len(report["per_attribute"]) == 40
    per_attribute = list(report["per_attribute"].values())
    assert report["mean_accuracy"] == pytest.approx(sum(per_attribute) / 40, abs=0.01)
    assert 0 <= report["majority_baseline_mean"] <= 100
    assert "MEAN" in capsys.readouterr().out


def test_evaluate_all_on_original_celeba_layout(celeba_folder, tiny_checkpoint, tmp_path, capsys):
    root, _ = celeba_folder
    out = tmp_path / "out.json"
    assert main(["evaluate", "--data", str(root), "--split", "all", "--checkpoint", str(tiny_checkpoint),
                 "--json", str(out), "--no-cache"]) == 0
    assert json.loads(out.read_text())["n_images"] == 5
    assert "fixed crop" in capsys.readouterr().out  # noise photos have no face: the layout's crop is used


def test_train_classifier_cli_writes_a_documented_checkpoint(hq_folder, tmp_path):
    root, _ = hq_folder
    out = tmp_path / "trained"
    code = main(["train-classifier", "--data", str(root), "--preset", "oracle", "--epochs", "1",
                 "--out", str(out), "--state", str(tmp_path / "state.pt"), "--no-cache"])
    assert code == 0
    config = read_config(out)
    for key in ("widths", "resolution", "attributes", "mean", "std", "training_command", "data_split",
                "training_seconds", "test_accuracy", "history"):
        assert key in config, key
    assert config["role"] == "oracle" and config["activation"] == "silu"
    assert config["training_command"].startswith("python -m recourse train-classifier")


@pytest.mark.parametrize("args, message", [
    (["evaluate", "--data", "/nonexistent"], "not a CelebA folder"),
    (["evaluate", "--data", ".", "--checkpoint", "/nonexistent"], "checkpoint config not found"),
])
def test_errors_are_one_clear_line(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_counterfactual_command_writes_three_panels(tmp_path, capsys):
    import numpy as np
    from PIL import Image

    from recourse.generation import LatentDenoiser, LatentFaceGenerator, default_scheduler, fit_pca_autoencoder

    torch.manual_seed(0)
    faces = (np.random.default_rng(0).random((20, 3, 16, 16)) * 255).astype(np.uint8)
    LatentFaceGenerator(fit_pca_autoencoder(faces, 4), LatentDenoiser(4, 8, 1), default_scheduler()).save_pretrained(tmp_path / "gen")
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), tmp_path / "clf", {})
    Image.fromarray(faces[0].transpose(1, 2, 0)).save(tmp_path / "face.png")
    code = main(["counterfactual", str(tmp_path / "face.png"), "--attribute", "Smiling", "--out", str(tmp_path / "cf.png"),
                 "--checkpoint", str(tmp_path / "clf"), "--generator", str(tmp_path / "gen"), "--no-align", "--steps", "4"])
    assert code == 0
    assert Image.open(tmp_path / "cf.png").size == (3 * 16 * 4 + 8, 16 * 4)
    assert "Smiling: p =" in capsys.readouterr().out


def test_counterfactual_command_rejects_unknown_attribute_and_faceless_photo(tmp_path, capsys):
    from PIL import Image

    Image.new("RGB", (200, 200), (128, 128, 128)).save(tmp_path / "wall.png")
    assert main(["counterfactual", str(tmp_path / "wall.png"), "--attribute", "Smile", "--out", str(tmp_path / "x.png")]) == 2
    assert "unknown attribute 'Smile'" in capsys.readouterr().err
    save_classifier(AttributeClassifier(ClassifierConfig(widths=(4,), resolution=16)), tmp_path / "clf", {})
    code = main(["counterfactual", str(tmp_path / "wall.png"), "--attribute", "Smiling", "--out", str(tmp_path / "x.png"),
                 "--checkpoint", str(tmp_path / "clf")])
    assert code == 2
    assert "no face found" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_quantize_command_saves_a_loadable_variant(hq_folder, tiny_checkpoint, tmp_path):
    from recourse.compression import load_variant

    root, _ = hq_folder
    code = main(["quantize", "--method", "ptq-int8", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 "--calibration-images", "3", "--out", str(tmp_path / "variant"), "--no-cache"])
    assert code == 0
    variant = load_variant(tmp_path / "variant")
    assert variant.integer is not None and variant.details["command"].startswith("python -m recourse quantize")


def test_quantize_cf_ptq_makes_the_teachers_recourse_points_once(hq_folder, tiny_checkpoint, tmp_path, tiny_generator,
                                                                 monkeypatch):
    import recourse.compression.recourse_points as recourse_points
    from recourse.compression import load_variant

    calls = []

    def fake_points(model, images, config, generator, progress):
        # the generator's quality is tested in test_recourse_points; here: the CLI's wiring
        calls.append(config)
        return recourse_points.RecoursePoints(
            images=torch.rand(3, 3, 16, 16), attributes=torch.tensor([31, 39, 20]),
            targets=torch.tensor([1.0, 0.0, 1.0]), sources=torch.arange(3), attempted=len(images), seconds=2.5)

    monkeypatch.setattr(recourse_points, "make_recourse_points", fake_points)
    root, _ = hq_folder
    tiny_generator.save_pretrained(tmp_path / "generator")
    args = ["quantize", "--method", "cf-ptq", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
            "--generator", str(tmp_path / "generator"), "--recourse-points", "3", "--calibration-images", "2",
            "--steps", "10", "--no-cache", "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    assert main([*args, "--out", str(tmp_path / "two")]) == 0
    assert len(calls) == 1 and calls[0].steps == 10  # made once, with the given settings, then read back
    assert len(list((tmp_path / "cache").glob("recourse-points-*-3.safetensors"))) == 1
    variant = load_variant(tmp_path / "two")
    assert variant.config.method == "cf-ptq" and variant.details["recourse_points"] == 3
    assert variant.seconds >= 2.5  # making the points counts in T_make, also when cached
    with pytest.raises(SystemExit):
        main(["quantize", "--method", "ptq-int8", "--data", str(root), "--fine-tuning-steps"])
    assert main(["quantize", "--method", "ptq-int8", "--data", str(root), "--checkpoint", str(tiny_checkpoint),
                 "--fine-tuning-steps", "5", "--no-cache"]) == 2  # not a fine-tuning method
