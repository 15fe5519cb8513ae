"""The study's edit that continues until a second robust model agrees (scripts.measurements.visibility_frontier)."""

import pytest
import torch
from torch import nn

from recourse.generation import CounterfactualConfig
from scripts.measurements.visibility_frontier import edit_until_seen
from tests.conftest import BrightnessModel


class ShiftedBrightness(nn.Module):
    """Decides 1 where the mean brightness is past ``threshold`` (BrightnessModel's is 0.5)."""

    def __init__(self, threshold: float) -> None:
        super().__init__()
        self.threshold = threshold

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (20 * (images.mean(dim=(1, 2, 3)) - self.threshold)).unsqueeze(1).expand(-1, 40)


@pytest.mark.parametrize("threshold, stops_past", [(0.58, 0.58), (0.42, 0.5)])
def test_the_edit_stops_once_both_models_decide_the_target(threshold, stops_past, tiny_generator):
    noise = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    image = 0.3 + 0.05 * noise
    # the cone walk the study continues; all 40 logits move together here
    config = CounterfactualConfig(method="pca-walk-cone", margin=0.0, preserve_weight=0.0)
    edited = edit_until_seen(image, BrightnessModel(), ShiftedBrightness(threshold), 0, torch.tensor([1.0]), config,
                             tiny_generator)
    brightness = float(edited.mean())
    step = config.finish_learning_rate / (3 * 16 * 16) ** 0.5  # the most one step changes the mean
    assert stops_past <= brightness <= stops_past + 1.5 * step  # past the later boundary, by at most a step

