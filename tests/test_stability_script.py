"""recourse stability: its layout check compares the same pixels *and seeds*, so a method that
draws noise (the denoised one) reports 0 where batch, order and layout do not matter."""

import pytest
import torch

from recourse.reproducibility import layout_difference, nudge_one_pixel
from tests.test_denoised import CONFIG, Brightness, TinyGenerator, faces


@pytest.mark.slow
def test_the_layout_check_gives_each_image_its_tasks_seed():
    generator, model = TinyGenerator(), Brightness()
    images = faces(4)
    assert layout_difference(images, "Smiling", model, CONFIG, generator, first=3) == 0.0
    # the check can fail: counterfactuals drawn with other seeds differ
    made = torch.cat([generate_one(images[i:i + 1], model, generator, seed=100 + i) for i in range(4)])
    assert layout_difference(images, "Smiling", model, CONFIG, generator, first=3, made=made) > 0


def generate_one(image, model, generator, seed):
    from recourse.audit.paired import flip_targets
    from recourse.generation import generate

    return generate(image, model, "Smiling", flip_targets(model, image, "Smiling"), CONFIG, generator,
                    seeds=(seed,)).images


def test_nudge_moves_one_value_of_each_image_by_one_level():
    images = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    moved = (nudge_one_pixel(images, seed=1) - images).abs()
    assert ((moved > 0).flatten(1).sum(1) == 1).all()
    assert torch.allclose(moved.flatten(1).max(1).values, torch.full((3,), 1 / 255))
