from types import SimpleNamespace

import torch

from recourse.data import attribute_index
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.methods import generate
from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.bundle import EditSpaces
from recourse.generation.spaces.colour import colour_spread
from recourse.generation.spaces.glasses import (RANGES, TYPICAL, Placement, coverage, display_glasses, draw,
                                                read_back)
from tests.spaces_fixtures import smooth_faces, synthetic_space

GLASSES = attribute_index("Eyeglasses")
CONFIG = CounterfactualConfig(method="region-space", margin=1.0, overshoot=1.0)


class EyeBandDarkness(torch.nn.Module):
    """40 logits; Eyeglasses' is how much darker the band of the eyes is than the face's mean."""

    def forward(self, images):
        band = images[:, :, 26:34, 16:48].mean(dim=(1, 2, 3))
        logits = torch.zeros(len(images), 40)
        logits[:, GLASSES] = (images.mean(dim=(1, 2, 3)) - band) * 60 - 1
        return logits


def test_the_pair_sits_on_the_eyes_and_nowhere_else():
    placement = Placement.of(MEAN_LANDMARKS_64)
    frame, lens = coverage(placement, TYPICAL, 64, 64)
    left_eye = MEAN_LANDMARKS_64[36:42].mean(0).round().astype(int)
    assert float(lens[left_eye[1], left_eye[0]]) > 0.9  # inside a lens
    assert float(frame[left_eye[1], left_eye[0]]) < 0.05  # not on the frame
    assert float(frame[45:, 20:44].max()) < 0.01  # nothing on the mouth
    assert 0.01 < float((frame > 0.5).float().mean()) < 0.08  # a thin frame, not a band


def test_a_black_and_white_photo_stays_black_and_white():
    grey = smooth_faces(1).mean(dim=1, keepdim=True).expand(-1, 3, -1, -1).contiguous()
    worn = draw(grey, Placement.of(MEAN_LANDMARKS_64), torch.tensor([1.2, 1.1, 0.9, 0.3]))
    assert not torch.equal(worn, grey)
    assert float(colour_spread(worn)[0]) < 1 / 255


def test_the_model_puts_on_its_own_pair_within_the_ranges():
    faces = smooth_faces(2)
    space = synthetic_space("eyes")
    generator = SimpleNamespace(edit_spaces=EditSpaces({"eyes": space}))
    result = generate(faces, EyeBandDarkness(), "Eyeglasses", 1, CONFIG, generator)
    assert bool(result.valid.all())
    placement = Placement.of(MEAN_LANDMARKS_64)
    frame, lens = coverage(placement, RANGES[:, 1], 64, 64)
    untouched = (frame + lens) < 1e-4
    assert torch.allclose(result.edits[:, :, untouched], faces[:, :, untouched], atol=1e-3)


def test_the_pair_is_read_back_from_a_model_size_counterfactual_and_drawn_sharp_on_the_photo():
    display = smooth_faces(1, seed=3)[0]
    display = torch.nn.functional.interpolate(display[None], size=256, mode="bilinear", align_corners=False)[0]
    x = torch.nn.functional.interpolate(display[None], size=64, mode="area")[0]
    values = torch.tensor([1.0, 1.05, 0.9, 0.1])
    worn = draw(x[None], Placement.of(MEAN_LANDMARKS_64), values)[0]
    counterfactual = x + 0.8 * (worn - x)
    share, found = read_back(x, counterfactual, MEAN_LANDMARKS_64)
    assert abs(share - 0.8) < 0.1
    assert float((found - values).abs().max()) < 0.15
    shown = display_glasses(display, x, counterfactual, MEAN_LANDMARKS_64)
    steepest = (shown[:, :, 1:] - shown[:, :, :-1]).abs().max()
    enlarged = torch.nn.functional.interpolate(counterfactual[None], size=256, mode="bilinear", align_corners=False)[0]
    assert float(steepest) > 1.5 * float((enlarged[:, :, 1:] - enlarged[:, :, :-1]).abs().max())  # sharp edges
    assert torch.allclose(shown[:, 230:], display[:, 230:], atol=1e-5)  # nothing below the face's middle changes


def test_no_edit_shows_the_photo_as_it_is():
    display = smooth_faces(1, seed=4)[0]
    display = torch.nn.functional.interpolate(display[None], size=256, mode="bilinear", align_corners=False)[0]
    x = torch.nn.functional.interpolate(display[None], size=64, mode="area")[0]
    shown = display_glasses(display, x, x.clone(), MEAN_LANDMARKS_64)
    assert float((shown - display).abs().max()) < 0.02
