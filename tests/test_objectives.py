import copy

import pytest
import torch

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.compression import CFQQATConfig, quantize
from recourse.compression.objectives import label_objective, matching_loss, partial_edits, recourse_term
from recourse.compression.recourse_points import RecoursePoints


@pytest.fixture(scope="module")
def setting():
    torch.manual_seed(0)
    teacher = AttributeClassifier(ClassifierConfig(widths=(8, 16), dropout=0.0)).eval()
    generator = torch.Generator().manual_seed(1)
    originals = torch.rand(24, 3, 32, 32, generator=generator)
    sources = torch.arange(0, 24, 2)
    points = RecoursePoints(images=torch.rand(12, 3, 32, 32, generator=generator),
                            attributes=torch.randint(0, 40, (12,), generator=generator),
                            targets=(torch.rand(12, generator=generator) > 0.5).float(),
                            sources=sources, attempted=24, seconds=1.0)
    labels = (torch.rand(24, 40, generator=generator) > 0.5).long()
    return teacher, originals, points, labels


def test_partial_edits_run_from_the_source_image_to_the_point(setting):
    _, originals, points, _ = setting
    index = torch.tensor([0, 3, 5])
    torch.testing.assert_close(partial_edits(points, originals, index, torch.zeros(3)), originals[points.sources[index]])
    torch.testing.assert_close(partial_edits(points, originals, index, torch.ones(3)), points.images[index])
    half = partial_edits(points, originals, index, torch.full((3,), 0.5))
    torch.testing.assert_close(half, (originals[points.sources[index]] + points.images[index]) / 2)


def test_matching_term_is_zero_for_the_teacher_and_grows_with_a_lean_towards_the_target(setting):
    teacher, originals, points, _ = setting
    term = recourse_term("match", points, 8, teacher, originals)
    assert float(term(copy.deepcopy(teacher), torch.Generator().manual_seed(0)).detach()) == pytest.approx(0.0, abs=1e-10)

    class Leaning(torch.nn.Module):  # the teacher with every logit pushed up by `shift`
        def __init__(self, shift: float) -> None:
            super().__init__()
            self.shift = shift

        def forward(self, x):
            return teacher(x) + self.shift

    small, large = (float(term(Leaning(s), torch.Generator().manual_seed(0)).detach()) for s in (0.5, 2.0))
    assert small == pytest.approx(0.25, rel=1e-5) and large == pytest.approx(4.0, rel=1e-5)
    # the first version's target term rewards the lean instead
    target = recourse_term("target", points, 12)
    assert float(target(Leaning(50.0), torch.Generator()).detach()) != float(target(Leaning(-50.0), torch.Generator()).detach())


def test_matching_loss_compares_all_forty_logits(setting):
    teacher, originals, _, _ = setting

    class OneOff(torch.nn.Module):
        def forward(self, x):
            logits = teacher(x)
            return torch.cat([logits[:, :1] + 4.0, logits[:, 1:]], dim=1)

    assert float(matching_loss(OneOff(), teacher, originals[:4]).detach()) == pytest.approx(16.0 / 40, rel=1e-5)


def test_label_objective_adds_the_weighted_term_only_when_weighted(setting):
    teacher, originals, points, labels = setting
    calls = []

    def term(model, generator):
        calls.append(1)
        return torch.tensor(2.0)

    images = originals[:4]
    plain = label_objective()(teacher, images, labels[:4].float(), torch.Generator()).detach()
    assert float(label_objective(term, 0.0)(teacher, images, labels[:4].float(), torch.Generator()).detach()) == float(plain)
    assert not calls
    weighted = label_objective(term, 3.0)(teacher, images, labels[:4].float(), torch.Generator()).detach()
    assert float(weighted) == pytest.approx(float(plain) + 6.0) and calls


def test_unknown_objective_and_missing_inputs_are_refused(setting):
    _, _, points, _ = setting
    with pytest.raises(ValueError, match="recourse objective must be one of match, target"):
        recourse_term("bce", points, 4)
    with pytest.raises(ValueError, match="needs the teacher"):
        recourse_term("match", points, 4)
    with pytest.raises(ValueError, match="recourse_objective must be 'match' or 'target'"):
        CFQQATConfig(recourse_objective="kl")


@pytest.mark.slow
def test_cfq_qat_and_its_no_recourse_twin_share_calibration_and_bits(setting):
    teacher, originals, points, labels = setting
    made = {weight: quantize(teacher, CFQQATConfig(steps=4, batch_size=8, sensitivity_images=16, budget=4.0,
                                                   recourse_batch_size=4, recourse_weight=weight, calibration_images=16),
                             originals, labels, points)
            for weight in (0.0, 1.0)}
    assert made[0.0].layer_bits == made[1.0].layer_bits
    assert made[0.0].details["calibration_images"] == made[1.0].details["calibration_images"] == 16 + 12
    ranges = [{k: v for k, v in m.twin.state_dict().items() if "activation_post_process" in k and "scale" in k}
              for m in made.values()]
    assert ranges[0].keys() == ranges[1].keys() and all(torch.equal(ranges[0][k], ranges[1][k]) for k in ranges[0])
    # only the fine-tuning term differs, and it changes the weights
    weights = [m.twin.state_dict() for m in made.values()]
    assert any(not torch.equal(weights[0][k], weights[1][k]) for k in weights[0] if k.endswith("weight"))


@pytest.mark.slow
def test_fine_tuning_is_reproducible_and_leaves_the_global_generator_alone(setting):
    from recourse.compression.qat import fine_tune

    teacher, originals, points, labels = setting
    config = CFQQATConfig(steps=3, batch_size=8, sensitivity_images=16, recourse_batch_size=4, calibration_images=16)
    first = quantize(teacher, config, originals, labels, points)
    second = quantize(teacher, config, originals, labels, points)
    for key, value in first.twin.state_dict().items():
        assert torch.equal(value, second.twin.state_dict()[key]), key
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    fine_tune(first.twin, label_objective(), originals, labels, 2, 4, 1e-3, seed=5)
    assert torch.equal(torch.rand(1), expected_next)
