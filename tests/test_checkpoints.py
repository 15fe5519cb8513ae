import json

import pytest
import torch

from recourse.checkpoints import (
    CheckpointError, load_classifier, load_training_state, read_config, save_classifier, save_training_state,
    update_config, write_manifest,
)
from recourse.classifier import AttributeClassifier, ClassifierConfig


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    model = AttributeClassifier(ClassifierConfig(widths=(4, 8), mean=(0.4, 0.5, 0.6))).eval()
    save_classifier(model, tmp_path / "ckpt", {"test_accuracy": 91.0})
    return model, tmp_path / "ckpt"


def test_round_trip_gives_identical_outputs(saved):
    model, directory = saved
    images = torch.rand(2, 3, 32, 32)
    loaded = load_classifier(directory)
    assert not loaded.training
    torch.testing.assert_close(loaded(images), model(images), rtol=0, atol=0)
    assert loaded.config == model.config
    assert read_config(directory)["test_accuracy"] == 91.0


def test_weights_are_safetensors_not_pickles(saved):
    _, directory = saved
    assert (directory / "model.safetensors").read_bytes()[8:9] == b"{"  # safetensors JSON header
    assert not list(directory.glob("*.pt")) and not list(directory.glob("*.bin"))


def test_update_config_keeps_other_fields(saved):
    _, directory = saved
    update_config(directory, history=[1, 2])
    config = read_config(directory)
    assert config["history"] == [1, 2] and config["test_accuracy"] == 91.0


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "config.json").unlink(), "config not found"),
    (lambda d: (d / "model.safetensors").unlink(), "weights not found"),
    (lambda d: (d / "config.json").write_text("{"), "not valid JSON"),
    (lambda d: (d / "config.json").write_text(json.dumps(read_config(d) | {"widths": [4, 16]})), "does not match"),
    (lambda d: (d / "config.json").write_text(json.dumps({"architecture": "Pickle"})), "unknown architecture"),
])
def test_broken_checkpoints_are_reported(saved, damage, message):
    """Checkpoints made broken (their manifest recorded after the damage): the loader's own
    checks still say what is wrong."""
    _, directory = saved
    damage(directory)
    write_manifest(directory)
    with pytest.raises(CheckpointError, match=message):
        load_classifier(directory)


def test_a_checkpoint_records_its_manifest_and_update_config_keeps_it_true(saved):
    _, directory = saved
    recorded = json.loads((directory / "manifest.json").read_text())["sha256"]
    assert set(recorded) == {"config.json", "model.safetensors"}
    update_config(directory, note="kept")
    assert load_classifier(directory) is not None  # the manifest was re-recorded with the config


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "config.json").write_text("{"), r"config.json: its content does not match manifest.json"),
    (lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-4]),
     r"model.safetensors: its content does not match manifest.json"),
    (lambda d: (d / "manifest.json").unlink(), r"manifest.json: no content manifest; .* scripts.chores.record_manifests"),
    (lambda d: (d / "manifest.json").write_text(json.dumps({"sha256": {
        "config.json": json.loads((d / "manifest.json").read_text())["sha256"]["config.json"]}})),
     r"model.safetensors: not listed in .*manifest.json"),
    (lambda d: (d / "manifest.json").write_text("[]"), r"manifest.json: not a content manifest"),
])
def test_changes_the_manifest_does_not_record_are_refused(saved, damage, message):
    _, directory = saved
    damage(directory)
    with pytest.raises(CheckpointError, match=message):
        load_classifier(directory)


def test_training_state_loads_with_weights_only(tmp_path):
    save_training_state(tmp_path / "state.pt", {"epoch": 3, "rng": torch.get_rng_state()})
    assert load_training_state(tmp_path / "state.pt")["epoch"] == 3
