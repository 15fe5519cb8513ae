"""One edit, several stops: each counterfactual lies on the straight path to its whole edit,
another margin's stop is another point of the same path, and the columns of any two sets of
counterfactuals follow paired recourse's definitions."""

from dataclasses import replace

import pytest
import torch

from recourse.generation import generate
from recourse.paired import Student, columns_of, paired_recourse, stop_on_paths
from tests.test_denoised import CONFIG, SMILING, Brightness, TinyGenerator, faces


@pytest.fixture(scope="module")
def generator():
    return TinyGenerator()


def test_the_counterfactual_is_the_stop_of_its_whole_edit(generator):
    images = faces(2)
    result = generate(images, Brightness(), "Smiling", 1, replace(CONFIG, margin=2.0), generator, seeds=(3, 4))
    assert result.edits is not None and result.edits.shape == images.shape
    again = stop_on_paths(images, result.edits, Brightness(), "Smiling", torch.ones(2), 2.0)
    assert torch.equal(again, result.images)
    # a lower margin stops earlier on the same path: less of the same change
    earlier = stop_on_paths(images, result.edits, Brightness(), "Smiling", torch.ones(2), 0.5)
    assert (Brightness()(earlier)[:, SMILING] >= 0.5).all()
    share = (earlier - images).abs().sum() / (result.images - images).abs().sum()
    assert 0 < float(share) < 1
    cosine = torch.nn.functional.cosine_similarity((earlier - images).flatten(1), (result.images - images).flatten(1))
    assert (cosine > 0.999).all()


def test_the_columns_of_given_counterfactuals_are_paired_recourses_own(generator):
    images = faces(2)
    student = Student("staircase", Brightness(), Brightness(step=0.7))
    paired = paired_recourse(images, "Smiling", torch.ones(2), Brightness(), student, CONFIG, generator, seeds=(1, 2))
    recomputed = columns_of(images, "Smiling", torch.ones(2), Brightness(), student, paired.teacher.images,
                            paired.student.counterfactuals)
    for name in recomputed.__dataclass_fields__:
        assert torch.equal(getattr(recomputed, name), getattr(paired.columns, name)), name
