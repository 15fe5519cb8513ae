import numpy as np
import torch

from recourse.generation.regions import MEAN_LANDMARKS_64
from recourse.generation.spaces.templates import SPACES
from recourse.generation.spaces.warp import coverage, fit_affine, from_template, template_to_face, to_template
from tests.spaces_fixtures import smooth_faces


def test_fit_affine_recovers_a_known_map():
    points = np.random.default_rng(0).normal(size=(12, 2)) * 10
    affine = np.array([[1.1, 0.1, 3.0], [-0.05, 0.9, -2.0]])
    moved = points @ affine[:, :2].T + affine[:, 2]
    assert np.allclose(fit_affine(points, moved), affine)


def test_the_mean_face_reads_its_own_box_exactly():
    spec = SPACES["mouth"]
    images = smooth_faces(1)
    identity = template_to_face(MEAN_LANDMARKS_64[list(spec.anchors)], MEAN_LANDMARKS_64[list(spec.anchors)])
    template = to_template(images, [identity], spec.box)
    x0, y0, x1, y1 = spec.box
    assert torch.allclose(template, images[:, :, y0:y1, x0:x1], atol=1e-5)


def test_there_and_back_keeps_the_region_of_a_moved_face():
    spec = SPACES["mouth"]
    images = smooth_faces(1, seed=1)
    anchors = MEAN_LANDMARKS_64[list(spec.anchors)]
    moved = anchors @ np.array([[1.05, 0.04], [-0.03, 0.97]]).T + np.array([0.8, -0.6])
    affine = template_to_face(anchors, moved)
    back = from_template(to_template(images, [affine], spec.box), [affine], spec.box, (64, 64))
    inside = from_template(coverage(spec.box), [affine], spec.box, (64, 64)) > 0.999
    assert inside.sum() > 400
    assert float((back - images).abs()[inside.expand_as(images)].mean()) < 0.01


def test_display_size_reads_the_same_place():
    spec = SPACES["eyes"]
    images = smooth_faces(1, seed=2)
    large = torch.nn.functional.interpolate(images, size=256, mode="bicubic", align_corners=False)
    identity = template_to_face(MEAN_LANDMARKS_64[list(spec.anchors)], MEAN_LANDMARKS_64[list(spec.anchors)])
    assert (to_template(large, [identity], spec.box) - to_template(images, [identity], spec.box)).abs().mean() < 0.01


def test_gradients_reach_the_template():
    spec = SPACES["mouth"]
    texture = torch.zeros(1, 3, *spec.size, requires_grad=True)
    affine = template_to_face(MEAN_LANDMARKS_64[list(spec.anchors)], MEAN_LANDMARKS_64[list(spec.anchors)])
    from_template(texture, [affine], spec.box, (64, 64)).sum().backward()
    assert float(texture.grad.abs().sum()) > 0
