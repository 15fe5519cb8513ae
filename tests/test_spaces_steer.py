from types import SimpleNamespace

import numpy as np
import torch

from recourse.data import attribute_index
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.methods import generate
from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.bundle import EditSpaces
from recourse.generation.spaces.colour import colour_spread
from recourse.generation.spaces.steer import place, render, space_edits
from tests.spaces_fixtures import MouthBoxModel, smooth_faces, synthetic_space

LIPSTICK = attribute_index("Wearing_Lipstick")
CONFIG = CounterfactualConfig(method="region-space", margin=1.0, overshoot=1.0, space_prior_weight=0.02)


def _generator(space):
    return SimpleNamespace(edit_spaces=EditSpaces({space.config.group: space}))


def test_a_zero_change_returns_the_face_exactly():
    space, image = synthetic_space(), smooth_faces(1)
    placement = place(space, image, MEAN_LANDMARKS_64, True)
    assert torch.equal(render(space, image, [placement], torch.zeros(1, 8)), image)


def test_the_edit_stays_inside_the_region():
    space, image = synthetic_space(), smooth_faces(1)
    placement = place(space, image, MEAN_LANDMARKS_64, True)
    edited = render(space, image, [placement], torch.full((1, 8), 2.0))
    changed = (edited - image).abs().amax(dim=1)[0] > 1e-6
    assert changed.any()
    assert not bool(changed[placement.alpha[0, 0] == 0].any())
    assert not bool(changed[:30].any())  # nothing above the mouth's template


def test_a_model_flips_its_own_edit_in_the_space():
    space, faces = synthetic_space(), smooth_faces(2)
    model = MouthBoxModel(LIPSTICK)
    with torch.no_grad():
        before = model(faces)[:, LIPSTICK]
    target = (before < 0).long()
    result = generate(faces, model, "Wearing_Lipstick", target, CONFIG, _generator(space))
    assert bool(result.valid.all())
    assert (result.images[:, :, :30] == faces[:, :, :30]).all()


def test_a_monochrome_face_stays_monochrome():
    space = synthetic_space()
    grey = smooth_faces(1)[:, :1].expand(-1, 3, -1, -1).contiguous()
    edited = space_edits(space, grey, MouthBoxModel(LIPSTICK), LIPSTICK, torch.tensor([1.0]), CONFIG,
                         MEAN_LANDMARKS_64[None], np.array([True]))
    assert not torch.equal(edited, grey)
    assert float(colour_spread(edited)[0]) <= 1 / 255


def test_the_same_task_gives_the_same_edit():
    space, faces = synthetic_space(), smooth_faces(2)
    model = MouthBoxModel(LIPSTICK)
    first = generate(faces, model, "Wearing_Lipstick", 1, CONFIG, _generator(space))
    second = generate(faces.flip(0), model, "Wearing_Lipstick", 1, CONFIG, _generator(space))
    assert torch.equal(first.images, second.images.flip(0))


def test_faces_steered_together_are_each_edited_as_if_alone():
    space, faces = synthetic_space(), smooth_faces(3)
    model = MouthBoxModel(LIPSTICK)
    sign = torch.tensor([1.0, -1.0, 1.0])  # the faces stop after different numbers of steps
    points, found = np.repeat(MEAN_LANDMARKS_64[None], 3, axis=0), np.ones(3, bool)
    together = space_edits(space, faces, model, LIPSTICK, sign, CONFIG, points, found)
    for i in range(3):
        alone = space_edits(space, faces[i:i + 1], model, LIPSTICK, sign[i:i + 1], CONFIG, points[i:i + 1],
                            found[i:i + 1])
        assert torch.allclose(together[i:i + 1], alone, atol=1e-5)


def test_an_attribute_of_no_fitted_space_gets_the_pixel_edit_and_says_so():
    from recourse.generation.methods import edit_kind

    generator = _generator(synthetic_space())
    assert edit_kind(CONFIG, "Wearing_Lipstick", generator) == "region-space"
    assert edit_kind(CONFIG, "Eyeglasses", generator) == "denoised"
    try:  # the synthetic generator has no face denoiser: the fallback's own error names it
        generate(smooth_faces(1), MouthBoxModel(LIPSTICK), "Eyeglasses", 1, CONFIG, generator)
    except ValueError as error:
        assert "face denoiser" in str(error)
    else:
        raise AssertionError("expected a ValueError")


def test_the_model_gathers_no_gradient():
    space, faces = synthetic_space(), smooth_faces(1)
    model = MouthBoxModel(LIPSTICK)
    generate(faces, model, "Wearing_Lipstick", 1, CONFIG, _generator(space))
    assert all(parameter.grad is None for parameter in model.parameters())


def test_a_grey_face_edited_by_any_method_keeps_its_chroma():
    grey = smooth_faces(1)[:, :1].expand(-1, 3, -1, -1).contiguous()

    def colouring(images, *_):
        return (images + torch.tensor([0.1, 0.0, -0.1])[None, :, None, None]).clamp(0, 1)

    from recourse.generation import methods

    methods.METHODS["test-colouring"] = colouring
    try:
        config = CounterfactualConfig(method="test-colouring")
        result = generate(grey, MouthBoxModel(LIPSTICK), "Wearing_Lipstick", 1, config, SimpleNamespace())
        assert float(colour_spread(result.images)[0]) <= 1 / 255
        off = generate(grey, MouthBoxModel(LIPSTICK), "Wearing_Lipstick", 1,
                       CounterfactualConfig(method="test-colouring", keep_monochrome=False), SimpleNamespace())
        assert float(colour_spread(off.images)[0]) > 0.1
    finally:
        del methods.METHODS["test-colouring"]


def test_a_darker_part_reads_less_light_and_takes_a_smaller_relative_shading():
    space = synthetic_space()  # its mean part has luminance 0.5
    dark = torch.full((1, 3, 64, 64), 0.25)
    light = torch.full((1, 3, 64, 64), 0.75)
    dark_placement = place(space, dark, MEAN_LANDMARKS_64, True)
    assert abs(dark_placement.light - 0.5) < 0.05
    assert abs(place(space, light, MEAN_LANDMARKS_64, True).light - 1.5) < 0.05
    dz = torch.full((1, 8), 0.3)  # small enough that nothing is clamped at black
    absolute = render(space, dark, [dark_placement], dz, luminance=True, tone_kept=True) - dark
    relative = render(space, dark, [dark_placement], dz, luminance=True, tone_kept=True, relative=True) - dark
    assert absolute.abs().amax() > 0.005
    torch.testing.assert_close(relative, absolute * dark_placement.light, atol=2e-3, rtol=0.05)
