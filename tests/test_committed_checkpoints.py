"""The committed checkpoints load without unpickling and reproduce their recorded accuracy."""

import pytest

from recourse.checkpoints import load_classifier, read_config
from recourse.data import ATTRIBUTES, load_split
from recourse.evaluation import evaluate_accuracy
from recourse.models import METHOD_VARIANTS, VARIANTS
from tests.conftest import COMMITTED as CHECKPOINTS, HQ_DATA

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


@pytest.mark.slow
@pytest.mark.requires("hq_data")
@pytest.mark.parametrize("name", ["classifier", "oracle"])
def test_committed_checkpoint_reproduces_its_recorded_test_accuracy(name):
    """The whole test split (3,000 images) is cheap enough to check in full."""
    config = read_config(CHECKPOINTS / name)
    test = load_split(HQ_DATA, "test", config["resolution"])
    result = evaluate_accuracy(load_classifier(CHECKPOINTS / name), test.images, test.labels)
    assert result.mean == pytest.approx(config["test_accuracy"], abs=0.02)
    worst = max(abs(result.per_attribute[a] - config["test_accuracy_per_attribute"][a]) for a in ATTRIBUTES)
    assert worst <= 0.05


def test_every_variant_is_committed_documented_and_together_under_60_mb():
    from scripts.chores.make_variants import plan

    assert METHOD_VARIANTS == ("ptq-int8", "ptq-int4", "gptq", "cf-ptq", "cfq-qat", "mixedprec-qat", "kd-quant",
                               "prune-quant")
    folders = sorted(p.name for p in (CHECKPOINTS / "variants").iterdir() if p.is_dir())
    assert set(METHOD_VARIANTS) <= set(folders) and set(folders) <= set(plan())
    assert set(VARIANTS) == set(folders)  # every committed variant can be audited  # each one's recipe is in the plan
    total = 0
    for name in folders:
        config = read_config(CHECKPOINTS / "variants" / name)
        assert config["method"] == plan()[name][1] and config["command"].startswith("python -m recourse quantize")
        assert config["make_seconds"] > 0 and len(config["layer_bits"]) > 0
        total += sum(p.stat().st_size for p in (CHECKPOINTS / "variants" / name).iterdir())
    assert "budget" in read_config(CHECKPOINTS / "variants" / "cfq-qat")
    assert read_config(CHECKPOINTS / "variants" / "prune-quant")["sparsity"] == 0.3
    assert total < 60 * 2**20


@pytest.fixture(scope="module")
def first_test_images():
    from recourse.data import to_float_images

    return to_float_images(load_split(HQ_DATA, "test", 64).images[:500])


@pytest.mark.slow
@pytest.mark.requires("hq_data")
@pytest.mark.parametrize("method", METHOD_VARIANTS)
def test_committed_variant_twin_agrees_with_its_integer_model(method, first_test_images):
    """≥ 99.5% of decisions, on the first 500 test images (the benchmark checks all 3,000)."""
    import torch

    from recourse.metrics import agreement, decisions
    from recourse.compression import load_variant

    variant = load_variant(CHECKPOINTS / "variants" / method)
    images = first_test_images
    with torch.no_grad():
        assert agreement(decisions(variant.twin(images)), decisions(variant.integer(images))) >= 99.5
