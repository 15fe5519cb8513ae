"""scripts/measurements/stop_readings.py: a stop read on every face, with the share of edits
that reach it (where an edit ends before the stop's margin, its stop is the whole edit)."""

import torch
from torch import nn

from recourse.data import attribute_index
from scripts.measurements import stop_readings
from scripts.measurements.stop_readings import Originals, read_stop

SMILING = attribute_index("Smiling")


class Brightness(nn.Module):
    """Smiling's logit is 20 × (mean brightness − 0.5); every other logit 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(len(x), 40)
        logits[:, SMILING] = 20 * (x.mean(dim=(1, 2, 3)) - 0.5)
        return logits


def test_the_share_that_reaches_the_stop_and_the_flip_rate(monkeypatch):
    monkeypatch.setattr(stop_readings, "set_verdicts", lambda *args: [])
    monkeypatch.setattr(stop_readings, "identity_result", lambda before, after: type("Kept", (), {"fva": 100.0})())
    x = torch.full((2, 3, 4, 4), 0.4)  # logit −2: both target Smiling
    edits = torch.stack([torch.full((3, 4, 4), 1.0), torch.full((3, 4, 4), 0.7)])  # end at logit +10 and +4
    targets = torch.zeros(2, 40, dtype=torch.long)
    targets[:, SMILING] = 1
    originals = Originals(classifier=Brightness(), oracle=Brightness(), faces=x, x=x, rest=None, targets=targets,
                          oracle_before=torch.zeros(2, 40, dtype=torch.long), judged=None, describe=lambda images: images,
                          descriptors=x, calibrated={})
    visible = read_stop(originals, "Smiling", edits, 8.0)
    assert visible.reached_rate == 50.0 and visible.flip_rate == 100.0
    assert torch.equal(visible.at_stop[1], edits[1])  # short of the stop: the whole edit
    assert read_stop(originals, "Smiling", edits, 2.0).reached_rate == 100.0
