import pytest
import torch

from recourse.classifier import AttributeClassifier, ClassifierConfig

TINY = ClassifierConfig(widths=(4, 8), dropout=0.0)


def test_forty_logits_for_any_batch_and_size():
    model = AttributeClassifier(TINY).eval()
    assert model(torch.rand(3, 3, 64, 64)).shape == (3, 40)
    assert model(torch.rand(1, 3, 32, 32)).shape == (1, 40)
    assert model.embed(torch.rand(2, 3, 64, 64)).shape == (2, 8)


def test_same_seed_same_model_and_eval_is_deterministic():
    images = torch.rand(2, 3, 32, 32)
    torch.manual_seed(0)
    first = AttributeClassifier(TINY).eval()
    torch.manual_seed(0)
    second = AttributeClassifier(TINY).eval()
    torch.testing.assert_close(first(images), second(images), rtol=0, atol=0)
    torch.testing.assert_close(first(images), first(images), rtol=0, atol=0)


def test_normalisation_comes_from_config():
    config = ClassifierConfig(widths=(4,), mean=(0.2, 0.3, 0.4), std=(0.5, 0.5, 0.5))
    model = AttributeClassifier(config)
    assert model.mean.flatten().tolist() == pytest.approx([0.2, 0.3, 0.4])
    assert "mean" not in model.state_dict()  # normalisation lives in the JSON config


@pytest.mark.parametrize("values, message", [
    ({"widths": ()}, "widths"),
    ({"activation": "tanh"}, "activation"),
    ({"dropout": 1.0}, "dropout"),
    ({"attributes": ("Smiling",)}, "40 attribute names"),
])
def test_bad_config_is_rejected(values, message):
    with pytest.raises(ValueError, match=message):
        ClassifierConfig(**values)


def test_config_round_trips_through_a_dict():
    config = ClassifierConfig(widths=(8, 16), activation="silu", mean=(0.1, 0.2, 0.3))
    assert ClassifierConfig.from_dict(config.to_dict() | {"unrelated": 1}) == config
