import numpy as np
import torch

from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.artifacts import check_edit, counted, novel_colour_share, part_energies
from recourse.generation.spaces.critic import ArtifactCritic, damage
from tests.spaces_fixtures import smooth_faces, synthetic_space


def _skin_face() -> torch.Tensor:
    face = smooth_faces(1)[0] * 0.2 + torch.tensor([0.75, 0.55, 0.45])[:, None, None]
    return face.clamp(0, 1)


def _blob(face: torch.Tensor, colour: tuple[float, float, float]) -> torch.Tensor:
    blob = face.clone()
    blob[:, 44:52, 24:40] = torch.tensor(colour)[:, None, None]
    return blob


def test_an_unedited_face_passes_every_reading():
    space = synthetic_space()
    space.register_to_config(code_energy_limit=1e-9, residual_energy_limit=1e-9)  # even past the limits
    face = _skin_face()
    check = check_edit(face, face, space, MEAN_LANDMARKS_64)
    assert check.passed and check.reasons == ()


def test_a_teal_blob_on_a_face_without_teal_fails_on_its_colour():
    face = _skin_face()
    check = check_edit(face, _blob(face, (0.1, 0.6, 0.6)))
    assert not check.passed and "colours the photo never shows" in check.reasons[0]
    assert novel_colour_share(face, _blob(face, (0.75, 0.55, 0.45))) == 0.0  # the face's own colour


def test_a_coloured_black_and_white_photo_fails():
    grey = smooth_faces(1)[0, :1].expand(3, -1, -1).contiguous()
    coloured = (grey + torch.tensor([0.08, 0.0, -0.08])[:, None, None]).clamp(0, 1)
    check = check_edit(grey, coloured)
    assert check.monochrome_kept is False and not check.passed
    assert check_edit(grey, (grey * 0.9).clamp(0, 1)).monochrome_kept is True


def test_a_change_the_space_cannot_draw_fails_its_realism():
    space = synthetic_space()
    face = _skin_face()
    code, residual = part_energies(space, face, MEAN_LANDMARKS_64)
    space.register_to_config(code_energy_limit=code * 10 + 1, residual_energy_limit=residual * 1.5)
    noisy = face.clone()
    noisy[:, 40:56, 20:44] += torch.randn(3, 16, 24, generator=torch.Generator().manual_seed(0)) * 0.2
    check = check_edit(face, noisy.clamp(0, 1), space, MEAN_LANDMARKS_64)
    assert not check.passed and any("texture" in reason for reason in check.reasons)


def test_a_failed_check_strikes_a_tick_and_none_stays_none():
    face = _skin_face()
    failed, passed = check_edit(face, _blob(face, (0.1, 0.6, 0.6))), check_edit(face, face)
    assert counted(True, failed) is False and counted(True, passed) is True
    assert counted(None, failed) is None and counted(True, None) is True


def test_damage_changes_the_template_and_the_critic_reads_any_template():
    template = smooth_faces(1)[0, :, :20, :30]
    taper = torch.ones(20, 30)
    generator = torch.Generator().manual_seed(0)
    damaged = [damage(template, taper, generator) for _ in range(10)]
    assert all(d.shape == template.shape and 0 <= float(d.min()) and float(d.max()) <= 1 for d in damaged)
    assert sum(not torch.allclose(d, template) for d in damaged) >= 8
    assert ArtifactCritic()(torch.stack(damaged)).shape == (10,)
