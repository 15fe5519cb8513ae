import json

import pytest
import torch

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.generation import (
    CounterfactualConfig, LatentFaceGenerator, PixelFaceGenerator, generate, load_generator,
)
from recourse.data import ATTRIBUTES
from tests.conftest import BrightnessModel

SMILING = ATTRIBUTES.index("Smiling")
FAST = CounterfactualConfig(steps=10, noise_level=0.5, finish_steps=5)


@pytest.fixture
def dark_images() -> torch.Tensor:
    return torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(1)) * 0.6


def test_guidance_moves_the_guided_probability_to_the_target(tiny_generator, dark_images):
    result = generate(dark_images, BrightnessModel(), "Smiling", 1, FAST, tiny_generator)
    assert bool((result.probability_before < 0.5).all())
    assert bool((result.probability_after > result.probability_before).all())
    assert bool(result.valid.all()), result.probability_after
    assert result.images.shape == dark_images.shape
    assert float(result.images.min()) >= 0 and float(result.images.max()) <= 1
    torch.testing.assert_close(result.cost, (result.images - dark_images).abs().flatten(1).mean(1))
    record = json.loads(json.dumps(result.to_dict()))
    assert record["seeds"] == [FAST.seed, FAST.seed + 1, FAST.seed + 2] and record["settings"]["steps"] == 10
    assert record["valid"] == [True, True, True] and record["target"] == [1, 1, 1]


def test_same_seed_same_counterfactual_and_batching_does_not_matter(tiny_generator, dark_images):
    model = AttributeClassifier(ClassifierConfig(widths=(4, 8))).eval()
    first = generate(dark_images, model, "Young", 0, FAST, tiny_generator)
    second = generate(dark_images, model, "Young", 0, FAST, tiny_generator)
    torch.testing.assert_close(first.images, second.images, rtol=0, atol=0)
    alone = generate(dark_images[1:2], model, "Young", 0, FAST, tiny_generator, seeds=(FAST.seed + 1,))
    torch.testing.assert_close(alone.images[0], first.images[1], rtol=1e-4, atol=1e-5)
    other_seed = generate(dark_images, model, "Young", 0, CounterfactualConfig(**{**FAST.__dict__, "seed": 7}), tiny_generator)
    assert not torch.equal(other_seed.images, first.images)


def test_a_valid_input_is_left_nearly_unchanged_by_the_finish_phase(tiny_generator):
    bright = torch.full((1, 3, 16, 16), 0.9)
    result = generate(bright, BrightnessModel(), "Smiling", 1,
                      CounterfactualConfig(steps=10, noise_level=0.1, finish_steps=5), tiny_generator)
    assert bool(result.valid.all())


def test_pixel_space_diffusers_pipeline_loads_and_guides(tmp_path, dark_images):
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=1000)).save_pretrained(tmp_path / "ddpm")
    generator = load_generator(tmp_path / "ddpm")
    assert isinstance(generator, PixelFaceGenerator) and generator.resolution == 16
    result = generate(dark_images, BrightnessModel(), "Male", 1, CounterfactualConfig(steps=4, finish_steps=10), generator)
    assert bool((result.probability_after > result.probability_before).all())


def test_project_generator_round_trips(tmp_path, tiny_generator, dark_images):
    tiny_generator.save_pretrained(tmp_path / "generator", {"note": "test"})
    loaded = load_generator(tmp_path / "generator")
    assert isinstance(loaded, LatentFaceGenerator)
    # the basis is stored in half precision
    torch.testing.assert_close(loaded.autoencoder.components, tiny_generator.autoencoder.components, atol=1e-3, rtol=1e-3)
    latents = torch.randn(2, 8)
    torch.testing.assert_close(loaded.denoiser(latents, torch.tensor([5])), tiny_generator.denoiser(latents, torch.tensor([5])))


def test_committed_generator_is_the_default(dark_images):
    result = generate(dark_images[:1].clone().resize_(1, 3, 64, 64).uniform_(0, 1), BrightnessModel(), "Smiling", 1,
                      CounterfactualConfig(steps=4, finish_steps=2))
    assert result.images.shape == (1, 3, 64, 64)


def test_not_a_generator_folder_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="neither"):
        load_generator(tmp_path)


def test_uncached_hub_id_offline_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="cannot load this diffusers pipeline"):
        load_generator("nobody/not-a-cached-pipeline")


@pytest.mark.parametrize("kwargs, message", [
    ({"attribute": "Smile"}, "unknown attribute 'Smile'"),
    ({"target": 2}, "target must be 0 or 1"),
    ({"target": torch.tensor([0, 1])}, "target must be 0 or 1"),
    ({"images": torch.rand(3, 16, 16)}, r"\(B, 3, H, W\)"),
    ({"images": torch.rand(1, 1, 16, 16)}, r"\(B, 3, H, W\)"),
    ({"images": torch.rand(1, 3, 16, 16) * 255}, r"in \[0, 1\]"),
    ({"seeds": (1, 2)}, "expected 1 seeds"),
])
def test_bad_arguments_raise_clear_errors(tiny_generator, kwargs, message):
    arguments = {"images": torch.rand(1, 3, 16, 16), "model": BrightnessModel(), "attribute": "Smiling",
                 "target": 1, "generator": tiny_generator, "config": FAST} | kwargs
    with pytest.raises(ValueError, match=message):
        generate(**arguments)


@pytest.mark.parametrize("values", [{"steps": 0}, {"noise_level": 0.0}, {"noise_level": 1.5}, {"guidance_scale": -1}])
def test_bad_settings_are_rejected(values):
    with pytest.raises(ValueError):
        CounterfactualConfig(**values)


def test_generation_leaves_the_shared_scheduler_alone(tiny_generator, dark_images):
    # concurrent audits share one generator: generate() must set timesteps on a copy
    before = tiny_generator.scheduler.num_inference_steps
    generate(dark_images[:1], BrightnessModel(), "Smiling", 1, CounterfactualConfig(steps=7, finish_steps=0), tiny_generator)
    assert tiny_generator.scheduler.num_inference_steps == before
