import numpy as np
import pytest
import torch

from recourse.data import ATTRIBUTES
from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.bundle import EditSpaces
from recourse.generation.spaces.colour import colour_spread, rgb_to_ycbcr
from recourse.generation.spaces.hair import (HairSpace, fit_hair_space, hair_edit, hair_region, hair_statistics,
                                             recolour, steer_hair)

BLOND = ATTRIBUTES.index("Blond_Hair")


def portrait(grey: bool = False) -> torch.Tensor:
    """``(3, 64, 64)``: skin-coloured face on the mean landmarks, dark hair above and beside it,
    a blue background in the top corners and a red jumper under the chin."""
    image = torch.empty(3, 64, 64)
    image[:] = torch.tensor([0.2, 0.4, 0.8])[:, None, None]  # background
    rows, columns = torch.meshgrid(torch.arange(64.0), torch.arange(64.0), indexing="ij")
    head = ((columns - 32) / 24) ** 2 + ((rows - 30) / 30) ** 2 <= 1
    texture = 0.03 * torch.sin(columns * 1.7) * torch.cos(rows * 0.9)
    image[:, head] = (torch.tensor([0.18, 0.12, 0.08])[:, None] + texture[head])  # dark hair, strands
    face = ((columns - 32) / 17) ** 2 + ((rows - 40) / 20) ** 2 <= 1
    image[:, face] = torch.tensor([0.85, 0.65, 0.55])[:, None]
    image[:, 59:] = torch.tensor([0.8, 0.1, 0.1])[:, None, None]  # jumper
    if grey:
        image[:] = rgb_to_ycbcr(image)[0]
    return image.clamp(0, 1)


def person_of(image: torch.Tensor) -> torch.Tensor:
    background = (image - torch.tensor([0.2, 0.4, 0.8])[:, None, None]).abs().sum(0) < 1e-3
    return (~background).float()


def fitted_space() -> HairSpace:
    space = HairSpace()
    space.mean.copy_(torch.tensor([0.3, 0.47, 0.53, -2.0]))
    space.cholesky.copy_(torch.diag(torch.tensor([0.15, 0.03, 0.03, 0.4])))
    blond_z = torch.tensor([2.0, -1.0, 0.5, 1.0])
    space.class_means[list(space.config.attributes).index("Blond_Hair"), 1] = blond_z
    return space.eval()


class HairLightness(torch.nn.Module):
    """40 logits; Blond_Hair's is the brightness of the top rows (where the portrait's hair is)."""

    def forward(self, images):
        top = rgb_to_ycbcr(images)[:, 0, :8].mean(dim=(1, 2))
        logits = torch.zeros(len(images), 40)
        logits[:, BLOND] = (top - 0.4) * 40
        return logits


def test_the_hair_region_is_the_hair_not_the_face_background_or_clothes():
    image = portrait()
    mask = hair_region(image, MEAN_LANDMARKS_64, person_of(image))
    assert float(mask[2:10, 28:36].mean()) > 0.9  # the crown
    assert float(mask[38:46, 26:38].mean()) < 0.05  # the face
    assert float(mask[0:4, 0:4].mean()) < 0.05  # the background
    assert float(mask[61:, :].mean()) < 0.05  # the jumper


def test_a_zero_change_recolours_nothing_and_the_background_never_changes():
    image = portrait()[None]
    mask = hair_region(image[0], MEAN_LANDMARKS_64, person_of(image[0]))
    statistics = hair_statistics(image[0], mask)
    assert statistics is not None
    assert torch.allclose(recolour(image, mask, statistics, torch.zeros(1, 4)), image, atol=1e-6)
    lighter = recolour(image, mask, statistics, torch.tensor([[0.3, -0.05, 0.02, 0.2]]))
    assert float((lighter - image)[0, :, 2:10, 28:36].mean()) > 0.1
    assert torch.equal(lighter[0, :, 0:3, 0:3], image[0, :, 0:3, 0:3])


def test_the_strands_shading_is_kept_and_scaled():
    image = portrait()[None]
    mask = hair_region(image[0], MEAN_LANDMARKS_64, person_of(image[0]))
    statistics = hair_statistics(image[0], mask)
    doubled = recolour(image, mask, statistics, torch.tensor([[0.2, 0.0, 0.0, float(np.log(2))]]))
    before = rgb_to_ycbcr(image)[0, 0, 2:10, 28:36]
    after = rgb_to_ycbcr(doubled)[0, 0, 2:10, 28:36]
    assert float(after.std() / before.std()) == pytest.approx(2.0, rel=0.1)


def test_a_face_without_hair_is_not_edited():
    image = portrait()
    bald = image.clone()
    bald[:, :, :] = torch.where(person_of(image).bool(), torch.tensor([0.85, 0.65, 0.55])[:, None, None], image)
    assert hair_statistics(bald, hair_region(bald, MEAN_LANDMARKS_64, person_of(image))) is None
    edited = hair_edit(fitted_space(), bald[None], HairLightness(), BLOND, torch.tensor([1.0]), CounterfactualConfig(),
                       MEAN_LANDMARKS_64, person_of(image))
    assert torch.equal(edited, bald[None])


def test_the_model_steers_the_hair_lighter_to_reach_blond():
    image = portrait()[None]
    model = HairLightness()
    edited = hair_edit(fitted_space(), image, model, BLOND, torch.tensor([1.0]), CounterfactualConfig(),
                       MEAN_LANDMARKS_64, person_of(image[0]))
    assert float(model(edited)[0, BLOND]) > float(model(image)[0, BLOND]) + 2
    assert torch.equal(edited[0, :, 50:58, 28:36], image[0, :, 50:58, 28:36])  # the face is untouched


def test_a_black_and_white_photo_gets_a_black_and_white_hair_edit():
    image = portrait(grey=True)[None]
    edited = hair_edit(fitted_space(), image, HairLightness(), BLOND, torch.tensor([1.0]), CounterfactualConfig(),
                       MEAN_LANDMARKS_64, person_of(portrait()))
    assert not torch.equal(edited, image)
    assert float(colour_spread(edited)[0]) < 1 / 255


def test_the_space_is_fitted_from_faces_and_saved_and_loaded_the_diffusers_way(tmp_path, monkeypatch):
    import recourse.generation.spaces.person as person

    monkeypatch.setattr(person, "PERSON", lambda faces: torch.stack([person_of(f)[None] for f in faces]))
    generator = torch.Generator().manual_seed(0)
    faces, labels = [], []
    for k in range(60):
        face = portrait()
        shade = float(torch.rand(1, generator=generator)) * 0.5
        face[:, :30] = torch.where(face[:, :30].sum(0) < 0.5, face[:, :30] + shade, face[:, :30])
        faces.append((face.clamp(0, 1) * 255).round().to(torch.uint8))
        row = -np.ones(40)
        row[BLOND] = 1 if shade > 0.25 else -1
        for name in ("Black_Hair", "Brown_Hair", "Gray_Hair"):
            row[ATTRIBUTES.index(name)] = 1 if k % 2 else -1
        labels.append(row)
    images = torch.stack(faces).numpy()
    points = np.repeat(MEAN_LANDMARKS_64[None], 60, axis=0).astype(np.float32)
    space = fit_hair_space(images, points, np.ones(60, bool), np.stack(labels), progress=lambda line: None)
    assert space.config.faces == 60
    blond = space.class_mean("Blond_Hair", 1)
    assert float(blond[0]) > float(space.class_mean("Blond_Hair", 0)[0])  # blond hair is lighter
    EditSpaces({"hair": space}).save_pretrained(tmp_path / "spaces")
    loaded = EditSpaces.from_pretrained(tmp_path / "spaces")
    assert isinstance(loaded.for_attribute("Blond_Hair"), HairSpace)
    assert torch.allclose(loaded.regions["hair"].mean, space.mean, atol=1e-3)


def test_steering_stays_in_the_box():
    image = portrait()[None]
    mask = hair_region(image[0], MEAN_LANDMARKS_64, person_of(image[0]))
    statistics = hair_statistics(image[0], mask)
    space = fitted_space()
    config = CounterfactualConfig(space_box=1.0, space_prior_weight=0.0)
    change = steer_hair(space, image, mask, statistics, HairLightness(), BLOND, torch.tensor([1.0]), config, False)
    z = space.encode(statistics + change[0])
    assert float(z.abs().max()) <= max(1.0, float(space.encode(statistics).abs().max())) + 1e-4


def test_the_artifact_check_fails_hair_coloured_unlike_any_real_hair(monkeypatch):
    import recourse.generation.spaces.person as person
    from recourse.generation.spaces.artifacts import check_attribute_edit

    image = portrait()
    monkeypatch.setattr(person, "PERSON", lambda faces: torch.stack([person_of(f)[None] for f in faces]))
    mask = hair_region(image, MEAN_LANDMARKS_64, person_of(image))
    statistics = hair_statistics(image, mask)
    space = fitted_space()
    space.mean.copy_(statistics)  # the portrait's hair is the typical one
    space.register_to_config(code_energy_limit=4.0)
    spaces = EditSpaces({"hair": space})
    plausible = recolour(image[None], mask, statistics, torch.tensor([[0.1, 0.0, 0.0, 0.0]]))[0]
    green = recolour(image[None], mask, statistics, torch.tensor([[0.3, -0.2, -0.2, 0.0]]))[0]
    assert check_attribute_edit(image, plausible, "Blond_Hair", MEAN_LANDMARKS_64, spaces).passed
    failed = check_attribute_edit(image, green, "Blond_Hair", MEAN_LANDMARKS_64, spaces)
    assert not failed.passed and any("hair" in reason for reason in failed.reasons)
