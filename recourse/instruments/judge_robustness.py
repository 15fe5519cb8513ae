"""Is the judge robust where it matters? A plain gradient attack on a model, judged.

The judge is worth something only if the cheap, non-semantic changes that move the models
that steer edits do not move it. The check attacks a model (the classifier, or the robust
guide that steers the cone-guided edits) with L∞ PGD at a budget equal to the
counterfactuals' mean-|Δx| cost (an L∞ ball of radius ε has mean |Δx| ≤ ε), and counts how
often the attack flips that model and how often the same images flip each judge
(``docs/metrics.md``, Judge FR). A judge that a same-budget attack on the guide flips often
shares the guide's blind spots: an edit the guide steers can satisfy it without a change a
person would see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import torch
from torch import nn

from recourse.data import attribute_index
from recourse.metrics import decisions


@dataclass(frozen=True)
class AttackTransfer:
    """One attribute: the attack's flip rates (in %) on the classifier and on the judge."""

    attribute: str
    n: int
    epsilon: float  # L∞ radius, [0, 1] pixel units
    mean_change: float  # the attack's mean |Δx|
    classifier_flip_rate: float
    judge_flip_rate: float  # over the faces where the judge agreed with the classifier before
    judge_agreed: int


def linf_attack(model: nn.Module, images: torch.Tensor, index: int, targets: torch.Tensor,
                epsilon: float, steps: int = 10) -> torch.Tensor:
    """Images within ``epsilon`` (L∞) of ``images`` pushing ``model``'s logit ``index`` towards
    ``targets`` (0/1 per image), by ``steps`` signed-gradient steps of 2.5 ε / steps."""
    sign = (2 * targets.float() - 1)
    delta = torch.zeros_like(images)
    step = 2.5 * epsilon / steps
    for _ in range(steps):
        delta.requires_grad_(True)
        objective = (sign * model((images + delta).clamp(0, 1))[:, index]).sum()
        gradient, = torch.autograd.grad(objective, delta)
        delta = (delta.detach() + step * gradient.sign()).clamp(-epsilon, epsilon)
    return (images + delta).clamp(0, 1).detach()


@dataclass(frozen=True)
class JudgeTransfer:
    """One judge's view of one attack: how often it flipped (in %), over the faces where it
    agreed with the attacked model before the attack (NaN where it agreed on none)."""

    flip_rate: float
    agreed: int


@dataclass(frozen=True)
class TransferResult:
    """One attribute, one attacked model: its own flip rate and each judge's (in %)."""

    attribute: str
    attacked: str  # the attacked model's name, e.g. "classifier" or "guide"
    n: int
    epsilon: float  # L∞ radius, [0, 1] pixel units
    mean_change: float  # the attack's mean |Δx|
    attacked_flip_rate: float
    judges: dict[str, JudgeTransfer]

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def _decided(model: nn.Module, images: torch.Tensor, index: int, batch_size: int) -> torch.Tensor:
    return torch.cat([decisions(model(images[i:i + batch_size]))[:, index] for i in range(0, len(images), batch_size)])


def attack_transfers(attacked: nn.Module, judges: Mapping[str, nn.Module], images: torch.Tensor, attribute: str,
                     epsilon: float, steps: int = 10, batch_size: int = 100,
                     attacked_name: str = "classifier") -> TransferResult:
    """Attack ``attacked`` to flip its decision on ``attribute`` for every image ``(N, 3, H, W)``
    in [0, 1]; one attack, judged by every model of ``judges`` (name -> model)."""
    attacked.eval()
    for judge in judges.values():
        judge.eval()
    index = attribute_index(attribute)
    before = _decided(attacked, images, index, batch_size)
    targets = 1 - before
    adversarial = torch.cat([linf_attack(attacked, images[i:i + batch_size], index, targets[i:i + batch_size],
                                         epsilon, steps) for i in range(0, len(images), batch_size)])
    after = _decided(attacked, adversarial, index, batch_size)
    views = {}
    for name, judge in judges.items():
        # counted only where the judge agreed with the attacked model: elsewhere "flipped to
        # the target" would mean it held the target already
        agreed = _decided(judge, images, index, batch_size) == before
        flipped = _decided(judge, adversarial, index, batch_size)[agreed] == targets[agreed]
        views[name] = JudgeTransfer(round(100.0 * float(flipped.float().mean()), 2) if bool(agreed.any())
                                    else float("nan"), int(agreed.sum()))
    return TransferResult(attribute=attribute, attacked=attacked_name, n=len(images), epsilon=epsilon,
                          mean_change=round(float((adversarial - images).abs().mean()), 5),
                          attacked_flip_rate=round(100.0 * float((after == targets).float().mean()), 2), judges=views)


def attack_transfer(classifier: nn.Module, judge: nn.Module, images: torch.Tensor, attribute: str,
                    epsilon: float, steps: int = 10, batch_size: int = 100) -> AttackTransfer:
    """Attack ``classifier`` to flip its decision on ``attribute`` for every image; judge it."""
    result = attack_transfers(classifier, {"judge": judge}, images, attribute, epsilon, steps, batch_size)
    return AttackTransfer(attribute=attribute, n=result.n, epsilon=epsilon, mean_change=result.mean_change,
                          classifier_flip_rate=result.attacked_flip_rate,
                          judge_flip_rate=result.judges["judge"].flip_rate,
                          judge_agreed=result.judges["judge"].agreed)
