"""Pictures of an audit (issue 24): difference maps on one shared, labelled scale; faces
enlarged smoothly, maps pixel by pixel."""

import numpy as np
import torch

from recourse.render.pictures import difference_map, enlarge, shared_scale, to_pil, with_scale_bar


def test_two_difference_maps_share_one_scale():
    x = torch.full((3, 8, 8), 0.5)
    small, large = x.clone(), x.clone()
    small[:, 0, 0] += 0.0002  # the edit that looked as vivid as the other
    large[:, 0, 0] += 0.026
    scale = shared_scale(x, small, large)
    assert abs(scale - 0.026) < 1e-6
    faint, vivid = (np.asarray(difference_map(x, c, scale))[0, 0] for c in (small, large))
    assert vivid[1] < 10 and faint[1] > 250  # full red against almost white
    assert (np.asarray(difference_map(x, small))[0, 0][1] < 10)  # each on its own scale, both were full red


def test_a_difference_map_carries_its_scale_bar():
    picture = with_scale_bar(difference_map(torch.zeros(3, 8, 8), torch.ones(3, 8, 8) * 0.1), 0.1)
    assert picture.size == (8, 8 + 22)


def test_faces_are_enlarged_smoothly_and_maps_pixel_by_pixel():
    face = torch.zeros(3, 4, 4)
    face[:, :, 2:] = 1.0
    smooth, blocky = (np.asarray(enlarge(to_pil(face), 16, smooth=s))[0] for s in (True, False))
    assert len({tuple(p) for p in blocky}) == 2 and len({tuple(p) for p in smooth}) > 2
