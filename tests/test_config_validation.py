"""Settings objects refuse NaN, infinities, wrong types and out-of-range values when they are
made, with a ValueError quoting the value; the CLI turns that into exit 2 before loading
any model."""

import math

import pytest

from recourse.attribution import AttributionConfig
from recourse.benchmark import BenchmarkSettings
from recourse.classifier import ClassifierConfig
from recourse.compression.configs import (
    CFPTQConfig, CFQQATConfig, KDQuantConfig, MixedPrecQATConfig, PruneQuantConfig, PTQInt8Config,
)
from recourse.generation import CounterfactualConfig

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("field, value, message", [
    ("margin", NAN, "margin must be a finite number, got nan"),
    ("guidance_scale", NAN, "guidance_scale must be a finite number, got nan"),
    ("guidance_scale", INF, "guidance_scale must be a finite number, got inf"),
    ("proximity_weight", -INF, "proximity_weight must be a finite number"),
    ("preserve_weight", NAN, "preserve_weight must be a finite number"),
    ("finish_learning_rate", NAN, "finish_learning_rate must be a finite number"),
    ("noise_level", NAN, "noise_level must be a finite number"),
    ("noise_level", -0.1, "noise_level must be >= 0.0, got -0.1"),
    ("cone_degrees", 91.0, "cone_degrees must be <= 90.0, got 91.0"),
    ("margin", -1.0, "margin must be >= 0.0, got -1.0"),
    ("guidance_scale", -0.5, "guidance_scale must be >= 0.0, got -0.5"),
    ("guidance_scale", 1e300, "guidance_scale must be <="),
    ("steps", 0, "steps must be >= 1, got 0"),
    ("steps", 5000, "steps must be <= 1000, got 5000"),
    ("steps", 2.5, "steps must be a whole number, got 2.5"),
    ("steps", True, "steps must be a whole number, got True"),
    ("finish_steps", 10**6, "finish_steps must be <= 1000"),
    ("finish_steps", -1, "finish_steps must be >= 0"),
    ("seed", -1, "seed must be >= 0, got -1"),
    ("margin", "3", "margin must be a number, got '3'"),
])
def test_counterfactual_config_refuses(field, value, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        CounterfactualConfig(**{field: value})


def test_counterfactual_config_keeps_its_useful_range():
    CounterfactualConfig(margin=0.0, guidance_scale=0.0, finish_steps=0, steps=1000, noise_level=1.0, seed=2**31 - 1)
    CounterfactualConfig(guidance_scale=100, margin=5)  # ints where floats are expected


@pytest.mark.parametrize("values, message", [
    ({"ig_baseline": NAN}, "ig_baseline must be a finite number"),
    ({"occlusion_baseline": INF}, "occlusion_baseline must be a finite number"),
    ({"top_fraction": NAN}, "top_fraction must be a finite number"),
    ({"ig_steps": 10**6}, "ig_steps must be <= 512"),
    ({"occlusion_window": 0}, "occlusion_window must be >= 1"),
    ({"occlusion_stride": 9}, "occlusion_stride must be <= 8, got 9"),
    ({"ig_steps": 4.0}, "ig_steps must be a whole number"),
])
def test_attribution_config_refuses(values, message):
    with pytest.raises(ValueError, match=message):
        AttributionConfig(**values)


@pytest.mark.parametrize("values, message", [
    ({"n": 0}, "n must be >= 1"), ({"n": 1.5}, "n must be a whole number"),
    ({"first_task": -1}, "first_task must be >= 0"), ({"chunk_size": 0}, "chunk_size must be >= 1"), ({"latency_repeats": 10**9}, "latency_repeats must be <="),
    ({"attributes": ()}, "attributes must be a non-empty tuple"),
    ({"attributes": ["Smiling"]}, "attributes must be a non-empty tuple"),
    ({"attributes": ("Smiling", "Smiling")}, "must not repeat"),
    ({"attributes": ("Smile",)}, "unknown attribute 'Smile'"),
    ({"attributes": (3,)}, "attribute names must be strings"),
    ({"counterfactual": {"margin": 3}}, "counterfactual must be a CounterfactualConfig"),
])
def test_benchmark_settings_refuse(values, message):
    with pytest.raises(ValueError, match=message):
        BenchmarkSettings(**values)


@pytest.mark.parametrize("config_class, values, message", [
    (PTQInt8Config, {"calibration_images": 0}, "calibration_images must be >= 1"),
    (PTQInt8Config, {"calibration_images": 8.0}, "calibration_images must be a whole number"),
    (PruneQuantConfig, {"sparsity": NAN}, "sparsity must be a finite number"),
    (PruneQuantConfig, {"sparsity": 1.0}, r"sparsity must be in \[0, 1\)"),
    (CFPTQConfig, {"clip_grid": (1.0, NAN)}, "a clip_grid value must be a finite number"),
    (CFPTQConfig, {"clip_grid": ()}, "clip_grid must be a tuple"),
    (CFPTQConfig, {"recourse_weight": INF}, "recourse_weight must be a finite number"),
    (KDQuantConfig, {"learning_rate": NAN}, "learning_rate must be a finite number"),
    (KDQuantConfig, {"learning_rate": 0.0}, "learning_rate must be > 0.0"),
    (KDQuantConfig, {"temperature": NAN}, "temperature must be a finite number"),
    (KDQuantConfig, {"distillation_weight": 1.5}, "distillation_weight must be <= 1.0"),
    (KDQuantConfig, {"steps": -1}, "steps must be >= 0"),
    (MixedPrecQATConfig, {"budget": NAN}, "budget must be a finite number"),
    (MixedPrecQATConfig, {"bit_choices": (4, 7)}, "bit_choices must be among"),
    (CFQQATConfig, {"recourse_weight": NAN}, "recourse_weight must be a finite number"),
    (CFQQATConfig, {"recourse_batch_size": 0}, "recourse_batch_size must be >= 1"),
])
def test_compression_configs_refuse(config_class, values, message):
    with pytest.raises(ValueError, match=message):
        config_class(**values)


@pytest.mark.parametrize("values, message", [
    ({"widths": (10**7,)}, "a width must be <= 4096"),  # a tampered config must not allocate terabytes
    ({"widths": tuple(range(1, 20))}, "widths must be 1 to 8"),
    ({"std": (0.25, 0.0, 0.25)}, "a std value must be >="),
    ({"mean": (0.5, NAN, 0.5)}, "a mean value must be a finite number"),
    ({"dropout": NAN}, "dropout must be a finite number"),
    ({"resolution": 10**6}, "resolution must be <= 1024"),
])
def test_classifier_config_refuses(values, message):
    with pytest.raises(ValueError, match=message):
        ClassifierConfig(**values)


# --- the command line: exit 2 at once, before any model is loaded -----------------------


@pytest.fixture
def no_models(monkeypatch):
    """Any model loading fails the test."""
    import recourse.audit.pipeline
    import recourse.checkpoints
    import recourse.cli.common
    import recourse.models

    def loaded(*args, **kwargs):
        raise AssertionError("a model was loaded before the settings were checked")

    for module, name in ((recourse.cli.common, "load_classifier"), (recourse.checkpoints, "load_classifier"),
                         (recourse.models, "load_teacher"), (recourse.models, "load_student"),
                         (recourse.audit.pipeline, "audit_image")):
        monkeypatch.setattr(module, name, loaded, raising=False)


@pytest.mark.parametrize("option, value", [
    ("--guidance-scale", "nan"), ("--guidance-scale", "inf"), ("--guidance-scale", "-inf"), ("--margin", "NaN"),
    ("--noise-level", "nan"),
])
def test_cli_refuses_non_finite_options_while_parsing(option, value, no_models, capsys):
    from recourse.cli import main

    command = ["audit", "photo.jpg", "--variant", "ptq-int8"] if option == "--guidance-scale" else \
        ["counterfactual", "photo.jpg", "--out", "cf.png"]
    with pytest.raises(SystemExit) as exit_code:
        main([*command, "--attribute", "Smiling", f"{option}={value}"])
    assert exit_code.value.code == 2
    assert f"must be a finite number, got '{value}'" in capsys.readouterr().err


@pytest.mark.parametrize("arguments, message", [
    (["audit", "photo.jpg", "--variant", "ptq-int8", "--attribute", "Smiling", "--steps", "5000"],
     "steps must be <= 1000, got 5000"),
    (["audit", "photo.jpg", "--variant", "ptq-int8", "--attribute", "Smiling", "--guidance-scale", "-1"],
     "guidance_scale must be >= 0.0, got -1.0"),
    (["counterfactual", "photo.jpg", "--attribute", "Smiling", "--out", "cf.png", "--margin", "-2"],
     "margin must be >= 0.0, got -2.0"),
])
def test_cli_refuses_out_of_range_settings_before_loading_models(arguments, message, no_models, capsys, tmp_path,
                                                                 monkeypatch):
    from recourse.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(arguments) == 2
    assert f"error: {message}" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--sparsity", "--budget"])
def test_quantize_refuses_non_finite_numbers(option, capsys):
    from recourse.cli import main

    with pytest.raises(SystemExit) as exit_code:
        main(["quantize", "--data", "x", "--method", "prune-quant", option, "nan"])
    assert exit_code.value.code == 2 and "must be a finite number" in capsys.readouterr().err
