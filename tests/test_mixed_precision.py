import pytest
import torch

from recourse.compression.mixed_precision import allocate_bits, measure_sensitivity


def test_budget_goes_to_the_layer_that_gains_most_per_weight_bit():
    sizes = {"small": 10, "big": 90}
    costs = {"small": {4: 5.0, 8: 1.0}, "big": {4: 2.0, 8: 1.0}}
    # start at 4 bits (400 weight-bits); budget 4.5 → 450: only the small layer's +40 fits,
    # and it gains 4.0 / 40 = 0.1 per weight-bit against 1.0 / 360 for the big one
    assert allocate_bits(costs, sizes, 4.5, (4, 8)) == {"small": 8, "big": 4}


def test_budget_at_the_lowest_choice_keeps_every_layer_there():
    costs = {"a": {3: 9.0, 4: 1.0}, "b": {3: 9.0, 4: 1.0}}
    assert allocate_bits(costs, {"a": 5, "b": 5}, 3.0, (3, 4)) == {"a": 3, "b": 3}


def test_allocation_never_exceeds_the_budget():
    sizes = {f"l{i}": 7 * (i + 1) for i in range(6)}
    costs = {name: {b: float(hash((name, b)) % 97) / (b + i) for b in (3, 4, 5, 6, 8)}
             for i, name in enumerate(sizes)}
    for budget in (3.0, 3.7, 4.0, 5.2, 8.0):
        bits = allocate_bits(costs, sizes, budget, (3, 4, 5, 6, 8))
        mean = sum(bits[n] * sizes[n] for n in sizes) / sum(sizes.values())
        assert mean <= budget + 1e-9
    assert set(allocate_bits(costs, sizes, 8.0, (3, 4, 5, 6, 8)).values()) == {8}


def test_sensitivity_restores_each_layer(tiny_twin):
    from recourse.compression import bits_of, weight_layers

    before = {name: bits_of(layer) for name, layer in weight_layers(tiny_twin).items()}
    images = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    costs = measure_sensitivity(tiny_twin, lambda twin: twin(images).abs().mean(), (3, 8))
    assert set(costs) == set(before) and all(set(c) == {3, 8} for c in costs.values())
    assert {name: bits_of(layer) for name, layer in weight_layers(tiny_twin).items()} == before


@pytest.fixture
def tiny_twin():
    from recourse.classifier import AttributeClassifier, ClassifierConfig
    from recourse.compression import fold_batch_norm, prepare_twin, set_weight_quantizer, weight_layers

    torch.manual_seed(0)
    twin = prepare_twin(fold_batch_norm(AttributeClassifier(ClassifierConfig(widths=(4, 8), resolution=16))), 16)
    for layer in weight_layers(twin).values():
        set_weight_quantizer(layer, 8)
    return twin
