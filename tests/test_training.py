import numpy as np
import pytest
import torch

from recourse.checkpoints import load_classifier, read_config
from recourse.classifier import ClassifierConfig
from recourse.data import ATTRIBUTES, LabelledImages
from recourse.evaluation import evaluate_accuracy
from recourse.training import TrainConfig, augment, channel_statistics, train_classifier

MODEL = ClassifierConfig(widths=(4, 8), dropout=0.2)


def _images(n: int, seed: int) -> LabelledImages:
    """Noise whose red channel is scaled per image; attribute 0 says whether it is bright."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 3, 16, 16)).astype(np.float64)
    images[:, 0] *= rng.uniform(0.2, 1.8, (n, 1, 1))
    images = images.clip(0, 255).astype(np.uint8)
    labels = np.zeros((n, 40), np.uint8)
    labels[:, 0] = images[:, 0].mean(axis=(1, 2)) > 127  # learnable: a bright red channel
    return LabelledImages(images, labels, tuple(f"{i}.jpg" for i in range(n)))


def _weights_equal(first_dir, second_dir) -> None:
    first, second = load_classifier(first_dir), load_classifier(second_dir)
    for (name, p), (_, q) in zip(first.state_dict().items(), second.state_dict().items()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)


def test_same_seed_same_weights(tmp_path):
    train, val = _images(48, 0), _images(16, 1)
    config = TrainConfig(epochs=2, batch_size=16, seed=3)
    result = train_classifier(train, val, tmp_path / "a", MODEL, config, tmp_path / "a.pt")
    train_classifier(train, val, tmp_path / "b", MODEL, config, tmp_path / "b.pt")
    _weights_equal(tmp_path / "a", tmp_path / "b")
    assert len(result.history) == 2 and result.best_epoch in (1, 2)
    assert read_config(tmp_path / "a")["train_config"]["seed"] == 3


def test_resume_after_interruption_matches_uninterrupted(tmp_path, monkeypatch):
    import recourse.training as training

    train, val = _images(48, 0), _images(16, 1)
    config = TrainConfig(epochs=3, batch_size=16)
    full = train_classifier(train, val, tmp_path / "full", MODEL, config, tmp_path / "full.pt")

    real_save = training.save_training_state

    def save_then_stop(path, state):  # killed right after the first epoch's state is written
        real_save(path, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "save_training_state", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        train_classifier(train, val, tmp_path / "cut", MODEL, config, tmp_path / "cut.pt")
    monkeypatch.setattr(training, "save_training_state", real_save)
    resumed = train_classifier(train, val, tmp_path / "cut", MODEL, config, tmp_path / "cut.pt")
    assert resumed.history == full.history
    assert resumed.best_epoch == full.best_epoch
    _weights_equal(tmp_path / "full", tmp_path / "cut")


def test_training_learns_the_learnable_label(tmp_path):
    train, val = _images(256, 0), _images(128, 1)
    assert 0.3 < val.labels[:, 0].mean() < 0.7  # both classes: the majority alone is far from perfect
    train_classifier(train, val, tmp_path / "m", MODEL, TrainConfig(epochs=3, batch_size=32, learning_rate=1e-2),
                     tmp_path / "m.pt")
    result = evaluate_accuracy(load_classifier(tmp_path / "m"), val.images, val.labels)
    learnable = ATTRIBUTES[0]
    assert result.per_attribute[learnable] >= result.baseline_per_attribute[learnable] + 25, result.per_attribute
    assert result.per_attribute[learnable] >= 85


def test_augmentation_keeps_shape_and_range():
    batch = torch.rand(8, 3, 16, 16)
    out = augment(batch, TrainConfig(augmentation="flip-shift-color"), torch.Generator().manual_seed(0))
    assert out.shape == batch.shape and out.min() >= 0 and out.max() <= 1


def test_channel_statistics_by_hand():
    images = np.zeros((2, 3, 2, 2), np.uint8)
    images[:, 0] = 255
    mean, std = channel_statistics(images)
    assert mean == (1.0, 0.0, 0.0) and std == (0.0, 0.0, 0.0)


def test_bad_train_config_is_rejected():
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="augmentation"):
        TrainConfig(augmentation="mixup")


def test_the_strong_judge_is_its_own_model_at_three_times_the_radius():
    from recourse.training import PRESETS

    judge_model, judge_training = PRESETS["judge"]
    strong_model, strong_training = PRESETS["strong-judge"]
    guide_model, guide_training = PRESETS["guide"]
    assert strong_training.adversarial_radius == 3 * judge_training.adversarial_radius
    assert strong_training.adversarial_steps > judge_training.adversarial_steps
    assert strong_model.widths not in (judge_model.widths, guide_model.widths)
    assert strong_training.seed not in (judge_training.seed, guide_training.seed)
