import torch

from recourse.generation import CounterfactualConfig
from recourse.compression.recourse_points import RecoursePoints, cached_recourse_points, make_recourse_points
from tests.conftest import BrightnessModel

# the walk: its edits flip the tiny generator's brightness decisions, so that points exist
FAST = CounterfactualConfig(method="pca-walk-cone", steps=10, noise_level=0.5, finish_steps=5)


def _points(tiny_generator):
    images = torch.rand(6, 3, 16, 16, generator=torch.Generator().manual_seed(3)) * 0.6
    images[3:] += 0.4  # some bright faces, so that both targets occur
    return images, make_recourse_points(BrightnessModel(), images, ("Smiling", "Young"), FAST, tiny_generator)


def test_points_are_the_teachers_valid_flips_with_attributes_in_turn(tiny_generator):
    from recourse.data import ATTRIBUTES

    images, points = _points(tiny_generator)
    assert points.attempted == 6 and 0 < points.count <= 6 and points.seconds > 0
    assert points.sources.tolist() == sorted(points.sources.tolist())
    for image, source, attribute, target in zip(points.images, points.sources, points.attributes, points.targets):
        assert ATTRIBUTES[int(attribute)] == ("Smiling", "Young")[int(source) % 2]
        teacher_before = float(BrightnessModel()(images[source][None])[0, 0]) >= 0
        assert int(target) == 1 - int(teacher_before)  # flips the teacher's decision
        assert (float(BrightnessModel()(image[None])[0, 0]) >= 0) == bool(target)  # valid for the teacher


def test_points_round_trip_and_are_made_once(tiny_generator, tmp_path):
    _, points = _points(tiny_generator)
    calls = []

    def make() -> RecoursePoints:
        calls.append(1)
        return points

    first = cached_recourse_points(tmp_path / "points.safetensors", make)
    again = cached_recourse_points(tmp_path / "points.safetensors", make)
    assert len(calls) == 1 and (tmp_path / "points.json").is_file()
    for name in ("images", "attributes", "targets", "sources"):
        assert torch.equal(getattr(again, name), getattr(first, name))
    assert again.attempted == points.attempted and again.seconds == points.seconds


def test_fewer_images_than_attributes_is_fine(tiny_generator):
    images = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(4)) * 0.6
    points = make_recourse_points(BrightnessModel(), images, ("Smiling", "Young", "Male", "Eyeglasses"), FAST,
                                  tiny_generator)
    assert points.attempted == 2 and set(points.sources.tolist()) <= {0, 1}


def test_the_cache_key_follows_the_teacher_the_generator_the_settings_and_the_count(tmp_path):
    from dataclasses import replace

    from recourse.compression.recourse_points import recourse_points_path

    path = recourse_points_path(tmp_path, "teacher", "generator", FAST, 12)
    assert path.parent == tmp_path and path.name.startswith("recourse-points-") and path.name.endswith("-12.safetensors")
    assert recourse_points_path(tmp_path, "teacher", "generator", FAST, 12) == path
    others = {recourse_points_path(tmp_path, "other", "generator", FAST, 12),
              recourse_points_path(tmp_path, "teacher", "other", FAST, 12),
              recourse_points_path(tmp_path, "teacher", "generator", replace(FAST, steps=8), 12),
              recourse_points_path(tmp_path, "teacher", "generator", FAST, 13)}
    assert len(others) == 4 and path not in others
