"""The mouth's shape space: a warp that moves the face's own pixels, nothing far from the mouth,
a closing that hides what lies between the lips, a fit whose modes are symmetric, and the
display redrawn from the model-size pair."""

from types import SimpleNamespace

import numpy as np
import torch

from recourse.data import attribute_index
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.methods import generate
from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.bundle import EditSpaces
from recourse.generation.spaces.mouth_shape import (
    MIRROR, MouthShapeSpace, display_mouth, fit_mouth_shape, inner_gap, place_mouth, warp_mouth,
)

SMILING = attribute_index("Smiling")
OPEN = MEAN_LANDMARKS_64.copy()
OPEN[[65, 66, 67], 1] += 3.0  # the lower inner lip 3 px down: a mouth open on its teeth
OPEN[[55, 56, 57, 58, 59], 1] += 3.0


def _space() -> MouthShapeSpace:
    rng = np.random.default_rng(0)
    points = MEAN_LANDMARKS_64[None] + rng.normal(0, 0.3, (200, 68, 2))
    opened = rng.random(200) < 0.5
    points[np.ix_(opened, [55, 56, 57, 58, 59, 65, 66, 67], [1])] += 2.5
    labels = np.zeros((200, 40), np.uint8)
    labels[opened, SMILING] = 1
    return fit_mouth_shape(points, np.ones(200, bool), labels, ("Smiling",), components=3)


def _teeth(points: np.ndarray = OPEN) -> torch.Tensor:
    """A grey face with white teeth between the inner lips of ``points``."""
    image = torch.full((1, 3, 64, 64), 0.4)
    top, bottom = int(round(points[62, 1])), int(round(points[66, 1]))
    left, right = int(round(points[60, 0])), int(round(points[64, 0]))
    image[..., top + 1:bottom, left + 2:right - 1] = 1.0
    return image


def test_the_fit_learns_symmetric_modes_and_the_absent_class_gap():
    space = _space()
    basis = space.basis.view(3, 20, 2)
    mirrored = basis[:, list(MIRROR)] * torch.tensor([-1.0, 1.0])
    assert torch.allclose(basis, mirrored, atol=1e-4)  # a mode moves both corners alike
    assert space.closed_gap("Smiling") < inner_gap(OPEN)
    assert float((space.class_mean("Smiling", 1) - space.class_mean("Smiling", 0)).norm()) > 1.0


def test_no_change_leaves_the_face_as_it_is():
    space, image = _space(), _teeth()
    placement = place_mouth(space, OPEN)
    assert placement.closing == 0
    assert torch.allclose(warp_mouth(space, image, placement, torch.zeros(1, 3)), image, atol=1e-5)


def test_a_mouth_taken_away_closes_over_its_teeth_and_nothing_far_moves():
    space, image = _space(), _teeth()
    placement = place_mouth(space, OPEN, "Smiling", closes=True)
    assert 0.5 < placement.closing <= 1
    closed = warp_mouth(space, image, placement, torch.zeros(1, 3))
    teeth_before, teeth_after = int((image > 0.9).sum()), int((closed > 0.9).sum())
    assert teeth_after < 0.5 * teeth_before
    assert torch.equal(closed[..., :30, :], image[..., :30, :])  # eyes and brows untouched
    assert torch.allclose(closed[..., 60:, :], image[..., 60:, :])


def test_teeth_shown_are_covered_whole_even_where_the_inner_lips_sit_on_them():
    from recourse.generation.spaces.mouth_shape import lips_over_teeth, teeth_mask

    space, image = _space(), _teeth()
    on_teeth = OPEN.copy()
    on_teeth[[61, 62, 63], 1] += 2.5  # dlib's upper inner lip down on the teeth
    assert teeth_mask(image[0], on_teeth).any()
    moved_out = lips_over_teeth(image[0], on_teeth)
    assert np.all(moved_out[[61, 62, 63], 1] < on_teeth[[61, 62, 63], 1])  # back up to the teeth's top edge
    assert np.array_equal(moved_out[:60], on_teeth[:60])  # nothing but the inner lips moves
    placement = place_mouth(space, on_teeth, "Smiling", closes=True, image=image[0])
    assert placement.closing == 1.0  # a closed mouth shows no teeth: the class's gap is a seam, not a white line
    closed = warp_mouth(space, image, placement, torch.zeros(1, 3))
    assert int((closed > 0.9).sum()) < 0.1 * int((image > 0.9).sum())
    # a face without teeth between its lips keeps the class's gap
    lips_only = place_mouth(space, OPEN, "Smiling", closes=True, image=torch.full((3, 64, 64), 0.4))
    assert lips_only.closing < 1.0 and lips_only.closing == place_mouth(space, OPEN, "Smiling", closes=True).closing


def test_a_mouth_moves_toward_the_target_class_s_typical_mouth_and_no_further():
    from recourse.generation.spaces.mouth_shape import steer_mouths
    from tests.spaces_fixtures import MouthBoxModel

    space = _space()
    faces = torch.cat([_teeth(), _teeth()])
    sign = torch.tensor([-1.0, 1.0])
    placements = [place_mouth(space, OPEN, "Smiling", closes=True, image=faces[0]), place_mouth(space, OPEN)]
    config = CounterfactualConfig(method="region-space", margin=50.0, overshoot=1.0)  # an aim no move reaches
    dz = steer_mouths(space, faces, placements, MouthBoxModel(SMILING), SMILING, sign, config)
    for i, side in enumerate(sign):
        toward = space.class_mean("Smiling", int(side > 0)) - placements[i].codes[0]
        assert torch.all(dz[i] * toward >= -1e-6)  # never away from the class's mouth
        assert torch.all(dz[i].abs() <= toward.abs() + 1e-6)  # never past it
    assert float(dz.abs().sum()) > 0


def test_a_highlight_on_a_lip_apart_from_the_teeth_is_no_tooth():
    from recourse.generation.spaces.mouth_shape import lips_over_teeth, teeth_mask

    large = torch.nn.functional.interpolate(_teeth(), size=256, mode="nearest")[0]  # teeth from row 192
    large[:, 182:184, 112:140] = 1.0  # a shine on the upper lip, lip between it and the teeth
    assert teeth_mask(large, OPEN)[182:184].any()  # as light as a tooth
    assert np.array_equal(lips_over_teeth(large, OPEN), OPEN)  # but not in the run between the lips


def test_a_mouth_taken_away_flips_a_model_that_reads_its_teeth():
    space = _space()

    class Teeth(torch.nn.Module):  # Smiling's logit: how much white the mouth shows
        def forward(self, images):
            logits = torch.zeros(len(images), 40)
            logits[:, SMILING] = 40 * (images[:, :, 44:54, 20:44].mean(dim=(1, 2, 3)) - 0.45)
            return logits

    image, model = _teeth(), Teeth()
    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth_shape": space}))
    config = CounterfactualConfig(method="region-space", margin=1.0, overshoot=1.0)
    result = generate(image, model, "Smiling", 0, config, generator)
    with torch.no_grad():
        before, after = model(image)[0, SMILING], model(result.edits)[0, SMILING]
    assert float(after) < 0 < float(before)  # the decision flipped: the mouth closed over its teeth
    assert all(parameter.grad is None for parameter in model.parameters())


def test_the_display_is_the_pair_redrawn_at_its_own_size():
    space = _space()
    x = _teeth()[0]
    display = torch.nn.functional.interpolate(x[None], size=256, mode="bilinear", align_corners=False)[0]
    unchanged = display_mouth(space, display, x, x, OPEN, "Smiling", closes=False)
    assert unchanged.shape == (3, 256, 256)
    assert torch.allclose(unchanged, display, atol=2e-3)
    placement = place_mouth(space, OPEN)
    moved = warp_mouth(space, x[None], placement, torch.tensor([[1.5, 0.0, 0.0]]))[0]
    redrawn = display_mouth(space, display, x, moved, OPEN, "Smiling", closes=False)
    assert float((redrawn - display).abs().max()) > 0.1


def test_the_space_saves_and_loads_the_diffusers_way(tmp_path):
    space = _space()
    EditSpaces({"mouth_shape": space}).save_pretrained(tmp_path)
    loaded = EditSpaces.from_pretrained(tmp_path).regions["mouth_shape"]
    assert isinstance(loaded, MouthShapeSpace)
    assert loaded.config.closed_gaps == space.config.closed_gaps
    assert torch.allclose(loaded.basis, space.basis, atol=1e-3)


def test_mouths_steered_together_are_each_edited_as_if_alone():
    from recourse.generation.spaces.mouth_shape import mouth_edits

    space = _space()

    class Corners(torch.nn.Module):  # a logit read off the mouth's rows, another off its corners
        def forward(self, images):
            logits = torch.zeros(len(images), 40)
            logits[:, SMILING] = 30 * (images[:, :, 44:54, 20:44].mean(dim=(1, 2, 3)) - 0.45)
            return logits + 5 * (images[:, :1, 46:50, 22:26].mean(dim=(1, 2, 3)) - 0.4)[:, None]

    faces = torch.cat([_teeth(), _teeth() * 0.9, _teeth().flip(-1)])
    points = np.repeat(OPEN[None], 3, axis=0)
    sign = torch.tensor([-1.0, 1.0, -1.0])
    config = CounterfactualConfig(method="region-space", margin=1.0, overshoot=1.0)
    together = mouth_edits(space, faces, Corners(), SMILING, sign, config, points, "Smiling")
    for i in range(3):
        alone = mouth_edits(space, faces[i:i + 1], Corners(), SMILING, sign[i:i + 1], config, points[i:i + 1],
                            "Smiling")
        assert torch.allclose(together[i:i + 1], alone, atol=1e-5)


def test_a_mouth_is_moved_to_close_and_painted_to_open():
    from recourse.generation.spaces.steer import mouth_counterfactuals, shaded_counterfactuals, space_counterfactuals
    from tests.spaces_fixtures import MouthBoxModel, synthetic_space

    index = attribute_index("Mouth_Slightly_Open")
    shape, texture = _space(), synthetic_space()
    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth_shape": shape, "mouth": texture}))
    config = CounterfactualConfig(method="region-space", margin=1.0, overshoot=1.0, space_prior_weight=0.02)
    faces, model = torch.cat([_teeth(), _teeth() * 0.8]), MouthBoxModel(index)
    result = generate(faces, model, "Mouth_Slightly_Open", torch.tensor([0, 1]), config, generator)
    _, closed = mouth_counterfactuals(faces[:1], model, index, torch.tensor([-1.0]), config, shape)
    _, shaded = shaded_counterfactuals(faces[:1], closed, model, index, torch.tensor([-1.0]), config, texture)
    _, opened = space_counterfactuals(faces[1:], model, index, torch.tensor([1.0]), config, texture)
    with torch.no_grad():
        convinced = float(-model(closed)[0, index]) >= 1.0  # the move reaches the margin (1 here)
    assert torch.allclose(result.edits[:1], closed if convinced else shaded, atol=1e-5)
    assert torch.allclose(result.edits[1:], opened, atol=1e-5)


class Scaled(torch.nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return self.factor * logits


def test_a_move_that_does_not_convince_its_model_is_shaded_until_it_does():
    from recourse.generation.spaces.colour import rgb_to_ycbcr
    from recourse.generation.spaces.steer import mouth_counterfactuals, shaded_counterfactuals
    from tests.spaces_fixtures import MouthBoxModel, synthetic_space

    index = attribute_index("Smiling")
    shape, texture = _space(), synthetic_space()
    generator = SimpleNamespace(edit_spaces=EditSpaces({"mouth_shape": shape, "mouth": texture}))
    config = CounterfactualConfig(method="region-space", margin=3.0, overshoot=1.0, space_prior_weight=0.02)
    faces, model = _teeth(), torch.nn.Sequential(MouthBoxModel(index), Scaled(0.5))
    # a colour photo: colour that does not follow the light (a toned print's does)
    faces = (faces + 0.1 * torch.rand(faces.shape, generator=torch.Generator().manual_seed(0)) - 0.05).clamp(0, 1)
    _, moved = mouth_counterfactuals(faces, model, index, torch.tensor([-1.0]), config, shape)
    with torch.no_grad():
        assert float(-model(moved)[0, index]) < 2.0  # no mouth the shape space allows is 2 logits away
    result = generate(faces, model, "Smiling", 0, config, generator)
    _, shaded = shaded_counterfactuals(faces, moved, model, index, torch.tensor([-1.0]), config, texture)
    assert torch.allclose(result.edits, shaded, atol=1e-5)
    with torch.no_grad():
        assert float(-model(result.edits)[0, index]) > float(-model(moved)[0, index])
    # the shading changes light only: the moved face's colour stays (where no channel is clipped
    # at black or white), and nothing goes from its teeth
    change = rgb_to_ycbcr(result.edits) - rgb_to_ycbcr(moved)
    inside = ((result.edits > 0) & (result.edits < 1)).all(dim=1)
    assert float(change[:, 0].abs().max()) > 0.01
    assert float(change[:, 1:].abs().amax(dim=1)[inside].max()) < 2e-3


def test_a_moved_and_shaded_mouth_is_redrawn_with_its_shading():
    space = _space()
    x = _teeth()[0]
    display = torch.nn.functional.interpolate(x[None], size=128, mode="bilinear", align_corners=False)[0]
    moved = warp_mouth(space, x[None], place_mouth(space, OPEN), torch.tensor([[1.5, 0.0, 0.0]]))[0]
    shade = torch.zeros(1, 64, 64)
    shade[:, 40:56, 20:44] = -0.08  # darker round the mouth, the same in every channel
    redrawn = display_mouth(space, display, x, (moved + shade).clamp(0, 1), OPEN, "Smiling", closes=False)
    plain = display_mouth(space, display, x, moved, OPEN, "Smiling", closes=False)
    assert redrawn is not None and plain is not None
    darker = (plain - redrawn)[:, 90:102, 48:80]  # inside the shade, away from its edges
    assert float(darker.mean()) > 0.04
    assert float((darker.amax(0) - darker.amin(0)).abs().max()) < 0.02  # grey: light, not colour


def test_a_painted_mouth_is_not_redrawn_as_a_moved_one():
    space = _space()
    x = _teeth()[0]
    display = torch.nn.functional.interpolate(x[None], size=128, mode="bilinear", align_corners=False)[0]
    painted = x.clone()
    painted[:, 44:52, 24:40] = torch.tensor([0.8, 0.2, 0.3])[:, None, None]  # a red patch no warp of x draws
    assert display_mouth(space, display, x, painted, OPEN, "Smiling", closes=True) is None
