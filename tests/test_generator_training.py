import json

import numpy as np
import pytest
import torch

from recourse.generation import load_generator
from recourse.generation.training import GeneratorTrainConfig, train_generator

CONFIG = GeneratorTrainConfig(latent_dim=8, width=16, depth=1, steps=30, batch_size=16, checkpoint_every=10)


def _faces(n: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random((n, 3, 16, 16)) * 255).astype(np.uint8)


def test_training_saves_a_loadable_generator_with_its_record(tmp_path):
    result = train_generator(_faces(40, 0), _faces(8, 1), tmp_path / "gen", CONFIG, tmp_path / "state",
                             metadata={"training_command": "test"})
    generator = load_generator(tmp_path / "gen")
    assert generator.resolution == 16 and generator.autoencoder.config.latent_dim == 8
    record = json.loads((tmp_path / "gen" / "generator.json").read_text())
    assert record["training_command"] == "test" and record["train_config"]["steps"] == 30
    assert 0 < result.reconstruction_error < 0.5 and np.isfinite(result.final_loss)


def test_interrupted_training_resumes_to_the_same_weights(tmp_path, monkeypatch):
    import recourse.generation.training as training

    train_generator(_faces(40, 0), _faces(8, 1), tmp_path / "full", CONFIG, tmp_path / "full-state")
    real_save = training.save_training_state

    def save_then_stop(path, state):
        real_save(path, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "save_training_state", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        train_generator(_faces(40, 0), _faces(8, 1), tmp_path / "cut", CONFIG, tmp_path / "cut-state")
    monkeypatch.setattr(training, "save_training_state", real_save)
    train_generator(_faces(40, 0), _faces(8, 1), tmp_path / "cut", CONFIG, tmp_path / "cut-state")
    full, cut = load_generator(tmp_path / "full"), load_generator(tmp_path / "cut")
    for (name, p), (_, q) in zip(full.denoiser.state_dict().items(), cut.denoiser.state_dict().items()):
        torch.testing.assert_close(p, q, msg=name)
