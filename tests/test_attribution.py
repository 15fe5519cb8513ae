import pytest
import torch
from torch import nn

from recourse.attribution import (
    AttributionConfig, compare_maps, integrated_gradients, occlusion, spearman_correlation, top_fraction_iou,
)
from recourse.render.pictures import attribution_picture


class LinearModel(nn.Module):
    """40 logits, all equal to ``sum(w · x)``: attributions have closed forms."""

    def __init__(self, size: int = 8) -> None:
        super().__init__()
        self.weight = torch.randn(3, size, size, generator=torch.Generator().manual_seed(0))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (images * self.weight).sum(dim=(1, 2, 3)).unsqueeze(1).expand(-1, 40)


@pytest.fixture
def image() -> torch.Tensor:
    return torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(1))


def test_spearman_hand_computed():
    # ranks differ by one swap: rho = 1 − 6·2 / (4·15) = 0.8
    assert spearman_correlation(torch.tensor([1.0, 2, 3, 4]), torch.tensor([10.0, 20, 40, 30])) == pytest.approx(0.8)
    # ties share their mean rank: ranks (0.5, 0.5, 2) vs (0, 1, 2) → 1.5 / sqrt(1.5 · 2)
    assert spearman_correlation(torch.tensor([1.0, 1, 2]), torch.tensor([1.0, 2, 3])) == pytest.approx(1.5 / 3 ** 0.5)
    values = torch.randn(50, generator=torch.Generator().manual_seed(2))
    assert spearman_correlation(values, values ** 3) == pytest.approx(1.0)
    assert spearman_correlation(values, -values) == pytest.approx(-1.0)


def test_spearman_of_a_constant_map_is_undefined():
    assert spearman_correlation(torch.zeros(4, 4), torch.rand(4, 4)) is None
    result = compare_maps("occlusion", torch.zeros(4, 4), torch.rand(4, 4), "integer", AttributionConfig())
    assert result.spearman is None and "constant" in result.reason


def test_top_fraction_iou_hand_computed():
    first = torch.tensor([5.0, -9, 1, 0, 0, 0, 0, 0, 0, 0])  # top 2 by magnitude: {1, 0}
    second = torch.tensor([0.0, 8, -7, 0, 0, 0, 0, 0, 0, 0])  # top 2: {1, 2}
    assert top_fraction_iou(first, second, fraction=0.2) == pytest.approx(1 / 3)
    assert top_fraction_iou(first, first, fraction=0.2) == 1.0
    with pytest.raises(ValueError, match="differ in shape"):
        top_fraction_iou(first, second[:5])


def test_integrated_gradients_of_a_linear_model_is_input_times_weight(image):
    model = LinearModel()
    attribution = integrated_gradients(model, image, 3, AttributionConfig(ig_steps=4))
    torch.testing.assert_close(attribution, (image * model.weight).sum(dim=0), rtol=1e-4, atol=1e-5)
    # completeness: the attributions sum to f(x) − f(baseline)
    assert float(attribution.sum()) == pytest.approx(float(model(image[None])[0, 3]), rel=1e-4)


def test_occlusion_of_a_linear_model_is_the_patch_contribution(image):
    model = LinearModel()
    config = AttributionConfig(occlusion_window=4, occlusion_stride=4, occlusion_baseline=0.5)
    attribution = occlusion(model, image, 0, config)
    contribution = (model.weight * (image - 0.5)).sum(dim=0)  # (H, W)
    patches = contribution.reshape(2, 4, 2, 4).sum(dim=(1, 3))  # one total per 4×4 patch
    # every pixel of a patch gets the patch's output drop, once per colour channel
    expected = 3 * patches.repeat_interleave(4, 0).repeat_interleave(4, 1)
    torch.testing.assert_close(attribution, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("values, message", [
    ({"ig_steps": 1}, "ig_steps"), ({"occlusion_stride": 9}, "occlusion_stride"),
    ({"top_fraction": 0.0}, "top_fraction"),
])
def test_bad_settings_are_rejected(values, message):
    with pytest.raises(ValueError, match=message):
        AttributionConfig(**values)


def test_bad_image_shape_is_rejected():
    with pytest.raises(ValueError, match=r"\(3, H, W\)"):
        occlusion(LinearModel(), torch.rand(1, 3, 8, 8), 0, AttributionConfig())


def test_attribution_picture_colours_sign():
    picture = attribution_picture(torch.tensor([[1.0, -1.0], [0.0, 0.5]]))
    assert picture.getpixel((0, 0)) == (255, 0, 0) and picture.getpixel((1, 0)) == (0, 0, 255)
    assert picture.getpixel((0, 1)) == (255, 255, 255)
