"""The committed checkpoints load without unpickling and reproduce their recorded accuracy."""

from pathlib import Path

import pytest

from recourse.checkpoints import load_classifier, read_config
from recourse.data import ATTRIBUTES, load_split
from recourse.evaluation import evaluate_accuracy
from tests.conftest import HQ_DATA, needs_hq_data

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
REQUIRED_FIELDS = ("architecture", "resolution", "attributes", "mean", "std", "training_command", "data_split",
                   "training_seconds", "test_accuracy")


@pytest.mark.parametrize("name", ["classifier", "oracle"])
def test_committed_checkpoint_is_documented_and_loads(name):
    config = read_config(CHECKPOINTS / name)
    for field in REQUIRED_FIELDS:
        assert field in config, field
    assert tuple(config["attributes"]) == ATTRIBUTES
    model = load_classifier(CHECKPOINTS / name)
    assert sum(p.numel() for p in model.parameters()) > 0


def test_committed_checkpoints_are_small():
    total = sum(p.stat().st_size for name in ("classifier", "oracle") for p in (CHECKPOINTS / name).iterdir())
    assert total < 30 * 2**20


@needs_hq_data
@pytest.mark.parametrize("name", ["classifier", "oracle"])
def test_committed_checkpoint_reproduces_its_recorded_test_accuracy(name):
    """The whole test split (3,000 images) is cheap enough to check in full."""
    config = read_config(CHECKPOINTS / name)
    test = load_split(HQ_DATA, "test", config["resolution"])
    result = evaluate_accuracy(load_classifier(CHECKPOINTS / name), test.images, test.labels)
    assert result.mean == pytest.approx(config["test_accuracy"], abs=0.02)
    worst = max(abs(result.per_attribute[a] - config["test_accuracy_per_attribute"][a]) for a in ATTRIBUTES)
    assert worst <= 0.05
