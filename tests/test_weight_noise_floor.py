import torch

from recourse.benchmark.weight_noise_floor import matched_noise, noisy_copy
from recourse.metrics import agreement, decisions
from tests.conftest import tiny_classifier


def test_noisy_copy_touches_weights_only_and_is_seeded():
    model = tiny_classifier()
    noisy = noisy_copy(model, 0.1, seed=3)
    for (name, before), after in zip(model.named_parameters(), noisy.parameters()):
        assert torch.equal(before, after) == (before.ndim < 2), name
    again = noisy_copy(model, 0.1, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(noisy.parameters(), again.parameters()))
    unchanged = noisy_copy(model, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), unchanged.parameters()))


def test_matched_noise_reaches_the_target_agreement():
    model = tiny_classifier(gain=3.0)
    images = torch.rand(200, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    control = matched_noise(model, images, 90.0, seed=1)
    assert 0 < control.sigma < 1 and abs(control.agreement - 90.0) < 2.0
    with torch.no_grad():
        measured = agreement(decisions(model(images)), decisions(control.model(images)))
    assert measured == control.agreement
    assert matched_noise(model, images, 97.0, seed=1).sigma < control.sigma
