import pytest
import torch

from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.compression import (CFPTQConfig, CFQQATConfig, GPTQConfig, KDQuantConfig, MixedPrecQATConfig,
                                   PruneQuantConfig, PTQInt4Config, PTQInt8Config, quantize)
from recourse.compression.recourse_points import RecoursePoints


@pytest.fixture(scope="module")
def model_and_images():
    torch.manual_seed(0)
    model = AttributeClassifier(ClassifierConfig(widths=(8, 16), dropout=0.0)).eval()
    images = torch.rand(64, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    return model, images


@pytest.fixture(scope="module")
def labels_and_points(model_and_images):
    model, images = model_and_images
    generator = torch.Generator().manual_seed(2)
    labels = (torch.rand(len(images), 40, generator=generator) > 0.5).long()
    points = RecoursePoints(images=torch.rand(16, 3, 32, 32, generator=generator),
                            attributes=torch.randint(0, 40, (16,), generator=generator),
                            targets=(torch.rand(16, generator=generator) > 0.5).float(),
                            sources=torch.arange(16), attempted=20, seconds=1.5)
    return labels, points


ALL_METHODS = [
    PTQInt8Config(calibration_images=32), PTQInt4Config(calibration_images=32),
    PTQInt4Config(calibration_images=32, ends_bits=8), GPTQConfig(calibration_images=32, hessian_images=16),
    PruneQuantConfig(calibration_images=32), CFPTQConfig(calibration_images=32, search_images=16),
    MixedPrecQATConfig(steps=3, batch_size=8, sensitivity_images=16),
    CFQQATConfig(steps=3, batch_size=8, sensitivity_images=16, recourse_batch_size=4),
    KDQuantConfig(steps=3, batch_size=8),
]


def test_full_precision_model_is_never_modified(model_and_images, labels_and_points):
    model, images = model_and_images
    before = {k: v.clone() for k, v in model.state_dict().items()}
    quantize(model, PTQInt8Config(calibration_images=32), images)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)
    assert not model.training
    model.train()  # nor its mode
    try:
        quantize(model, KDQuantConfig(steps=1, batch_size=4), images, labels_and_points[0])
        assert model.training
    finally:
        model.eval()


def layer_weights(variant) -> dict[str, torch.Tensor]:
    """The twin's weight of every quantized layer (named by ``variant.layer_bits``): after
    quantization the weights are their quantized values, exactly what the codes store."""
    return {name: variant.twin.get_submodule(name).weight.detach() for name in variant.layer_bits}


def test_int8_integer_model_runs_quantized_kernels_and_matches_its_twin(model_and_images):
    model, images = model_and_images
    result = quantize(model, PTQInt8Config(calibration_images=32), images)
    assert result.integer is not None and result.decider is result.integer
    assert any("quantized" in type(m).__module__ for m in result.integer.modules())
    with torch.no_grad():
        twin_logits, integer_logits, full_logits = result.twin(images), result.integer(images), model(images)
    # same scales and zero points: the two differ only by rounding inside the kernels
    assert (twin_logits - integer_logits).abs().max() < 0.1 * full_logits.abs().max()
    assert ((twin_logits >= 0) == (integer_logits >= 0)).float().mean() > 0.95
    assert result.bits_per_weight == 8.0 and result.seconds > 0


def test_twin_is_differentiable(model_and_images):
    model, images = model_and_images
    twin = quantize(model, PTQInt4Config(calibration_images=32), images).twin
    x = images[:2].clone().requires_grad_(True)
    twin(x)[:, 31].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


@pytest.mark.parametrize("config, levels, fewest", [(PTQInt4Config(calibration_images=32), 16, 9),
                                                    (PTQInt8Config(calibration_images=32), 256, 17)],
                         ids=["int4", "int8"])
def test_weights_take_at_most_two_to_the_bits_values_per_channel(model_and_images, config, levels, fewest):
    model, images = model_and_images
    result = quantize(model, config, images)
    assert result.decider is result.integer  # 4-bit codes run in the 8-bit kernels
    assert set(result.layer_bits.values()) == {config.weight_bits}
    weights = layer_weights(result)
    assert len(weights) == 1 + 2 * len(model.config.widths) + 1  # stem, two convolutions per stage, head
    most = 0
    for name, weight in weights.items():
        for channel in weight.flatten(1):
            values = torch.unique(channel)
            assert len(values) <= levels, name
            most = max(most, len(values))
    assert most >= fewest  # the grid is used: more values than half the levels (int4) or than int4 allows (int8)


@pytest.mark.slow
def test_the_twin_and_a_saved_variant_decide_what_the_integer_model_decides(model_and_images, tmp_path):
    from recourse.audit.paired import Student
    from recourse.compression import load_variant, save_variant

    model, images = model_and_images
    variant = quantize(model, PTQInt4Config(calibration_images=32), images)
    student = Student.from_variant("ptq-int4", variant)
    assert student.decider is variant.integer and student.twin is variant.twin and student.kind == "integer"
    save_variant(variant, model, tmp_path / "v")
    loaded = Student.from_variant("ptq-int4", load_variant(tmp_path / "v"))
    with torch.no_grad():
        assert torch.equal(loaded.decider(images), student.decider(images))


def test_variants_loaded_one_after_another_are_each_their_own(model_and_images, tmp_path):
    """Loading copies one prepared twin per architecture: a second variant must not change the first."""
    from recourse.compression import load_variant, save_variant

    model, images = model_and_images
    made = {"int8": quantize(model, PTQInt8Config(calibration_images=32), images),
            "int4": quantize(model, PTQInt4Config(calibration_images=32), images)}
    for name, variant in made.items():
        save_variant(variant, model, tmp_path / name)
    first = load_variant(tmp_path / "int8")
    with torch.no_grad():
        before = first.twin(images).clone()
        second = load_variant(tmp_path / "int4")
        assert torch.equal(first.twin(images), before)  # untouched by the second load
        assert torch.equal(second.twin(images), made["int4"].twin(images))
        assert not torch.equal(second.twin(images), before)
    assert first.twin is not second.twin


def test_bad_arguments_are_rejected(model_and_images):
    model, images = model_and_images
    with pytest.raises(ValueError, match="calibration_images must be >= 1"):
        PTQInt8Config(calibration_images=0)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        quantize(model, PTQInt8Config(), images[:, :1])
    with pytest.raises(ValueError, match="unknown compression config"):
        quantize(model, "ptq-int8", images)


def config_id(config) -> str:
    ends = getattr(config, "ends_bits", None)
    return config.method + (f"-ends{ends}" if ends is not None else "")


@pytest.mark.slow
@pytest.mark.parametrize("config", ALL_METHODS, ids=config_id)
def test_every_method_saves_compactly_and_reloads_with_identical_outputs(model_and_images, labels_and_points,
                                                                         config, tmp_path):
    from recourse.compression import load_variant, save_variant

    model, images = model_and_images
    labels, points = labels_and_points
    before = {k: v.clone() for k, v in model.state_dict().items()}
    variant = quantize(model, config, images, labels, points)
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key
    save_variant(variant, model, tmp_path / "variant", {"command": "test"})
    loaded = load_variant(tmp_path / "variant")
    assert loaded.config == config and loaded.details["command"] == "test"
    assert loaded.layer_bits == variant.layer_bits
    with torch.no_grad():
        torch.testing.assert_close(loaded.twin(images), variant.twin(images), rtol=0, atol=0)
        torch.testing.assert_close(loaded.integer(images), variant.integer(images), rtol=0, atol=0)
        twin_decisions, integer_decisions = variant.twin(images) >= 0, variant.integer(images) >= 0
    assert (twin_decisions == integer_decisions).float().mean() > 0.98
    # weights are stored only as codes packed at their layer's width, never as floats
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / "variant" / "model.safetensors"))
    for name, weight in layer_weights(variant).items():
        assert f"{name}.weight" not in stored
        bits = variant.layer_bits[name]
        assert stored[f"{name}.weight_codes"].numel() == -(-weight.numel() * bits // 8)
        assert torch.equal(layer_weights(loaded)[name], weight), name
    if config.method in ("cf-ptq", "cfq-qat"):
        assert variant.seconds >= points.seconds  # making the recourse points counts in T_make


@pytest.mark.slow
@pytest.mark.parametrize("config", [MixedPrecQATConfig(steps=2, batch_size=8, sensitivity_images=16, budget=b)
                                    for b in (3.5, 4.0, 6.0)], ids=lambda c: f"budget-{c.budget}")
def test_mixed_precision_stays_within_its_budget(model_and_images, labels_and_points, config):
    model, images = model_and_images
    variant = quantize(model, config, images, labels_and_points[0])
    assert variant.bits_per_weight <= config.budget + 1e-9
    assert set(variant.layer_bits.values()) <= set(config.bit_choices)


def test_fine_tuning_changes_the_twin_and_keeps_it_differentiable(model_and_images, labels_and_points):
    model, images = model_and_images
    untuned = quantize(model, KDQuantConfig(steps=0), images, labels_and_points[0])
    tuned = quantize(model, KDQuantConfig(steps=5, batch_size=8, learning_rate=1e-2), images, labels_and_points[0])
    with torch.no_grad():
        assert not torch.equal(tuned.twin(images), untuned.twin(images))
    assert tuned.details["fine_tuning"]["steps"] == 5
    x = images[:2].clone().requires_grad_(True)
    tuned.twin(x)[:, 3].sum().backward()
    assert x.grad.abs().sum() > 0


def test_methods_that_need_labels_or_recourse_points_say_so(model_and_images):
    model, images = model_and_images
    with pytest.raises(ValueError, match="labels"):
        quantize(model, KDQuantConfig(steps=1), images)
    with pytest.raises(ValueError, match="recourse points"):
        quantize(model, CFPTQConfig(), images)
    with pytest.raises(ValueError, match="budget"):
        MixedPrecQATConfig(budget=2.0)
    with pytest.raises(ValueError, match="clip_grid"):
        CFPTQConfig(clip_grid=(1.2,))


def test_broken_variant_folder_is_reported(tmp_path):
    from recourse.checkpoints import CheckpointError, write_manifest
    from recourse.compression import load_variant

    with pytest.raises(CheckpointError, match="config not found"):
        load_variant(tmp_path)
    (tmp_path / "config.json").write_text('{"architecture": "AttributeClassifier"}')
    write_manifest(tmp_path)  # recorded: the loader's own check must still refuse it
    with pytest.raises(CheckpointError, match="not a compressed variant"):
        load_variant(tmp_path)


def test_magnitude_pruning_zeroes_the_smallest_weights_globally():
    from recourse.compression.prune import magnitude_prune

    first, second = torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        first.weight.copy_(torch.tensor([[0.1, -2.0], [0.5, 3.0]]))
        second.weight.copy_(torch.tensor([[-0.2, 1.0]]))
    model = torch.nn.Sequential(first, torch.nn.ReLU(), second)
    pruned = magnitude_prune(model, 0.5)  # 3 of the 6 smallest |w|: 0.1, 0.2, 0.5
    weights = [m.weight.tolist() for m in pruned.modules() if isinstance(m, torch.nn.Linear)]
    assert weights == [[[0.0, -2.0], [0.0, 3.0]], [[0.0, 1.0]]]
    assert first.weight[0, 0].item() == pytest.approx(0.1)  # the original is untouched
    assert magnitude_prune(model, 0.0)[0].weight.tolist() == first.weight.tolist()


def test_prune_quant_keeps_the_stated_sparsity_through_quantization(model_and_images):
    model, images = model_and_images
    variant = quantize(model, PruneQuantConfig(calibration_images=32, sparsity=0.5), images)
    assert variant.integer is not None and variant.details["sparsity"] == 0.5
    weights = torch.cat([w.flatten() for w in layer_weights(variant).values()])
    assert 0.49 <= float((weights == 0).float().mean()) < 0.6
    assert variant.details["storage"].startswith("dense 8-bit codes")  # says plainly that zeros save nothing
    unpruned = quantize(model, PTQInt8Config(calibration_images=32), images)
    assert float((torch.cat([w.flatten() for w in layer_weights(unpruned).values()]) == 0).float().mean()) < 0.1
    with pytest.raises(ValueError, match="sparsity"):
        PruneQuantConfig(sparsity=1.0)


def test_the_registry_lists_every_method_once_in_order():
    from recourse.compression import METHODS, config_classes, register

    assert METHODS == ("ptq-int8", "ptq-int4", "gptq", "cf-ptq", "cfq-qat", "mixedprec-qat", "kd-quant",
                       "prune-quant")
    assert tuple(config_classes()) == METHODS
    assert {type(c) for c in ALL_METHODS} == set(config_classes().values())
    with pytest.raises(ValueError, match="already has a handler"):
        register(PTQInt8Config)(lambda config, inputs: None)


@pytest.mark.slow
def test_ptq_int4_with_eight_bit_ends_changes_only_the_first_and_last_layers(model_and_images):
    model, images = model_and_images
    plain = quantize(model, PTQInt4Config(calibration_images=32), images)
    ends = quantize(model, PTQInt4Config(calibration_images=32, ends_bits=8), images)
    names = list(ends.layer_bits)
    assert [ends.layer_bits[n] for n in names] == [8] + [4] * (len(names) - 2) + [8]
    assert ends.details["layer_bits"] == ends.layer_bits and ends.details["ends_bits"] == 8
    assert "ends_bits" not in plain.details and set(plain.layer_bits.values()) == {4}
    plain_weights, ends_weights = layer_weights(plain), layer_weights(ends)
    for name in names:  # the same min/max codes in between, finer codes at the ends
        assert torch.equal(plain_weights[name], ends_weights[name]) == (name not in (names[0], names[-1])), name
    total = sum(w.numel() for w in ends_weights.values())
    ends_share = (ends_weights[names[0]].numel() + ends_weights[names[-1]].numel()) / total
    assert ends.bits_per_weight == pytest.approx(4 + 4 * ends_share)


TWO_BITS = [MixedPrecQATConfig(steps=0, calibration_images=32, sensitivity_images=16, bit_choices=(2, 3, 4, 5, 6, 8),
                               budget=2.0),
            GPTQConfig(calibration_images=32, hessian_images=32, bits=2, ends_bits=None)]


@pytest.mark.slow
@pytest.mark.parametrize("config", TWO_BITS, ids=lambda c: c.method)
def test_two_bit_layers_pack_reload_and_decide_as_the_integer_model_does(model_and_images, labels_and_points, config,
                                                                        tmp_path):
    from safetensors.torch import load_file

    from recourse.compression import load_variant, save_variant

    model, images = model_and_images
    variant = quantize(model, config, images, labels_and_points[0])
    assert set(variant.layer_bits.values()) == {2} and variant.bits_per_weight == 2.0
    for name, weight in layer_weights(variant).items():
        for channel in weight.flatten(1):
            assert len(torch.unique(channel)) <= 4, name
    with torch.no_grad():
        twin_decisions, integer_decisions = variant.twin(images) >= 0, variant.integer(images) >= 0
    assert (twin_decisions == integer_decisions).float().mean() > 0.98  # 2-bit codes in the 8-bit kernels
    save_variant(variant, model, tmp_path / "v")
    stored = load_file(str(tmp_path / "v" / "model.safetensors"))
    for name, weight in layer_weights(variant).items():
        assert stored[f"{name}.weight_codes"].numel() == -(-weight.numel() // 4)  # four codes a byte
    loaded = load_variant(tmp_path / "v")
    assert loaded.layer_bits == variant.layer_bits
    with torch.no_grad():
        assert torch.equal(loaded.integer(images), variant.integer(images))


def test_mixed_precision_keeps_its_bit_choices_and_may_be_given_two_bits():
    from recourse.compression.fakequant import BIT_CHOICES

    assert 2 in BIT_CHOICES
    assert MixedPrecQATConfig().bit_choices == CFQQATConfig().bit_choices == (3, 4, 5, 6, 8)
    assert MixedPrecQATConfig(bit_choices=(2, 4), budget=2.0).budget == 2.0
    with pytest.raises(ValueError, match="budget"):
        MixedPrecQATConfig(bit_choices=(2, 4), budget=1.5)
    with pytest.raises(ValueError, match="bit_choices"):
        MixedPrecQATConfig(bit_choices=(1, 4))


@pytest.mark.parametrize("make, message", [
    (lambda: PTQInt4Config(ends_bits=7), "ends_bits must be one of"),
    (lambda: PTQInt4Config(ends_bits=True), "ends_bits must be one of"),
    (lambda: PTQInt4Config(ends_bits=8.0), "ends_bits must be one of"),
])
def test_ends_bits_must_be_a_layer_width(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_only_fixed_width_methods_take_ends_bits():
    from recourse.compression import make_config

    assert make_config("ptq-int4", ends_bits=8).ends_bits == 8
    assert make_config("gptq", ends_bits=6, bits=3) == GPTQConfig(bits=3, ends_bits=6)
    with pytest.raises(ValueError, match="ends_bits does not apply to method ptq-int8"):
        make_config("ptq-int8", ends_bits=8)


@pytest.mark.parametrize("config, layer, bits", [
    (PTQInt4Config(calibration_images=32, ends_bits=8), "features.3", 8),  # the middle stays at 4
    (PTQInt4Config(calibration_images=32, ends_bits=8), "head.2", 4),  # the ends at 8
    (PTQInt4Config(calibration_images=32), "head.2", 8),  # no ends_bits: 4 everywhere
    (GPTQConfig(calibration_images=32, hessian_images=8, bits=3), "features.0", 3),
], ids=["ptq-middle", "ptq-end", "ptq-no-ends", "gptq-end"])
@pytest.mark.slow
def test_storage_refuses_widths_the_method_does_not_give_a_layer(model_and_images, tmp_path, config, layer, bits):
    import json

    from recourse.checkpoints import CheckpointError, write_manifest
    from recourse.compression import load_variant, save_variant

    model, images = model_and_images
    save_variant(quantize(model, config, images), model, tmp_path / "v")
    load_variant(tmp_path / "v")  # as saved, it loads
    record = json.loads((tmp_path / "v" / "config.json").read_text())
    record["layer_bits"][layer] = bits
    (tmp_path / "v" / "config.json").write_text(json.dumps(record))
    write_manifest(tmp_path / "v")  # recorded: the loader's own check must still refuse it
    with pytest.raises(CheckpointError, match=f"layer {layer} has {bits} bits; {config.method} uses"):
        load_variant(tmp_path / "v")
