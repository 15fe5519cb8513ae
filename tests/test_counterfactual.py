import json
from dataclasses import replace

import pytest
import torch

from recourse.classifier import AttributeClassifier
from recourse.generation import (
    CounterfactualConfig, LatentFaceGenerator, PixelFaceGenerator, generate, load_generator,
)
from recourse.data import ATTRIBUTES
from tests.conftest import BrightnessModel, tiny_classifier

SMILING = ATTRIBUTES.index("Smiling")
# the PCA walk's DDIM stage, editing steps and scheduler (the default, denoised: tests/test_denoised.py)
FAST = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5)


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


def test_the_test_generator_has_a_prior(tiny_generator):
    # a denoiser that predicted zero noise would leave every guidance test without a prior
    latents = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        noise = tiny_generator.predict_noise(latents, torch.tensor([50]))
    assert noise.abs().mean() > 0.1
    assert not torch.allclose(noise, tiny_generator.predict_noise(latents, torch.tensor([500])).detach())


@pytest.fixture(scope="module")
def guide() -> AttributeClassifier:
    """A convolutional guiding model: its kernels are where batch size and memory layout could matter."""
    return tiny_classifier(seed=0)


@pytest.fixture(scope="module")
def five_images() -> torch.Tensor:
    return torch.rand(5, 3, 16, 16, generator=torch.Generator().manual_seed(5))


@pytest.fixture(scope="module")
def batch_result(tiny_generator, guide, five_images):
    return generate(five_images, guide, "Young", 0, FAST, tiny_generator)


# One image alone or in another batch runs the convolutions and matrix products with another
# batch size, whose float rounding differs (~1e-7 here); the noise, the guidance and the
# stopping are per image, so nothing beyond that rounding may differ.
BATCH_ROUNDING = {"rtol": 0.0, "atol": 1e-5}


def test_same_seed_same_counterfactual_and_another_seed_another(tiny_generator, guide, five_images, batch_result):
    again = generate(five_images, guide, "Young", 0, FAST, tiny_generator)
    assert torch.equal(again.images, batch_result.images)
    other_seed = generate(five_images, guide, "Young", 0, replace(FAST, seed=7), tiny_generator)
    assert (other_seed.images - batch_result.images).abs().max() > 1e-3


@pytest.mark.parametrize("index", range(5))
def test_each_image_of_a_batch_gets_what_it_gets_alone(tiny_generator, guide, five_images, batch_result, index):
    alone = generate(five_images[index:index + 1], guide, "Young", 0, FAST, tiny_generator, seeds=(FAST.seed + index,))
    torch.testing.assert_close(alone.images[0], batch_result.images[index], **BATCH_ROUNDING)
    assert alone.valid[0] == batch_result.valid[index]


def test_a_reordered_batch_gives_the_same_counterfactuals_reordered(tiny_generator, guide, five_images, batch_result):
    order = torch.tensor([3, 0, 4, 1, 2])
    reordered = generate(five_images[order], guide, "Young", 0, FAST, tiny_generator,
                         seeds=tuple(FAST.seed + int(i) for i in order))
    torch.testing.assert_close(reordered.images, batch_result.images[order], **BATCH_ROUNDING)
    assert torch.equal(reordered.valid, batch_result.valid[order])


def test_memory_layout_does_not_change_the_counterfactual(tiny_generator, guide, five_images, batch_result):
    channels_last = five_images.contiguous(memory_format=torch.channels_last)
    assert not channels_last.is_contiguous()
    result = generate(channels_last, guide, "Young", 0, FAST, tiny_generator)
    assert torch.equal(result.images, batch_result.images)  # the same computation: exactly equal
    assert torch.equal(result.cost, batch_result.cost)


def test_two_guiding_models_start_from_the_same_noise(tiny_generator, guide, five_images):
    # without guidance nor finishing steps, a counterfactual is the noised and denoised input
    # alone: it must not depend on which model guides (nor on anything they draw at random)
    unguided = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, guidance_scale=0.0,
                                    finish_steps=0, seed=3)
    first = generate(five_images, guide, "Smiling", 1, unguided, tiny_generator)
    second = generate(five_images, tiny_classifier(seed=1).train(), "Smiling", 1, unguided, tiny_generator)
    assert torch.equal(first.images, second.images)
    assert (first.images - five_images).abs().max() > 1e-3  # noise and denoising did change them


def test_a_valid_input_is_left_as_denoising_left_it(tiny_generator):
    bright = torch.full((1, 3, 16, 16), 0.9)  # logit 8: valid and past the margin before any edit
    gentle = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.1, finish_steps=0, margin=3,
                                  preserve_weight=20)
    denoised = generate(bright, BrightnessModel(), "Smiling", 1, gentle, tiny_generator)
    finished = generate(bright, BrightnessModel(), "Smiling", 1, replace(gentle, finish_steps=60), tiny_generator)
    assert bool(finished.valid.all())
    # the finishing steps stop at once: not one of them moves a sample already past the margin
    assert torch.equal(finished.images, denoised.images)
    assert float(finished.cost) < 0.05
    # whereas a face that has to change does
    dark = generate(torch.full((1, 3, 16, 16), 0.4), BrightnessModel(), "Smiling", 1, replace(gentle, finish_steps=60),
                    tiny_generator)
    assert bool(dark.valid.all()) and float(dark.cost) > 4 * float(finished.cost)


def test_pixel_space_diffusers_pipeline_loads_and_guides(tmp_path, dark_images):
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=1000)).save_pretrained(tmp_path / "ddpm")
    generator = load_generator(tmp_path / "ddpm")
    assert isinstance(generator, PixelFaceGenerator) and generator.resolution == 16
    # a pixel pipeline has no face denoiser: a walk method
    result = generate(dark_images, BrightnessModel(), "Male", 1,
                      CounterfactualConfig(method="pca-walk-cone", steps=4, finish_steps=10), generator)
    assert bool((result.probability_after > result.probability_before).all())


def test_project_generator_round_trips(tmp_path, tiny_generator):
    tiny_generator.save_pretrained(tmp_path / "generator", {"note": "test"})
    loaded = load_generator(tmp_path / "generator")
    assert isinstance(loaded, LatentFaceGenerator)
    saved_denoiser, loaded_denoiser = tiny_generator.denoiser.state_dict(), loaded.denoiser.state_dict()
    assert list(loaded_denoiser) == list(saved_denoiser)
    for name, value in saved_denoiser.items():
        assert torch.equal(loaded_denoiser[name], value), name
    # the basis is stored in half precision: exactly its half-precision values come back
    saved_basis, loaded_basis = tiny_generator.autoencoder.state_dict(), loaded.autoencoder.state_dict()
    assert list(loaded_basis) == list(saved_basis)
    for name, value in saved_basis.items():
        assert loaded_basis[name].dtype == torch.float32
        assert torch.equal(loaded_basis[name], value.half().float()), name
    public = lambda config: {k: v for k, v in config.items() if not k.startswith("_")}  # noqa: E731
    assert public(loaded.scheduler.config) == public(tiny_generator.scheduler.config)
    assert json.loads((tmp_path / "generator" / "generator.json").read_text())["note"] == "test"


@pytest.mark.slow
def test_committed_generator_is_the_default(dark_images):
    # the default method on it: the committed generator carries a face denoiser at 64 px (few steps: fast)
    result = generate(dark_images[:1].clone().resize_(1, 3, 64, 64).uniform_(0, 1), BrightnessModel(), "Smiling", 1,
                      CounterfactualConfig(edit_steps=2, output_draws=1))
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


@pytest.mark.parametrize("values", [{"steps": 0}, {"noise_level": -0.1}, {"noise_level": 1.5}, {"guidance_scale": -1},
                                    {"cone_degrees": -1}, {"cone_degrees": 120}])
def test_bad_settings_are_rejected(values):
    with pytest.raises(ValueError):
        CounterfactualConfig(**values)


def test_generation_leaves_the_shared_scheduler_alone(tiny_generator, dark_images):
    # concurrent audits share one generator: generate() must set timesteps on a copy
    before = tiny_generator.scheduler.num_inference_steps
    generate(dark_images[:1], BrightnessModel(), "Smiling", 1,
             CounterfactualConfig(method="pca-walk-cone", steps=7, finish_steps=0), tiny_generator)
    assert tiny_generator.scheduler.num_inference_steps == before
