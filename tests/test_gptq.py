import math

import pytest
import torch

from recourse.compression import GPTQConfig, load_variant, quantize, save_variant
from recourse.compression.fakequant import fold_batch_norm, weight_layers
from recourse.compression.gptq import gptq_weight, layer_hessian, layer_inputs
from tests.conftest import tiny_classifier


def round_to_nearest(weight: torch.Tensor, bits: int) -> torch.Tensor:
    """Per-row symmetric min/max rounding, written out: scale = max |w| / ((2^bits - 1) / 2)."""
    half = 2 ** (bits - 1)
    scale = weight.abs().amax(dim=1, keepdim=True) / ((2 * half - 1) / 2)
    return torch.round(weight / scale).clamp(-half, half - 1) * scale


def rounder(weight: torch.Tensor, bits: int):
    half = 2 ** (bits - 1)
    scale = weight.abs().amax(dim=1) / ((2 * half - 1) / 2)
    return lambda column: torch.round(column / scale).clamp(-half, half - 1) * scale


def test_with_uncorrelated_inputs_gptq_is_plain_rounding():
    # a diagonal Hessian: no column's error can be made up by another column
    weight = torch.randn(6, 10, generator=torch.Generator().manual_seed(0))
    hessian = torch.diag(torch.rand(10, generator=torch.Generator().manual_seed(1)) + 0.1)
    assert torch.equal(gptq_weight(weight, hessian, rounder(weight, 3)), round_to_nearest(weight, 3))


@pytest.mark.parametrize("columns", [12, 300], ids=["one-block", "three-blocks"])
def test_with_correlated_inputs_gptq_moves_the_outputs_less_than_rounding(columns):
    generator = torch.Generator().manual_seed(columns)
    weight = torch.randn(8, columns, generator=generator)
    inputs = torch.randn(4000, 4, generator=generator) @ torch.randn(4, columns, generator=generator) \
        + 0.3 * torch.randn(4000, columns, generator=generator)  # (n, D): strongly correlated columns
    hessian = 2 * inputs.T @ inputs / len(inputs)
    quantized = gptq_weight(weight, hessian, rounder(weight, 3))
    rounded = round_to_nearest(weight, 3)
    gptq_error = ((quantized - weight) @ inputs.T).square().mean()
    rounding_error = ((rounded - weight) @ inputs.T).square().mean()
    assert gptq_error < 0.7 * rounding_error, (gptq_error, rounding_error)
    # still on the grid: each row takes at most 2^3 values, multiples of its scale
    scale = weight.abs().amax(dim=1, keepdim=True) / 3.5
    codes = quantized / scale
    torch.testing.assert_close(codes, codes.round(), rtol=0, atol=1e-4)
    assert codes.round().min() >= -4 and codes.round().max() <= 3


def test_lazy_block_updates_give_the_one_column_at_a_time_result():
    """The paper's Algorithm 1 without lazy batching, written out: after rounding column i,
    every later column j moves by -err · U[i, j] / U[i, i], U the upper Cholesky factor of H⁻¹."""
    generator = torch.Generator().manual_seed(3)
    weight = torch.randn(5, 300, generator=generator)  # three blocks of 128 columns
    inputs = torch.randn(2000, 300, generator=generator) @ torch.randn(300, 300, generator=generator) / 20
    hessian = (2 * inputs.T @ inputs / len(inputs)).double()
    damped = hessian + 0.01 * hessian.diagonal().mean() * torch.eye(300, dtype=torch.float64)
    factor = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(damped)), upper=True).float()
    round_column = rounder(weight, 4)
    expected, work = torch.empty_like(weight), weight.clone()
    for i in range(300):
        expected[:, i] = round_column(work[:, i])
        work[:, i:] -= ((work[:, i] - expected[:, i]) / factor[i, i]).unsqueeze(1) * factor[i, i:]
    result = gptq_weight(weight, hessian, round_column)
    assert (result == expected).float().mean() > 0.99  # float32 sums in another order may flip a tie


def test_conv_inputs_are_the_unfolded_patches_the_weight_multiplies():
    conv = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1, bias=False)
    x = torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(0))
    rows = layer_inputs(conv, x)  # (2 · 5 · 5, 27)
    with torch.no_grad():
        expected = conv(x).permute(0, 2, 3, 1).reshape(-1, 5)
        torch.testing.assert_close(rows @ conv.weight.flatten(1).T, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="ungrouped"):
        layer_inputs(torch.nn.Conv2d(4, 4, 3, groups=2), torch.randn(1, 4, 5, 5))


@pytest.fixture(scope="module")
def model_and_images():
    model = tiny_classifier(widths=(8, 16), resolution=32, seed=0)
    images = torch.rand(48, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    return model, images


def layer_errors(variant, model, images) -> dict[str, tuple[float, float]]:
    """Each layer's output MSE against the full-precision weight's, relative to the mean
    square of those outputs, on the inputs the layer gets in the variant's twin: with GPTQ's
    weight, and with the full-precision weight rounded by the layer's own quantizer (what
    ``ptq-int4`` does; the same scales)."""
    folded = fold_batch_norm(model)
    seen: dict[str, torch.Tensor] = {}
    layers = weight_layers(variant.twin)
    handles = [layer.register_forward_pre_hook(lambda m, args, name=name: seen.__setitem__(name, args[0]))
               for name, layer in layers.items()]
    with torch.no_grad():
        variant.twin(images)
    for handle in handles:
        handle.remove()
    errors = {}
    for name, layer in layers.items():
        full = folded.get_submodule(name).weight.detach().flatten(1)
        quantizer = layer.weight_fake_quant
        rounded = torch.fake_quantize_per_channel_affine(full, quantizer.scale, quantizer.zero_point, 0,
                                                         quantizer.quant_min, quantizer.quant_max)
        x = layer_inputs(layer, seen[name])
        size = float((full @ x.T).square().mean())
        errors[name] = tuple(float(((w - full) @ x.T).square().mean()) / size
                             for w in (layer.weight.detach().flatten(1), rounded))
    return errors


@pytest.mark.slow
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_every_layer_moves_its_outputs_no_more_than_plain_rounding(model_and_images, bits):
    model, images = model_and_images
    variant = quantize(model, GPTQConfig(calibration_images=48, hessian_images=48, bits=bits, ends_bits=None), images)
    assert set(variant.layer_bits.values()) == {bits}
    errors = layer_errors(variant, model, images)
    for name, (gptq, rounding) in errors.items():
        assert gptq <= rounding, (name, gptq, rounding)
    assert sum(g for g, _ in errors.values()) < 0.8 * sum(r for _, r in errors.values())
    recorded = variant.details["layer_output_error"]  # the same comparison, from the Hessians
    assert set(recorded) == set(errors)
    assert sum(e["gptq"] for e in recorded.values()) < sum(e["rounding"] for e in recorded.values())


def test_variant_records_its_settings_and_keeps_the_ends_at_eight_bits(model_and_images):
    model, images = model_and_images
    variant = quantize(model, GPTQConfig(calibration_images=32, hessian_images=16, bits=3), images)
    names = list(variant.layer_bits)
    assert variant.layer_bits[names[0]] == variant.layer_bits[names[-1]] == 8
    assert {variant.layer_bits[name] for name in names[1:-1]} == {3}
    assert variant.details["hessian_images"] == 16 and variant.details["damp"] == 0.01
    assert variant.details["ends_bits"] == 8 and variant.details["layer_bits"] == variant.layer_bits
    assert all(set(e) == {"rounding", "gptq"} for e in variant.details["layer_output_error"].values())


@pytest.mark.slow
def test_gptq_weights_are_exactly_what_the_twin_stores_and_the_integer_model_runs(model_and_images, tmp_path):
    from recourse.compression import CompressionInputs
    from recourse.compression.gptq import gptq_quantization
    from recourse.progress import silent

    model, images = model_and_images
    config = GPTQConfig(calibration_images=32, hessian_images=32, bits=2)
    twin, _ = gptq_quantization(config, CompressionInputs(model, images, None, None, silent))
    for name, layer in weight_layers(twin).items():  # before the api snaps anything
        with torch.no_grad():
            assert torch.equal(layer.weight_fake_quant(layer.weight), layer.weight), name
    variant = quantize(model, config, images)
    save_variant(variant, model, tmp_path / "v")
    loaded = load_variant(tmp_path / "v")
    assert loaded.config == config and loaded.layer_bits == variant.layer_bits
    with torch.no_grad():
        assert torch.equal(loaded.integer(images) >= 0, variant.integer(images) >= 0)
        assert torch.equal(loaded.twin(images), variant.twin(images))
        agreement = ((variant.twin(images) >= 0) == (variant.integer(images) >= 0)).float().mean()
    assert agreement > 0.98


def test_the_hessian_is_twice_the_mean_outer_product_of_the_layers_inputs(model_and_images):
    model, images = model_and_images
    variant = quantize(model, GPTQConfig(calibration_images=16, hessian_images=16), images)
    layer = weight_layers(variant.twin)["head.2"]
    seen = []
    handle = layer.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    with torch.no_grad():
        variant.twin(images[:10])
    handle.remove()
    x = seen[0]  # (10, 16): one row per image
    hessian = layer_hessian(variant.twin, layer, images[:10], batch_size=4)
    torch.testing.assert_close(hessian, (2 * x.T @ x / 10).double(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("settings, field", [
    ({"bits": 7}, "bits"), ({"bits": 1}, "bits"), ({"bits": True}, "bits"), ({"bits": 4.0}, "bits"),
    ({"ends_bits": 9}, "ends_bits"), ({"damp": 0.0}, "damp"), ({"damp": math.nan}, "damp"), ({"damp": 2.0}, "damp"),
    ({"hessian_images": 0}, "hessian_images"), ({"calibration_images": 0}, "calibration_images"),
])
def test_invalid_settings_are_refused_naming_the_field(settings, field):
    with pytest.raises(ValueError, match=f"^{field} must"):
        GPTQConfig(**settings)


def test_only_plain_convolutions_and_linear_layers_are_handled():
    with pytest.raises(ValueError, match="gptq handles"):
        layer_inputs(torch.nn.Conv1d(2, 2, 3), torch.randn(1, 2, 5))
    with pytest.raises(ValueError, match="gptq handles"):
        layer_inputs(torch.nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"), torch.randn(1, 2, 5, 5))
