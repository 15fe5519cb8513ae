import pytest
import torch

from recourse.compression import MixedPrecQATConfig, PTQInt8Config, quantize
from recourse.compression.mixed_precision import allocate_bits, choose_bits, measure_sensitivity
from tests.conftest import tiny_classifier

CHOICES = (3, 4, 5, 6, 8)


def test_budget_goes_to_the_layer_that_gains_most_per_weight_bit():
    sizes = {"small": 10, "big": 90}
    costs = {"small": {4: 5.0, 8: 1.0}, "big": {4: 2.0, 8: 1.0}}
    # start at 4 bits (400 weight-bits); budget 4.5 → 450: only the small layer's +40 fits,
    # and it gains 4.0 / 40 = 0.1 per weight-bit against 1.0 / 360 for the big one
    assert allocate_bits(costs, sizes, 4.5, (4, 8)) == {"small": 8, "big": 4}


def test_budget_at_the_lowest_choice_keeps_every_layer_there():
    costs = {"a": {3: 9.0, 4: 1.0}, "b": {3: 9.0, 4: 1.0}}
    assert allocate_bits(costs, {"a": 5, "b": 5}, 3.0, (3, 4)) == {"a": 3, "b": 3}


def random_costs(seed: int) -> tuple[dict[str, dict[int, float]], dict[str, int]]:
    """Six layers of different sizes whose costs fall, by random amounts, as bits grow."""
    generator = torch.Generator().manual_seed(seed)
    sizes = {f"l{i}": 7 * (i + 1) for i in range(6)}
    costs = {}
    for name in sizes:
        drops = torch.rand(len(CHOICES), generator=generator).tolist()
        costs[name] = {bits: sum(drops[k:]) for k, bits in enumerate(CHOICES)}
    return costs, sizes


@pytest.mark.parametrize("seed", range(5))
def test_allocation_never_exceeds_the_budget_and_stops_only_when_nothing_fits(seed):
    costs, sizes = random_costs(seed)
    limit = lambda budget: budget * sum(sizes.values())  # noqa: E731  (weight-bits allowed)
    for budget in (3.0, 3.7, 4.0, 5.2, 8.0):
        bits = allocate_bits(costs, sizes, budget, CHOICES)
        used = sum(bits[n] * sizes[n] for n in sizes)
        assert set(bits.values()) <= set(CHOICES) and used <= limit(budget) + 1e-9
        for name in sizes:  # no layer's next width would still fit
            higher = [b for b in CHOICES if b > bits[name]]
            if higher:
                assert used + sizes[name] * (higher[0] - bits[name]) > limit(budget) + 1e-9, (budget, name, bits)
    assert set(allocate_bits(costs, sizes, 8.0, CHOICES).values()) == {8}
    assert set(allocate_bits(costs, sizes, 3.0, CHOICES).values()) == {3}


@pytest.fixture
def twin_and_objective():
    """A tiny classifier's calibrated 8-bit twin (the state mixed precision measures, before
    fine-tuning) and, as objective, how far its outputs move from where they are now."""
    from recourse.compression import CompressionInputs
    from recourse.compression.api import calibrated_twin
    from recourse.progress import silent

    model = tiny_classifier(seed=0)
    images = torch.rand(32, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    twin, _ = calibrated_twin(model, PTQInt8Config(calibration_images=32),
                              CompressionInputs(model, images, None, None, silent))
    with torch.no_grad():
        reference = twin(images)

    def objective(candidate: torch.nn.Module) -> float:
        with torch.no_grad():
            return float((candidate(images) - reference).square().mean())

    return twin, objective, images


def test_sensitivity_grows_as_bits_shrink(twin_and_objective):
    twin, objective, _ = twin_and_objective
    costs = measure_sensitivity(twin, objective, CHOICES)
    assert len(costs) == 6 and all(set(c) == set(CHOICES) for c in costs.values())
    for name, by_bits in costs.items():
        # at its own 8 bits a layer is exactly as it was; fewer bits move the outputs further
        assert by_bits[8] == 0.0 and by_bits[3] > by_bits[5] > 0.0, (name, by_bits)
    # summed over layers, each bit fewer costs more (activation rounding blurs single layers' order)
    totals = [sum(by_bits[bits] for by_bits in costs.values()) for bits in CHOICES]
    assert totals == sorted(totals, reverse=True) and len(set(totals)) == len(totals), totals


def test_sensitivity_restores_each_layer(twin_and_objective):
    twin, objective, images = twin_and_objective
    with torch.no_grad():
        before = twin(images)
    measure_sensitivity(twin, objective, (3, 8))
    with torch.no_grad():
        assert torch.equal(twin(images), before)


def test_chosen_bits_are_mixed_and_meet_the_budget(twin_and_objective):
    twin, objective, _ = twin_and_objective
    bits = choose_bits(twin, objective, CHOICES, budget=4.0)
    sizes = {name: twin.get_submodule(name).weight.numel() for name in bits}
    assert len(bits) == 6 and set(bits.values()) <= set(CHOICES)
    assert sum(bits[n] * sizes[n] for n in sizes) <= 4.0 * sum(sizes.values()) + 1e-9
    assert len(set(bits.values())) > 1  # a mixed allocation, not one width for all


def test_mixed_precision_variants_record_the_allocation_they_run():
    model = tiny_classifier(seed=0)
    images = torch.rand(32, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    labels = (torch.rand(32, 40, generator=torch.Generator().manual_seed(1)) > 0.5).long()
    variant = quantize(model, MixedPrecQATConfig(steps=0, sensitivity_images=16, calibration_images=16, budget=4.0),
                       images, labels)
    assert variant.details["layer_bits"] == variant.layer_bits and len(set(variant.layer_bits.values())) > 1
    assert variant.bits_per_weight <= 4.0 + 1e-9
