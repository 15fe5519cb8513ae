"""The editing stage of guidance: the cone around the robust guide, the stop at the margin,
and results that depend on the pixels only."""

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch

from recourse.audit.paired import Student, student_recourse
from recourse.generation import CounterfactualConfig, generate
from recourse.generation.guidance import cone_projection
from tests.conftest import BrightnessModel, tiny_classifier

# the walk with its cone: its steps, stop and guide are what these tests are about
# grey test images: the stop mechanics are tested apart from keeping a monochrome photo's chroma
EDIT = CounterfactualConfig(method="pca-walk-cone", finish_steps=200, finish_learning_rate=0.2, margin=1.0,
                            keep_monochrome=False)


def angle(a: torch.Tensor, b: torch.Tensor) -> float:
    return math.degrees(math.acos(float(torch.nn.functional.cosine_similarity(a, b, dim=1).clamp(-1, 1))))


def test_a_direction_inside_the_cone_keeps_its_direction():
    direction, axis = torch.tensor([[1.0, 0.2]]), torch.tensor([[1.0, 0.0]])
    turned = cone_projection(direction, axis, 30.0)
    assert torch.allclose(turned, direction / direction.norm())


@pytest.mark.parametrize("degrees", [0.0, 15.0, 45.0])
def test_a_direction_outside_is_turned_onto_the_cone_towards_itself(degrees):
    direction, axis = torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([[2.0, 0.0, 0.0]])
    turned = cone_projection(direction, axis, degrees)
    assert float(turned.norm()) == pytest.approx(1.0)
    assert angle(turned, axis) == pytest.approx(degrees, abs=1e-3)
    # it stays in the plane of the two, on the side of the direction
    assert float(turned[0, 2]) == 0.0 and float(turned[0, 1]) >= 0.0
    # even a direction opposite to the axis comes out on the cone
    assert angle(cone_projection(-axis + torch.tensor([[0.0, 0.1, 0.0]]), axis, degrees), axis) == \
        pytest.approx(degrees, abs=1e-3)


def test_editing_stops_where_the_logit_crosses_the_margin(tiny_generator):
    # the brightness model's logit is linear in brightness: the interpolated stop lands on it
    dark = torch.full((2, 3, 16, 16), 0.4)
    result = generate(dark, BrightnessModel(), "Smiling", 1, EDIT, tiny_generator)
    logits = torch.logit(result.probability_after)
    assert bool(result.valid.all())
    assert logits.tolist() == pytest.approx([EDIT.margin] * 2, abs=0.05)


class Guide(torch.nn.Module):
    """A 'robust' guide whose Smiling logit rises with the red channel only; the other 39
    logits are constant."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(len(images), 40)
        logits[:, 31] = 20 * (images[:, 0].mean(dim=(1, 2)) - 0.5)  # 31: Smiling
        return logits


def test_the_guide_turns_the_edit_within_the_cone(tiny_generator):
    from recourse.generation import PixelFaceGenerator

    dark = torch.full((1, 3, 16, 16), 0.4)
    unet = torch.nn.Identity()
    unet.config = SimpleNamespace(sample_size=16)  # never called: no DDIM stage by default
    pixels = PixelFaceGenerator(unet=unet, scheduler=tiny_generator.scheduler)
    free = generate(dark, BrightnessModel(), "Smiling", 1, EDIT, pixels)
    guided = generate(dark, BrightnessModel(), "Smiling", 1, dataclasses.replace(EDIT, cone_degrees=10.0),
                      dataclasses.replace(pixels, guide=Guide()))
    channel_change = lambda r: (r.images - dark).mean(dim=(0, 2, 3))  # noqa: E731
    # unguided, brightness rises in all three channels alike; guided, mostly in red
    free_change, guided_change = channel_change(free), channel_change(guided)
    assert float(free_change.std()) < 1e-4
    assert float(guided_change[0]) > 3 * float(guided_change[1:].abs().max())
    assert bool(guided.valid.all())


@pytest.mark.slow
def test_the_same_pixels_give_the_same_counterfactual_in_any_batch(tiny_generator):
    images = torch.rand(5, 3, 16, 16, generator=torch.Generator().manual_seed(0)) * 0.5
    model = tiny_classifier(seed=2, gain=4.0)
    targets = torch.tensor([1, 0, 1, 1, 0])
    together = generate(images, model, "Smiling", targets, EDIT, tiny_generator).images
    reordered = generate(images.flip(0).contiguous(memory_format=torch.channels_last), model, "Smiling",
                         targets.flip(0), EDIT, tiny_generator).images.flip(0)
    alone = torch.cat([generate(images[i:i + 1], model, "Smiling", targets[i:i + 1], EDIT, tiny_generator).images
                       for i in range(5)])
    assert torch.equal(together, reordered) and torch.equal(together, alone)


def test_a_pixel_nudge_moves_the_edit_a_little(tiny_generator):
    image = torch.full((1, 3, 16, 16), 0.4)
    nudged = image.clone()
    nudged[0, 1, 7, 7] += 1 / 255
    first = generate(image, BrightnessModel(), "Smiling", 1, EDIT, tiny_generator)
    second = generate(nudged, BrightnessModel(), "Smiling", 1, EDIT, tiny_generator)
    # the interpolated stop is continuous: the cost moves by about the nudge, not by a step
    assert abs(float(first.cost) - float(second.cost)) < 1e-3


class Bent(torch.nn.Module):
    """Logit = 40 · (brightness − 0.5)³ · 100: convex on the way up, so a straight line between
    two steps crosses zero before the logit does."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        centred = images.mean(dim=(1, 2, 3)) - 0.5
        return (4000 * centred ** 3 + 1e-3 * centred).unsqueeze(1).expand(-1, 40)


def test_a_minimal_recourse_is_valid_even_where_the_logit_bends(tiny_generator):
    dark = torch.full((3, 3, 16, 16), 0.3) + torch.arange(3).view(3, 1, 1, 1) * 0.05
    result = generate(dark, Bent(), "Smiling", 1, dataclasses.replace(EDIT, margin=0.0, finish_learning_rate=1.0),
                      tiny_generator)
    assert bool(result.valid.all())
    assert (torch.logit(result.probability_after) < 0.05).all()  # and still at the boundary, not past it


class Staircase(torch.nn.Module):
    """A fake-quantized model's logit: 40 · (brightness − edge) rounded down to whole levels,
    with the straight-through gradient of the unrounded line."""

    def __init__(self, edge: float = 0.5) -> None:
        super().__init__()
        self.edge = edge

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        line = 40 * (images.mean(dim=(1, 2, 3)) - self.edge)
        return (line + (torch.floor(line) - line).detach()).unsqueeze(1).expand(-1, 40)


@pytest.mark.parametrize("start", [0.30, 0.4, 0.4 + 1 / 255])
def test_the_bisected_stop_lands_on_the_staircase_edge(tiny_generator, start):
    # the logit first reaches margin 1 at brightness 0.525, wherever the edit starts
    image = torch.full((1, 3, 16, 16), start)
    bisected = generate(image, Staircase(), "Smiling", 1, dataclasses.replace(EDIT, stop_search="bisect"),
                        tiny_generator)
    assert bool(bisected.valid.all())
    assert float(bisected.images.mean()) == pytest.approx(0.525, abs=2e-4)
    interpolated = generate(image, Staircase(), "Smiling", 1, EDIT, tiny_generator)
    # interpolating between the levels at the last two steps misses the edge
    assert abs(float(interpolated.images.mean()) - 0.525) > 1e-3


def test_an_unknown_stop_search_is_refused():
    with pytest.raises(ValueError, match="stop_search must be one of interpolate, bisect"):
        CounterfactualConfig(stop_search="newton")


@pytest.mark.parametrize("stop_search", ["interpolate", "bisect"])
def test_switching_off_at_margin_0_does_not_stop_on_a_logit_of_exactly_0(tiny_generator, stop_search):
    # a quantized logit lands on 0 exactly; the decision there is 1, so "off" must go one level further
    bright = torch.full((1, 3, 16, 16), 0.6)
    config = dataclasses.replace(EDIT, margin=0.0, stop_search=stop_search)
    result = generate(bright, Staircase(), "Smiling", 0, config, tiny_generator)
    assert bool(result.valid.all())
    assert float(torch.logit(result.probability_after)) == pytest.approx(-1.0)  # the first level below 0


def test_the_deciding_model_says_where_the_twins_edit_stops(tiny_generator):
    # the twin (smooth) decides 1 from brightness 0.5; the integer decider a rounding step later, from 0.51
    twin, decider = BrightnessModel(), Staircase(edge=0.51)
    dark = torch.full((1, 3, 16, 16), 0.4)
    config = dataclasses.replace(EDIT, margin=0.0, stop_search="bisect")
    on_twin = generate(dark, twin, "Smiling", 1, config, tiny_generator)
    assert float(on_twin.images.mean()) == pytest.approx(0.5, abs=2e-4)
    on_decider = generate(dark, twin, "Smiling", 1, config, tiny_generator, decider=decider)
    assert float(on_decider.images.mean()) == pytest.approx(0.51, abs=2e-4)
    assert bool(on_decider.valid.all()) and float(on_decider.probability_after) >= 0.5
    # a student's own recourse stops where its decider flips, so it is valid for the model that decides
    student = Student("int", twin=twin, decider=decider)
    target = torch.ones(1, dtype=torch.long)
    kept = student_recourse(dark, "Smiling", target, on_twin.images, student, config, tiny_generator, (0,))
    assert bool(kept.valid.all())
    on_the_twins_stop = student_recourse(dark, "Smiling", target, on_twin.images, student, config, tiny_generator,
                                         (0,), stop_on_decider=False)
    assert not bool(on_the_twins_stop.valid.any())
