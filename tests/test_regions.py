"""Attribute regions: the table, the masks' geometry and softness, the adaptive cut, the
landmark cache, and denoised edits confined to the region."""

from dataclasses import asdict, replace

import numpy as np
import pytest
import torch
from torch import nn

from recourse.data import ATTRIBUTES, attribute_index
from recourse.generation import CounterfactualConfig
from recourse.generation import regions
from recourse.generation.denoised import confined_to_region, denoised_edit, edit_budget, edit_region
from recourse.generation.regions import (
    GROUPS, MEAN_LANDMARKS_64, REGIONS, LandmarkCache, adaptive_mask, region_mask, shape_mask, to_frame,
)
from tests.conftest import hq_val_faces, tiny_face_denoiser


@pytest.fixture
def fresh_cache(monkeypatch):
    cache = LandmarkCache()
    monkeypatch.setattr(regions, "LANDMARKS", cache)
    return cache


def blank(size: int = 64, count: int = 1) -> torch.Tensor:
    return torch.full((count, 3, size, size), 0.5)


def mean_mask(group: str, size: int = 64) -> torch.Tensor:
    return shape_mask(to_frame(MEAN_LANDMARKS_64, size, size, side=64), group, size, size)


def centre(mask: torch.Tensor) -> np.ndarray:
    """(x, y) of a mask's centre of mass."""
    ys, xs = torch.meshgrid(torch.arange(mask.shape[-2]), torch.arange(mask.shape[-1]), indexing="ij")
    mass = mask.sum()
    return np.array([float((mask * xs).sum() / mass), float((mask * ys).sum() / mass)])


# --- the table -----------------------------------------------------------------------------------


def test_every_attribute_has_a_region_of_a_known_group_and_every_group_is_used():
    assert set(REGIONS) == set(ATTRIBUTES) and len(ATTRIBUTES) == 40
    assert set(REGIONS.values()) == set(GROUPS)
    assert REGIONS["Smiling"] == "mouth" and REGIONS["Eyeglasses"] == "eyes" and REGIONS["Bangs"] == "hair"
    assert REGIONS["Goatee"] == "lower_face" and REGIONS["Young"] == "whole_face"


def test_an_unknown_attribute_is_refused_with_a_message():
    with pytest.raises(ValueError, match="CelebA attribute"):
        region_mask(blank(), "Freckles")


def test_the_mean_landmarks_are_68_points_inside_the_frame():
    assert MEAN_LANDMARKS_64.shape == (68, 2)
    assert (MEAN_LANDMARKS_64 > 5).all() and (MEAN_LANDMARKS_64 < 60).all()


# --- the masks -----------------------------------------------------------------------------------


def test_a_frame_without_a_face_gets_the_mean_landmarks_and_says_so(fresh_cache):
    result = region_mask(blank(), "Smiling")
    assert result.found.tolist() == [False]
    assert result.group == "mouth"
    assert torch.equal(result.mask[0, 0], mean_mask("mouth"))


def test_the_mouth_lies_in_the_lower_middle_and_the_eyes_above_it():
    mouth, eyes, nose = centre(mean_mask("mouth")), centre(mean_mask("eyes")), centre(mean_mask("nose"))
    assert 26 < mouth[0] < 38 and 42 < mouth[1] < 54
    assert 26 < eyes[0] < 38 and 22 < eyes[1] < 34
    assert eyes[1] < nose[1] < mouth[1]
    # eyeglass frames: the eyes' region reaches from temple to temple
    columns = (mean_mask("eyes") > 0.5).any(dim=0).nonzero()
    assert columns.min() <= 15 and columns.max() >= 48
    assert float(mean_mask("mouth")[:, :20].sum()) == 0 and float(mean_mask("mouth")[:30].sum()) == 0


def test_hair_is_outside_the_face_and_the_whole_face_leaves_the_background_out():
    hair, face = mean_mask("hair"), mean_mask("whole_face")
    assert hair[2, 32] == 1 and hair[30, 2] == 1 and hair[40, 32] == 0  # top of the head, a side; not the nose
    assert hair[63, 31] == 0  # the neck below the chin is not hair
    assert face[40, 32] == 1 and face[24, 32] == 1  # the nose and the brows' line
    assert face[12, 32] == 0  # the forehead's top: the hairline's or the bangs' as often as skin
    assert face[0, 0] == face[0, 63] == face[63, 0] == face[63, 63] == 0
    assert float(face.mean()) < 0.6
    assert float(mean_mask("neck")[63, 31]) == 1 and float(mean_mask("neck")[40, 32]) == 0
    ears = mean_mask("ears")
    assert ears[45, 12] > 0.5 and ears[45, 51] > 0.5 and ears[45, 32] == 0


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_mask_is_in_0_1_with_a_soft_edge_and_scales_with_the_frame(group):
    mask = mean_mask(group)
    assert mask.min() >= 0 and mask.max() <= 1
    assert bool((mask == 1).any()) and bool((mask == 0).any())
    assert bool(((mask > 0.05) & (mask < 0.95)).any()), "no soft edge"
    small = mean_mask(group, size=32)
    assert np.abs(centre(small) - (centre(mask) + 0.5) / 2 + 0.5).max() < 1.0  # the same place, half the size
    assert abs(float(small.mean()) - float(mask.mean())) < 0.02


def test_a_batch_gets_one_mask_per_face_at_the_images_dtype(fresh_cache):
    result = region_mask(torch.cat([blank(32), torch.rand(1, 3, 32, 32)]), "Eyeglasses")
    assert result.mask.shape == (2, 1, 32, 32) and result.mask.dtype == torch.float32
    assert result.found.shape == (2,)


# --- the adaptive cut ----------------------------------------------------------------------------


def test_the_adaptive_mask_keeps_the_share_of_the_region_where_the_gradient_is_largest():
    region = mean_mask("whole_face")[None, None]
    gradient = torch.zeros(1, 3, 64, 64)
    gradient[..., 32:52, :] = 1.0  # the gradient lives in a band across the face, more than 30% of it
    gradient += 0.01 * torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    cut = adaptive_mask(region, gradient, 0.3)
    assert abs(float(cut.sum() / region.sum()) - 0.3) < 0.05
    assert cut.min() >= 0 and bool((cut <= region + 1e-6).all())
    assert bool((cut[region == 0] == 0).all())
    assert float(cut[..., 30:54, :].sum()) > 0.99 * float(cut.sum())  # where the gradient is
    assert bool(((cut > 0.05) & (cut < 0.95)).any()), "no soft edge"
    assert adaptive_mask(region, gradient, 1.0) is region


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5, float("nan")])
def test_a_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match="share"):
        adaptive_mask(mean_mask("mouth")[None, None], torch.zeros(1, 3, 64, 64), share)
    with pytest.raises(ValueError, match="adaptive_share"):
        CounterfactualConfig(adaptive_share=share)


def test_region_mask_must_be_a_switch():
    with pytest.raises(ValueError, match="region_mask"):
        CounterfactualConfig(region_mask="yes")
    with pytest.raises(ValueError, match="whole_face_region"):
        CounterfactualConfig(whole_face_region=1)
    with pytest.raises(ValueError, match="region_edit_steps"):
        CounterfactualConfig(region_edit_steps=-1)
    # the default chosen on validation: local attributes in their region, the whole face over the frame
    default = CounterfactualConfig()
    assert default.region_mask is True and default.whole_face_region is False and default.adaptive_share == 1.0


def test_local_attributes_are_confined_with_their_own_budget_and_the_whole_face_is_not():
    default = CounterfactualConfig()
    for attribute in ("Smiling", "Eyeglasses", "Bangs", "Goatee"):
        assert confined_to_region(default, attribute)
        assert edit_budget(default, attribute) == (default.region_edit_steps, default.region_edit_learning_rate)
    for attribute in ("Young", "Male", "Heavy_Makeup"):
        assert not confined_to_region(default, attribute)
        assert edit_budget(default, attribute) == (default.edit_steps, default.edit_learning_rate)
    assert confined_to_region(replace(default, whole_face_region=True), "Young")
    off = replace(default, region_mask=False)
    assert not any(confined_to_region(off, a) for a in REGIONS)
    assert edit_budget(off, "Smiling") == (off.edit_steps, off.edit_learning_rate)


# --- the landmark cache --------------------------------------------------------------------------


def test_a_face_is_fitted_once_for_two_calls(fresh_cache):
    face = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    first = region_mask(face, "Smiling")
    assert fresh_cache.fitted == 1
    second = region_mask(face.clone(), "Eyeglasses")  # another model, another attribute, the same face
    assert fresh_cache.fitted == 1
    assert first.found.tolist() == second.found.tolist()
    region_mask(torch.cat([face, blank()]), "Bangs")  # only the new frame is fitted
    assert fresh_cache.fitted == 2


def test_the_cache_is_bounded():
    cache = LandmarkCache(size=2)
    for value in (0.1, 0.2, 0.3):
        cache.get(blank() * 0 + value)
    assert len(cache._fits) == 2 and cache.fitted == 3
    cache.get(blank() * 0 + 0.1)  # pushed out: fitted again
    assert cache.fitted == 4


# --- denoised edits inside the region ------------------------------------------------------------

BLOND = attribute_index("Blond_Hair")


class TopBrightness(nn.Module):
    """40 logits; Blond_Hair's (a hair attribute) is the brightness of the frame's top rows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(len(x), 40)
        logits[:, BLOND] = 40 * (x[:, :, :8].mean(dim=(1, 2, 3)) - 0.5)
        return logits


EDIT = CounterfactualConfig(method="denoised", margin=1.0, edit_steps=4, edit_learning_rate=0.05, inpaint_steps=2,
                            mask_threshold=0.01, mask_dilation=1, sigma=0.25, edit_resolution=16, output_draws=2,
                            region_mask=True, region_edit_steps=4, region_edit_learning_rate=0.05)


@pytest.fixture(scope="module")
def denoiser():
    return tiny_face_denoiser(resolution=32)


def face32() -> torch.Tensor:
    return 0.3 + 0.1 * torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(4))


@pytest.mark.parametrize("output", ["difference", "inpaint"])
def test_a_region_edit_leaves_the_face_outside_the_region_exactly_as_it_was(denoiser, fresh_cache, output):
    image = face32()
    config = replace(EDIT, denoised_output=output)
    edited, mask = denoised_edit(image, TopBrightness(), BLOND, torch.tensor([1.0]), config, denoiser, seed=0)
    region = region_mask(image, "Blond_Hair").mask
    outside = region[0, 0] == 0
    assert bool(outside.any()) and bool((~outside).any())
    assert torch.equal(edited[..., outside], image[..., outside])
    assert bool((mask <= region + 1e-6).all())
    assert not torch.equal(edited, image)  # the edit did happen, inside
    assert TopBrightness()(edited)[0, BLOND] > TopBrightness()(image)[0, BLOND]
    # without the region the same edit reaches outside it
    free, _ = denoised_edit(image, TopBrightness(), BLOND, torch.tensor([1.0]), replace(config, region_mask=False),
                            denoiser, seed=0)
    assert not torch.equal(free[..., outside], image[..., outside])


def test_a_region_edit_does_not_depend_on_batch_order_or_layout(denoiser, fresh_cache):
    """The default (region) edits, as the frame's (tests/test_denoised.py): each face's edit is
    its own, whatever the batch, its order or its memory layout."""
    from recourse.generation import generate

    class Generator:
        face_denoiser = denoiser

    images = 0.3 + 0.1 * torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(9))
    model = TopBrightness()  # each face's landmarks are fitted once (the cache), as in an audit
    together = generate(images, model, "Blond_Hair", 1, EDIT, Generator(), seeds=(5, 6)).images
    alone = generate(images[1:2], model, "Blond_Hair", 1, EDIT, Generator(), seeds=(6,)).images
    reordered = generate(images.flip(0).contiguous(memory_format=torch.channels_last), model, "Blond_Hair", 1, EDIT,
                         Generator(), seeds=(6, 5)).images
    assert not torch.equal(together, images)
    assert torch.equal(together[1:2], alone)
    assert torch.equal(together, reordered.flip(0))


def test_the_adaptive_cut_follows_the_models_own_gradient(denoiser, fresh_cache):
    image, sign = face32(), torch.tensor([1.0])
    assert edit_region(image, TopBrightness(), BLOND, sign, replace(EDIT, region_mask=False)) is None
    # without a region, the whole frame is cut: the model only looks at the top rows
    cut = edit_region(image, TopBrightness(), BLOND, sign, replace(EDIT, region_mask=False, adaptive_share=0.2))
    assert float(cut[..., :10, :].sum()) > 0.95 * float(cut.sum())
    edited, _ = denoised_edit(image, TopBrightness(), BLOND, sign, replace(EDIT, adaptive_share=0.2), denoiser, seed=0)
    within = edit_region(image, TopBrightness(), BLOND, sign, replace(EDIT, adaptive_share=0.2))
    assert bool((within <= region_mask(image, "Blond_Hair").mask + 1e-6).all())
    assert torch.equal(edited[..., within[0, 0] == 0], image[..., within[0, 0] == 0])


def test_the_settings_travel_with_results_and_commands():
    from recourse.cli import build_parser, generation_arguments
    from recourse.cli.common import _counterfactual_config

    config = CounterfactualConfig(region_mask=False, adaptive_share=0.3)  # both away from today's defaults
    assert {"region_mask": False, "adaptive_share": 0.3}.items() <= asdict(config).items()
    arguments = generation_arguments(asdict(config), CounterfactualConfig())
    assert arguments == ["--region-mask", "off", "--adaptive-share", "0.3"]
    args = build_parser().parse_args(["counterfactual", "face.png", "--attribute", "Smiling", "--out", "o.png",
                                      *arguments])
    assert _counterfactual_config(args) == replace(config, margin=CounterfactualConfig().margin)


# --- real faces ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.requires("hq_data")
def test_on_real_faces_the_fitted_mouth_is_near_the_framings_mean_mouth(fresh_cache):
    (faces,) = hq_val_faces(20)
    result = region_mask(faces, "Smiling")
    assert result.found.sum() >= 18
    mean = centre(mean_mask("mouth"))
    distances = np.array([np.linalg.norm(centre(mask[0]) - mean) for mask in result.mask])
    assert (distances[result.found] < 3.0).mean() >= 0.8, distances
    assert not np.allclose(distances[result.found], 0)  # fitted, not the mean


def test_fewer_steps_asked_mean_fewer_region_steps_too_in_the_cli_as_in_the_app():
    from recourse.cli import build_parser
    from recourse.cli.common import _counterfactual_config
    from recourse.generation.guidance import region_steps_for

    assert (region_steps_for(24), region_steps_for(4), region_steps_for(1)) == (48, 8, 2)
    base = ["counterfactual", "face.png", "--attribute", "Smiling", "--out", "o.png"]
    assert _counterfactual_config(build_parser().parse_args([*base, "--edit-steps", "4"])).region_edit_steps == 8
    named = build_parser().parse_args([*base, "--edit-steps", "4", "--region-edit-steps", "10"])
    assert _counterfactual_config(named).region_edit_steps == 10
    assert _counterfactual_config(build_parser().parse_args(base)).region_edit_steps == 48
