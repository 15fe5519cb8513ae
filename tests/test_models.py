"""Where the committed models are found (``RECOURSE_HOME``) and how they are loaded: once, by name."""

import json
from pathlib import Path

import pytest
import torch

from recourse import locations, models
from recourse.compression import METHODS
from tests.conftest import ROOT, build_home, make_generator, random_faces, tiny_classifier


def test_the_source_checkout_is_the_default_home(monkeypatch):
    monkeypatch.delenv("RECOURSE_HOME", raising=False)
    assert locations.project_root() == ROOT
    assert locations.teacher_dir() == ROOT / "checkpoints" / "classifier"
    assert locations.variants_dir() == ROOT / "checkpoints" / "variants"
    assert locations.shown(ROOT / "checkpoints" / "oracle") == "checkpoints/oracle"
    assert locations.shown(Path("/somewhere/else/model.safetensors")) == "model.safetensors"  # never a server path


def test_recourse_home_moves_every_location(project_home):
    assert locations.project_root() == project_home
    assert locations.teacher_dir() == project_home / "checkpoints" / "classifier"
    assert locations.oracle_dir() == project_home / "checkpoints" / "oracle"
    assert locations.generator_dir() == project_home / "checkpoints" / "generator"
    assert locations.variants_dir() / "ptq-int8" == project_home / "checkpoints" / "variants" / "ptq-int8"
    assert locations.assets_dir() == project_home / "assets"


def test_every_method_and_every_built_variant_grouped_by_bits(tmp_path):
    assert set(METHODS) <= set(models.VARIANTS)
    for name, bits in (("ptq-int4", 4.0), ("gptq-int2", 2.04), ("cfq-qat-b3", 3.0), ("cfq-qat-b3-s1", 3.0),
                       ("ptq-int8", 8.0), ("mixedprec-qat", 3.99), ("Bad Name", 2.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"bits_per_weight": bits}))
    (tmp_path / "no-config").mkdir()
    listed = models.list_variants(tmp_path)
    built = [name for name in listed if (tmp_path / name).is_dir()]
    assert built == ["ptq-int8", "ptq-int4", "mixedprec-qat", "cfq-qat-b3", "cfq-qat-b3-s1", "gptq-int2"]
    assert set(listed) - set(built) == set(METHODS) - set(built)  # unbuilt methods still named, after the rest
    assert listed.index("gptq-int2") < listed.index("gptq")


def test_an_unknown_variant_is_refused():
    for bad in ("nope", "int3", ""):
        with pytest.raises(ValueError, match=f"unknown variant {bad!r}"):
            models.load_committed_variant(bad)
        with pytest.raises(ValueError, match="unknown variant"):
            models.load_student(bad)


def test_a_missing_variant_is_named_with_the_command_that_makes_it(project_home):
    assert not models.variant_is_built("kd-quant")
    with pytest.raises(models.VariantNotFoundError,
                       match=r"variant 'kd-quant' is not available: checkpoints/variants/kd-quant/ is missing\. "
                             r"Make it with python -m recourse quantize --method kd-quant") as error:
        models.load_student("kd-quant")
    assert str(project_home) not in str(error.value)


@pytest.mark.slow
def test_the_home_models_are_loaded_once_and_shared(project_home):
    teacher = tiny_classifier(seed=4)
    build_home(project_home, teacher, make_generator(random_faces(64)), methods=("ptq-int8", "ptq-int4"))
    assert [v for v in models.VARIANTS if models.variant_is_built(v)] == ["ptq-int8", "ptq-int4"]
    loaded = models.load_teacher()
    images = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded(images), teacher(images))
    assert models.load_teacher() is loaded
    student = models.load_student("ptq-int4")
    assert student.name == "ptq-int4" and student.kind == "integer"
    assert models.load_student("ptq-int4").decider is student.decider  # the variant is read once
    assert models.load_committed_variant("ptq-int4").config.method == "ptq-int4"
