import torch

from recourse.generation.guidance import CounterfactualConfig
from recourse.generation.spaces.coefficients import steer_coefficients

INDEX = 5


class SumOfCoefficients(torch.nn.Module):
    """40 logits; attribute INDEX's is ten times the sum of the 'image' (here the coefficients themselves)."""

    def forward(self, drawn):
        logits = torch.zeros(len(drawn), 40)
        logits[:, INDEX] = 10 * drawn.sum(1)
        return logits


def test_the_model_reaches_its_aim_inside_the_box_and_frozen_coefficients_stay():
    z0 = torch.tensor([[0.5, -0.2, 0.0, 4.0]])  # the last is already outside the box
    config = CounterfactualConfig(space_box=1.0, space_steps=200, margin=45.0, overshoot=0.0)
    frozen = torch.tensor([False, True, False, False])
    dz = steer_coefficients(z0, lambda dz: z0 + dz, SumOfCoefficients(), INDEX, torch.tensor([1.0]), config,
                            centre=0.0, prior_weight=0.0, frozen=frozen)
    z = z0 + dz
    assert float(dz[0, 1]) == 0.0
    assert bool((z[0, :3] <= 1.0 + 1e-6).all()) and float(z[0, 3]) <= 4.0 + 1e-6  # never further out
    assert float(SumOfCoefficients()(z)[0, INDEX]) > float(SumOfCoefficients()(z0)[0, INDEX])


def test_a_strong_prior_holds_the_coefficients_near_the_class_centre():
    z0 = torch.zeros(1, 3)
    config = CounterfactualConfig(space_box=3.0, space_steps=100, margin=50.0, overshoot=0.0)
    free = steer_coefficients(z0, lambda dz: z0 + dz, SumOfCoefficients(), INDEX, torch.tensor([1.0]), config,
                              centre=0.0, prior_weight=0.0)
    held = steer_coefficients(z0, lambda dz: z0 + dz, SumOfCoefficients(), INDEX, torch.tensor([1.0]), config,
                              centre=0.0, prior_weight=1000.0)
    assert float(held.abs().max()) < float(free.abs().max())


class Curved(torch.nn.Module):
    """40 logits of a smooth function of the drawn coefficients, so that slopes differ by coefficient."""

    def forward(self, drawn):
        logits = torch.zeros(len(drawn), 40)
        logits[:, INDEX] = torch.sin(drawn).sum(1) * 3 + drawn[:, 0] * drawn[:, 1]
        logits[:, 0] = drawn.pow(2).sum(1)  # another attribute the preservation term reads
        return logits


def test_a_black_box_is_steered_by_its_slopes_along_the_coefficients():
    """Its gradient is 2K forward passes per face of central differences, and steers as the true
    gradient does; an image-space estimate would take two per basis image."""
    from recourse.foreign.blackbox import ZerothOrderClassifier

    z0 = torch.tensor([[0.3, -0.4, 0.1], [1.0, 0.2, -0.5]])
    config = CounterfactualConfig(space_box=3.0, space_steps=30, margin=6.0, overshoot=0.0)
    sign = torch.tensor([1.0, -1.0])
    black_box = ZerothOrderClassifier(Curved(), basis=torch.eye(3))
    frozen = torch.tensor([False, False, True])
    estimated = steer_coefficients(z0, lambda dz: z0 + dz, black_box, INDEX, sign, config, centre=0.0,
                                   prior_weight=0.1, frozen=frozen)
    exact = steer_coefficients(z0, lambda dz: z0 + dz, Curved(), INDEX, sign, config, centre=0.0, prior_weight=0.1,
                               frozen=frozen)
    assert torch.allclose(estimated, exact, atol=1e-3)
    steps = black_box.estimates
    assert steps > 0 and black_box.forward_passes == 2 + steps * (2 + 2 * 2 * 2)  # the start, and per step
