"""The one optimisation every space's edit shares: a model steers a face's whitened coefficients.

``Δz`` is optimised (Adam) so that the model's logit passes ``margin + overshoot`` on the target
side, while the model keeps its view of the other 39 attributes and a Gaussian prior keeps the
part a likely one (``‖z₀ + Δz − centre‖² + ‖Δz‖²``, per coefficient, ``centre`` the target
class's mean); every coefficient stays within ``±space_box`` standard deviations (a face already
outside that box never moves further out), and those that ``frozen`` marks do not move.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

EARLY_STOP = 3  # consecutive steps past the aim that end the optimisation
# A black box's slope along one whitened coefficient is read from ±this many standard deviations:
# small against the box (2–3) the edit moves in, large against float rounding.
COEFFICIENT_STEP = 0.05


class _CoefficientDifferences(torch.autograd.Function):
    """A black box's logits of the drawn faces, ``read(Δz)`` ``(B, 40)``, whose backward pass is
    central differences along each free coefficient: ``2K`` forward passes per face for the ``K``
    coefficients the edit actually moves, where an estimate in image space takes two per basis
    image (1,024 in the face basis) and sees the part's change only through that basis."""

    @staticmethod
    def forward(ctx, dz, read, owner, free):  # type: ignore[override]
        ctx.save_for_backward(dz)
        ctx.read, ctx.owner, ctx.free = read, owner, free
        with torch.no_grad():
            return read(dz)

    @staticmethod
    def backward(ctx, grad_output):  # type: ignore[override]
        (dz,) = ctx.saved_tensors
        grad = torch.zeros_like(dz)
        with torch.no_grad():
            for k in ctx.free:
                step = torch.zeros_like(dz)
                step[:, k] = COEFFICIENT_STEP
                slope = (ctx.read(dz + step) - ctx.read(dz - step)) / (2 * COEFFICIENT_STEP)
                grad[:, k] = (grad_output * slope).sum(1)
        ctx.owner.estimates += 1  # the black box's count of its estimated gradients
        return grad, None, None, None


def is_black_box(model: nn.Module) -> bool:
    """Whether ``model``'s gradients are zeroth-order estimates (``recourse.foreign.blackbox``)."""
    from recourse.foreign.blackbox import ZerothOrderClassifier

    return isinstance(model, ZerothOrderClassifier)


def steer_coefficients(z0: torch.Tensor, draw: Callable[[torch.Tensor], torch.Tensor], model: nn.Module,
                       index: int, sign: torch.Tensor, config, centre: torch.Tensor | float,
                       prior_weight: float, frozen: torch.Tensor | None = None,
                       limits: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """``Δz`` ``(B, K)`` for the coefficients ``z0`` ``(B, K)`` of ``B`` faces; ``draw(Δz)`` is the
    edited faces the model reads, ``sign`` ``(B,)`` each face's target side, ``centre`` a float or
    ``(B, K)``, ``frozen`` ``(K,)`` bool the coefficients kept as they are, ``limits`` the least and
    most ``Δz`` ``(B, K)`` each coefficient may take, within the box.

    The faces are steered together but each as if alone: the loss is a sum of per-face terms,
    Adam's update is elementwise, and a face that has passed the aim for :data:`EARLY_STOP` steps
    stops moving while the others go on. A black box (:func:`is_black_box`) is steered by its
    slopes along the coefficients themselves (:class:`_CoefficientDifferences`)."""
    others = torch.ones(40, dtype=torch.bool)
    others[index] = False
    with torch.no_grad():
        before = torch.sigmoid(model(draw(torch.zeros_like(z0))))[:, others]
    box = config.space_box
    low = torch.minimum(torch.full_like(z0, -box), z0) - z0
    high = torch.maximum(torch.full_like(z0, box), z0) - z0
    if limits is not None:
        low, high = torch.maximum(low, limits[0]), torch.minimum(high, limits[1])
    if frozen is not None:
        low[:, frozen] = 0
        high[:, frozen] = 0
    dz = torch.zeros_like(z0, requires_grad=True)
    optimizer = torch.optim.Adam([dz], lr=config.space_learning_rate)
    aim = config.margin + config.overshoot
    components = z0.shape[1]
    past = torch.zeros(len(z0), dtype=torch.long)
    black_box = is_black_box(model)
    free = [k for k in range(components) if frozen is None or not bool(frozen[k])]
    for _ in range(config.space_steps):
        if black_box:
            logits = _CoefficientDifferences.apply(dz, lambda d: model(draw(d)), model, free)
        else:
            logits = model(draw(dz))
        reach = sign * logits[:, index]
        past = torch.where(reach.detach() >= aim, past + 1, torch.zeros_like(past))
        moving = past < EARLY_STOP
        if not bool(moving.any()):
            break
        loss = (F.softplus(aim - reach)
                + config.preserve_weight * F.binary_cross_entropy_with_logits(logits[:, others], before,
                                                                              reduction="none").mean(1)
                + prior_weight * 0.5 * (((z0 + dz - centre) ** 2).sum(1) + (dz ** 2).sum(1)) / components)
        (dz.grad,) = torch.autograd.grad(loss.sum(), dz)  # the model's own weights gather no gradient
        held = dz.detach().clone()
        optimizer.step()
        with torch.no_grad():
            dz.copy_(torch.where(moving[:, None], torch.maximum(torch.minimum(dz, high), low), held))
    return dz.detach()
