"""One edit, several stops: each counterfactual lies on the straight path to its whole edit,
another margin's stop is another point of the same path, and the columns of any two sets of
counterfactuals follow paired recourse's definitions."""

from dataclasses import replace

import pytest
import torch

from recourse.audit.paired import Student, columns_of, paired_recourse, stop_on_paths
from recourse.generation import generate
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


@pytest.mark.slow
def test_the_columns_of_given_counterfactuals_are_paired_recourses_own(generator):
    images = faces(2)
    student = Student("staircase", Brightness(), Brightness(step=0.7))
    paired = paired_recourse(images, "Smiling", torch.ones(2), Brightness(), student, CONFIG, generator, seeds=(1, 2))
    recomputed = columns_of(images, "Smiling", torch.ones(2), Brightness(), student, paired.teacher.images,
                            paired.student.counterfactuals)
    for name in recomputed.__dataclass_fields__:
        assert torch.equal(getattr(recomputed, name), getattr(paired.columns, name)), name


@pytest.mark.slow
def test_the_two_models_editing_at_once_give_the_sequential_numbers(generator):
    images = faces(2)
    student = Student("staircase", Brightness(), Brightness(step=0.7))
    one_after_other = paired_recourse(images, "Smiling", torch.ones(2), Brightness(), student, CONFIG, generator,
                                      seeds=(1, 2))
    at_once = paired_recourse(images, "Smiling", torch.ones(2), Brightness(), student, CONFIG, generator,
                              seeds=(1, 2), concurrent=True)
    assert torch.equal(at_once.teacher.images, one_after_other.teacher.images)
    assert torch.equal(at_once.student.counterfactuals, one_after_other.student.counterfactuals)
    assert torch.equal(at_once.student.edits, one_after_other.student.edits)
    for name in at_once.columns.__dataclass_fields__:
        assert torch.equal(getattr(at_once.columns, name), getattr(one_after_other.columns, name)), name


def test_a_stage_limit_hit_while_both_models_edit_is_raised_after_the_second_edit_ends(generator):
    images = faces(1)
    student = Student("staircase", Brightness(), Brightness(step=0.7))
    calls = []

    def check(stage):
        calls.append(stage)
        raise TimeoutError(stage)

    with pytest.raises(TimeoutError, match="full-precision"):
        paired_recourse(images, "Smiling", torch.ones(1), Brightness(), student, CONFIG, generator, seeds=(1,),
                        check=check, concurrent=True)
    assert calls == ["full-precision counterfactual"]


def test_each_of_the_two_edits_gets_half_the_cores_and_a_smaller_setting_stays(monkeypatch):
    import torch

    from recourse.audit.paired import share_cores_between_paired_edits, threads_for_paired_edits

    assert [threads_for_paired_edits(cores) for cores in (1, 2, 3, 16)] == [1, 1, 1, 8]
    before = torch.get_num_threads()
    try:
        monkeypatch.setattr("os.cpu_count", lambda: 64)
        torch.set_num_threads(3)
        assert share_cores_between_paired_edits() == 3  # never raised
        monkeypatch.setattr("os.cpu_count", lambda: 2)
        assert share_cores_between_paired_edits() == 1
    finally:
        torch.set_num_threads(before)
