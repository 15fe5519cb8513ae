"""The denoised counterfactual method, on a tiny random denoiser and tiny linear models."""

from dataclasses import replace

import pytest
import torch
from torch import nn

from recourse.data import attribute_index
from recourse.generation import METHODS, CounterfactualConfig, generate
from recourse.generation import denoised
from recourse.generation.denoised import (
    ReferenceViews, _denoised_change, change_mask, denoised_edit, inpaint, smallest_step,
)
from recourse.generation.face_denoiser import FaceDenoiser

SMILING = attribute_index("Smiling")


class TinyGenerator:
    """What the denoised method reads from a generator: its face denoiser."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.face_denoiser = FaceDenoiser(resolution=32, fold=4, block_out_channels=(32, 32, 32),
                                          attention_levels=(False, False, False)).eval()


class Brightness(nn.Module):
    """40 logits; Smiling's is the mean brightness of the top-left quarter, centred at 0.5."""

    def __init__(self, scale: float = 40.0, step: float | None = None) -> None:
        super().__init__()
        self.scale, self.step = scale, step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logit = self.scale * (x[:, :, :16, :16].mean(dim=(1, 2, 3)) - 0.5)
        if self.step is not None:  # a staircase, as an integer model's logit is
            logit = torch.floor(logit / self.step) * self.step
        logits = torch.zeros(len(x), 40)
        logits[:, SMILING] = logit
        return logits


# A random tiny denoiser is far more contractive than a trained one: a low σ and a coarse edit
# let six steps reach the margin. Over the whole frame: regions have their own tests (test_regions.py).
CONFIG = CounterfactualConfig(method="denoised", margin=1.0, edit_steps=6, edit_learning_rate=0.05,
                              inpaint_steps=2, mask_threshold=0.01, sigma=0.25, edit_resolution=16, region_mask=False)


@pytest.fixture(scope="module")
def generator():
    return TinyGenerator()


def faces(n: int, seed: int = 0) -> torch.Tensor:
    return 0.3 + 0.1 * torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def test_the_method_is_registered_beside_the_walks():
    assert {"denoised", "pca-walk", "pca-walk-cone"} <= set(METHODS)


def test_each_model_drives_its_own_edit_to_a_valid_recourse(generator):
    images = faces(2)
    result = generate(images, Brightness(), "Smiling", 1, CONFIG, generator)
    assert result.valid.all()
    logits = Brightness()(result.images)[:, SMILING]
    assert (logits >= CONFIG.margin).all()
    # the smallest step that counts: a little less of the same edit is not past the margin
    less = images + 0.95 * (result.images - images)
    assert (Brightness()(less)[:, SMILING] < CONFIG.margin).all()


@pytest.mark.slow
def test_results_do_not_depend_on_batch_order_or_layout(generator):
    images = faces(3)
    model = Brightness()
    together = generate(images, model, "Smiling", 1, CONFIG, generator, seeds=(5, 6, 7)).images
    alone = generate(images[1:2], model, "Smiling", 1, CONFIG, generator, seeds=(6,)).images
    reordered = generate(images.flip(0).contiguous(memory_format=torch.channels_last), model, "Smiling", 1, CONFIG,
                         generator, seeds=(7, 6, 5)).images
    assert torch.equal(together[1:2], alone)
    assert torch.equal(together, reordered.flip(0))


def test_a_different_seed_gives_a_different_edit(generator):
    images = faces(1)
    first = generate(images, Brightness(), "Smiling", 1, CONFIG, generator, seeds=(1,)).images
    second = generate(images, Brightness(), "Smiling", 1, CONFIG, generator, seeds=(2,)).images
    assert not torch.equal(first, second)


def test_the_deciding_model_says_where_the_edit_stops(generator):
    images = faces(1)
    staircase = Brightness(step=0.7)
    result = generate(images, Brightness(), "Smiling", 1, CONFIG, generator, decider=staircase)
    assert result.valid.all()
    assert staircase(result.images)[0, SMILING] >= CONFIG.margin


def test_a_face_already_past_the_margin_is_left_as_it_is():
    image = torch.full((1, 3, 32, 32), 0.9)
    edited = torch.full((1, 3, 32, 32), 1.0)
    assert torch.equal(smallest_step(image, edited, Brightness(), SMILING, torch.tensor([1.0]), 1.0), image)


def test_an_edit_that_never_reaches_the_margin_is_returned_whole():
    image = torch.full((1, 3, 32, 32), 0.3)
    edited = torch.full((1, 3, 32, 32), 0.35)  # logit −6 < 1
    assert torch.equal(smallest_step(image, edited, Brightness(), SMILING, torch.tensor([1.0]), 1.0), edited)


def test_outside_the_mask_the_face_is_the_original(generator):
    original, edited = faces(1, seed=1), faces(1, seed=2)
    mask = torch.zeros(1, 1, 32, 32)
    mask[..., 8:16, 8:16] = 1
    painted = inpaint(generator.face_denoiser, edited, original, mask, sigma=0.3, steps=3, seed=0)
    assert torch.equal(painted[..., mask[0, 0] == 0], original[..., mask[0, 0] == 0])
    assert not torch.equal(painted[..., 8:16, 8:16], original[..., 8:16, 8:16])


def test_the_change_mask_covers_the_change_and_its_surroundings_only():
    reference = torch.zeros(1, 3, 32, 32)
    edited = reference.clone()
    edited[..., 10, 10] = 0.5
    mask = change_mask(edited, reference, threshold=0.1, dilation=2)
    assert mask[0, 0, 10, 10] == 1 and mask[0, 0, 9, 11] == 1 and 0 < mask[0, 0, 8, 12] < 1  # a soft seam
    assert mask[0, 0, 20, 20] == 0 and mask[0, 0, 0, 0] == 0


def test_a_generator_without_a_face_denoiser_is_refused_with_a_message():
    with pytest.raises(ValueError, match="face denoiser"):
        generate(faces(1), Brightness(), "Smiling", 1, CONFIG, generator=object())


def test_an_unknown_method_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="pca-walk"):
        generate(faces(1), Brightness(), "Smiling", 1, replace(CONFIG, method="magic"), generator=object())


def test_images_at_another_size_than_the_denoiser_are_refused(generator):
    with pytest.raises(ValueError, match="32 px"):
        generate(torch.rand(1, 3, 16, 16), Brightness(), "Smiling", 1, CONFIG, generator)


def test_no_edit_is_no_change_whatever_the_denoiser_cannot_draw(generator):
    image = faces(1, seed=3)
    change = _denoised_change(generator.face_denoiser, image, torch.zeros_like(image), 0, 0, 0.5)
    assert torch.equal(change, torch.zeros_like(change))


@pytest.mark.parametrize("output", ["difference", "inpaint"])
def test_both_outputs_reach_the_target_and_keep_the_face_outside_the_mask(generator, output):
    image = faces(1, seed=4)
    config = replace(CONFIG, denoised_output=output, mask_threshold=0.1, mask_dilation=0)
    edited, mask = denoised_edit(image, Brightness(), SMILING, torch.tensor([1.0]), config,
                                 generator.face_denoiser, seed=0)
    outside = mask[0, 0] == 0
    assert bool(outside.any()), "the mask covers everything: nothing is checked"
    assert torch.allclose(edited[..., outside], image[..., outside], atol=1e-6)
    assert Brightness()(edited)[0, SMILING] > Brightness()(image)[0, SMILING]


def test_an_unknown_output_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="difference, inpaint"):
        CounterfactualConfig(denoised_output="paste")


class CountingDenoiser(nn.Module):
    """The tiny denoiser, counting its calls that carry no gradient (the reference views, and
    the final edited views averaged over the output draws)."""

    def __init__(self, denoiser: FaceDenoiser) -> None:
        super().__init__()
        self.denoiser, self.config, self.unedited = denoiser, denoiser.config, 0

    def forward(self, x: torch.Tensor, sigma) -> torch.Tensor:
        self.unedited += not torch.is_grad_enabled()
        return self.denoiser(x, sigma)

    def denoise_signed(self, x: torch.Tensor, sigma) -> torch.Tensor:
        return self.denoiser.denoise_signed(x, sigma)


@pytest.mark.slow
def test_a_second_model_on_the_same_task_reuses_the_reference_views_and_gets_the_same_numbers(generator, monkeypatch):
    monkeypatch.setattr(denoised, "REFERENCE_VIEWS", ReferenceViews())
    counting = CountingDenoiser(generator.face_denoiser)
    shared = TinyGenerator.__new__(TinyGenerator)
    shared.face_denoiser = counting
    images = faces(1, seed=4)
    first = generate(images, Brightness(), "Smiling", 1, CONFIG, shared, seeds=(3,)).images
    assert counting.unedited == CONFIG.edit_steps + 2 * CONFIG.output_draws  # references of each step and draw
    second = generate(images, Brightness(scale=30.0), "Smiling", 1, CONFIG, shared, seeds=(3,)).images
    # only its own edited draws: no reference computed again
    assert counting.unedited == CONFIG.edit_steps + 3 * CONFIG.output_draws
    monkeypatch.setattr(denoised, "REFERENCE_VIEWS", ReferenceViews())  # empty: the same numbers from scratch
    assert torch.equal(second, generate(images, Brightness(scale=30.0), "Smiling", 1, CONFIG, shared, seeds=(3,)).images)
    assert torch.equal(first, generate(images, Brightness(), "Smiling", 1, CONFIG, shared, seeds=(3,)).images)


def test_the_reference_views_are_bounded_and_never_mix_denoisers(generator):
    views = ReferenceViews(size=2)
    image, noise = faces(1), torch.zeros(1, 3, 32, 32)
    for stream in range(3):
        views.get(generator.face_denoiser, image, noise, 0, stream, 0.5)
    assert len(views._views) == 2
    other = TinyGenerator().face_denoiser
    torch.nn.init.zeros_(next(other.parameters()))
    mine = views.get(generator.face_denoiser, image, noise, 0, 2, 0.5)
    assert not torch.equal(mine, views.get(other, image, noise, 0, 2, 0.5))
