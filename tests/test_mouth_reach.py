import torch

from scripts.measurements.mouth_reach import reach_shares


def test_the_shares_count_faces_at_or_past_the_reach_on_each_side():
    reach = torch.tensor([2.0, 1.9, 5.0, -1.0, 3.0])
    sign = torch.tensor([1.0, 1.0, -1.0, -1.0, -1.0])
    assert reach_shares(reach, sign, 2.0) == {"all": 0.6, "adding": 0.5, "removing": 0.667}
