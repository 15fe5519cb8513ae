import numpy as np
import pytest
import torch

from recourse.data import to_float_images


def test_uint8_images_become_floats_in_the_unit_range_and_floats_pass_through():
    pixels = np.array([[[[0, 51, 255]]]], dtype=np.uint8)
    converted = to_float_images(pixels)
    assert converted.dtype == torch.float32 and converted.flatten().tolist() == pytest.approx([0.0, 0.2, 1.0])
    floats = torch.rand(2, 3, 4, 4)
    assert to_float_images(floats) is floats
