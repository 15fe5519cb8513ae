"""The judge's robustness check, on models whose answers are known."""

import math

import pytest
import torch

from recourse.instruments.judge_robustness import attack_transfer, attack_transfers, linf_attack
from recourse.training import l2_pgd
from tests.conftest import BrightnessModel


class Deaf(torch.nn.Module):
    """Decides every attribute 1 whatever it sees: no attack can move it."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.ones(len(images), 40) + 0 * images.sum()


def test_the_attack_stays_within_its_budget_and_moves_the_model():
    images = torch.full((4, 3, 16, 16), 0.45)  # brightness logit -1: decided 0
    attacked = linf_attack(BrightnessModel(), images, 31, torch.ones(4), epsilon=0.1)
    assert float((attacked - images).abs().max()) <= 0.1 + 1e-6
    assert bool((BrightnessModel()(attacked)[:, 31] > 0).all())


def test_a_judge_the_attack_cannot_move_is_never_flipped():
    images = torch.full((6, 3, 16, 16), 0.55)  # decided 1 by both models
    row = attack_transfer(BrightnessModel(), Deaf(), images, "Smiling", epsilon=0.1, batch_size=4)
    assert row.classifier_flip_rate == 100.0 and row.judge_flip_rate == 0.0 and row.judge_agreed == 6
    same = attack_transfer(BrightnessModel(), BrightnessModel(), images, "Smiling", epsilon=0.1)
    assert same.judge_flip_rate == same.classifier_flip_rate == 100.0


def test_a_judge_that_never_agreed_is_not_counted():
    images = torch.full((3, 3, 16, 16), 0.45)  # the classifier decides 0, the deaf judge 1
    row = attack_transfer(BrightnessModel(), Deaf(), images, "Smiling", epsilon=0.1)
    assert row.judge_agreed == 0 and math.isnan(row.judge_flip_rate)


def test_one_attack_is_judged_by_every_judge_each_on_its_own_agreement():
    images = torch.full((5, 3, 16, 16), 0.55)  # the attacked model decides 1; so do both judges
    result = attack_transfers(BrightnessModel(), {"twin": BrightnessModel(), "deaf": Deaf()}, images, "Smiling",
                              epsilon=0.1, attacked_name="guide")
    assert result.attacked == "guide" and result.attacked_flip_rate == 100.0
    # a twin of the attacked model is fooled every time; a model the attack cannot move never is
    assert result.judges["twin"].flip_rate == 100.0 and result.judges["deaf"].flip_rate == 0.0
    assert result.judges["twin"].agreed == result.judges["deaf"].agreed == 5
    record = result.to_dict()
    assert record["judges"]["deaf"] == {"flip_rate": 0.0, "agreed": 5} and record["epsilon"] == 0.1


def test_adversarial_training_images_stay_within_the_radius():
    images = torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    labels = torch.zeros(3, 40)
    worst = l2_pgd(BrightnessModel(), images, labels, radius=0.5, steps=3)
    assert (worst - images).flatten(1).norm(dim=1).max() <= 0.5 + 1e-5
    assert 0 <= float(worst.min()) and float(worst.max()) <= 1
    # and they are worse for the model: brighter images raise the logits against label 0
    assert float(BrightnessModel()(worst).mean()) > float(BrightnessModel()(images).mean())
