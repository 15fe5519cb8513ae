"""Malformed or tampered checkpoints raise CheckpointError, whose message names the file
relative to the project and never shows a traceback's worth of internals; the list of
variants says which do not load instead of stopping."""

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from recourse.checkpoints import CheckpointError, load_classifier, save_classifier, write_manifest
from recourse.classifier import AttributeClassifier, ClassifierConfig
from recourse.compression import MixedPrecQATConfig, PTQInt8Config, load_variant, quantize, save_variant
from recourse.data import ATTRIBUTES


def _tiny_classifier() -> AttributeClassifier:
    torch.manual_seed(0)
    return AttributeClassifier(ClassifierConfig(widths=(4, 8), resolution=16, dropout=0.0)).eval()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A classifier, a ptq-int8 variant and a mixed-precision variant, saved once."""
    root = tmp_path_factory.mktemp("checkpoints")
    model = _tiny_classifier()
    images = torch.rand(16, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    labels = (torch.rand(16, 40, generator=torch.Generator().manual_seed(2)) > 0.5).long()
    save_classifier(model, root / "classifier", {})
    save_variant(quantize(model, PTQInt8Config(calibration_images=8), images), model, root / "ptq-int8")
    mixed = quantize(model, MixedPrecQATConfig(calibration_images=8, steps=0, batch_size=8, sensitivity_images=8,
                                               budget=5.0), images, labels)
    assert len(set(mixed.layer_bits.values())) > 1, mixed.layer_bits  # a real mix, so widths can be swapped
    save_variant(mixed, model, root / "mixed")
    return root


@pytest.fixture
def copy_of(saved, tmp_path):
    def copy(name: str) -> Path:
        return Path(shutil.copytree(saved / name, tmp_path / name))
    return copy


# The edits below re-record the manifest, as a tamperer who can write the folder would:
# the loader's own checks must still catch what they catch. Unrecorded changes are refused
# by the manifest (test_unrecorded_changes_to_committed_checkpoints_are_refused).
def _edit_config(directory: Path, edit) -> None:
    record = json.loads((directory / "config.json").read_text())
    edit(record)
    (directory / "config.json").write_text(json.dumps(record))
    write_manifest(directory)


def _edit_weights(directory: Path, edit) -> None:
    state = load_file(str(directory / "model.safetensors"))
    edit(state)
    save_file(state, str(directory / "model.safetensors"))
    write_manifest(directory)


def _raises(load, directory: Path, message: str) -> str:
    with pytest.raises(CheckpointError, match=message) as error:
        load(directory)
    text = str(error.value)
    assert str(directory.parent) not in text and "Traceback" not in text and "\n" not in text
    return text


def test_saved_variants_load(saved):
    assert load_variant(saved / "ptq-int8").config == PTQInt8Config(calibration_images=8)
    load_variant(saved / "mixed")


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("settings"), "settings are missing"),
    (lambda r: r.update(settings={"calibration_images": "all"}), "invalid ptq-int8 settings"),
    (lambda r: r.update(settings={"calibration_images": 8, "shell": "rm"}), "unknown ptq-int8 setting 'shell'"),
    (lambda r: r.update(method=["ptq-int8"]), r"unknown method \['ptq-int8'\]"),  # was: unhashable type: 'list'
    (lambda r: r.pop("classifier"), "architecture is missing"),
    (lambda r: r["classifier"].update(attributes=list(reversed(ATTRIBUTES))), "attribute names are not the 40"),
    (lambda r: r["classifier"].update(widths=[4, 10**7]), "not a valid classifier architecture"),
    (lambda r: r.pop("layer_bits"), "layer_bits must give the bit width of each"),
    (lambda r: r["layer_bits"].popitem(), "layer_bits must give the bit width of each"),
    (lambda r: r["layer_bits"].update({next(iter(r["layer_bits"])): 4}), "has 4 bits; ptq-int8 uses 8"),
    (lambda r: r["layer_bits"].update({next(iter(r["layer_bits"])): "8"}), "has '8' bits"),
    (lambda r: r.update(bits_per_weight=math.nan), "bits_per_weight must be a number"),
    (lambda r: r.update(bits_per_weight=4.0), "layer_bits give 8.0000 bits per weight, bits_per_weight says 4.0"),
    (lambda r: r.update(make_seconds="fast"), "make_seconds must be a number"),
])
def test_tampered_variant_configs_are_refused(copy_of, edit, message):
    directory = copy_of("ptq-int8")
    _edit_config(directory, edit)
    _raises(load_variant, directory, message)


def test_a_config_that_is_not_an_object_is_refused(copy_of):
    directory = copy_of("ptq-int8")
    (directory / "config.json").write_text("[1, 2]")
    write_manifest(directory)
    _raises(load_variant, directory, "expected an object of fields")


def _swap_a_width(record: dict, keep_mean: bool) -> None:
    """Give the first layer another of the method's widths (8 → 4 in the issue), optionally
    fixing bits_per_weight to match, as a careful tamperer would."""
    bits = record["layer_bits"]
    first = next(iter(bits))
    bits[first] = 4 if bits[first] != 4 else 8
    if keep_mean:
        layers = load_variant_sizes(record)
        record["bits_per_weight"] = round(sum(bits[n] * layers[n] for n in bits) / sum(layers.values()), 4)


def load_variant_sizes(record: dict) -> dict[str, int]:
    from recourse.compression.fakequant import fold_batch_norm, prepare_twin, weight_layers

    base = AttributeClassifier(ClassifierConfig.from_dict(record["classifier"])).eval()
    twin = prepare_twin(fold_batch_norm(base), 16)
    return {name: layer.weight.numel() for name, layer in weight_layers(twin).items()}


@pytest.mark.parametrize("keep_mean, message", [
    (False, "bits_per_weight says"),
    (True, "should hold .* bytes of 4-bit codes, holds .* torch.uint8"),  # the codes' length gives it away
])
def test_a_changed_layer_width_never_reinterprets_the_codes(copy_of, keep_mean, message):
    directory = copy_of("mixed")
    _edit_config(directory, lambda record: _swap_a_width(record, keep_mean))
    _raises(load_variant, directory, message)


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update({k: v[:-1] for k, v in s.items() if k.endswith("weight_codes")}), "should hold"),
    (lambda s: s.pop(next(k for k in s if k.endswith("weight_codes"))), "holds none"),
    (lambda s: s.update({k: torch.ones(len(v) + 1) for k, v in s.items() if k.endswith("weight_fake_quant.scale")}),
     "has shape"),
    (lambda s: s.update({k: -v for k, v in s.items() if k.endswith("weight_fake_quant.scale")}), "not positive"),
    (lambda s: s.update({k: torch.full_like(v, math.nan) for k, v in s.items() if k.endswith("bias")}), "NaN"),
    (lambda s: s.update(extra=torch.zeros(1)), "unexpected"),
])
def test_tampered_variant_weights_are_refused(copy_of, edit, message):
    directory = copy_of("ptq-int8")
    _edit_weights(directory, edit)
    _raises(load_variant, directory, message)


@pytest.mark.parametrize("name", ["ptq-int8", "classifier"])
@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2], lambda data: data[:7], lambda data: b"\x80\x04\x95pickle" + data[100:],
])
def test_truncated_or_foreign_weights_are_a_checkpoint_error(copy_of, name, damage):
    directory = copy_of(name)
    weights = directory / "model.safetensors"
    weights.write_bytes(damage(weights.read_bytes()))
    load = load_variant if name != "classifier" else load_classifier
    _raises(load, directory, "model.safetensors: its content does not match manifest.json")  # not recorded
    write_manifest(directory)
    _raises(load, directory, "not a readable safetensors file")  # recorded: the parser still refuses it


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.update(attributes=list(reversed(ATTRIBUTES))), "attribute names are not the 40 CelebA attributes"),
    (lambda r: r.update(attributes=ATTRIBUTES[:39]), "not a valid classifier architecture"),
    (lambda r: r.update(widths=[10**7]), "a width must be <= 4096"),
    (lambda r: r.update(std=[0.25, "x", 0.25]), "not a valid classifier architecture"),
])
def test_tampered_classifier_configs_are_refused(copy_of, edit, message):
    directory = copy_of("classifier")
    _edit_config(directory, edit)
    _raises(load_classifier, directory, message)


# --- the app's list of variants ----------------------------------------------------------


@pytest.fixture
def home(saved, tmp_path, monkeypatch):
    """A project home with the teacher, a working ptq-int8 and a broken cf-ptq."""
    from recourse import models

    home = tmp_path / "home"
    shutil.copytree(saved / "classifier", home / "checkpoints" / "classifier")
    shutil.copytree(saved / "ptq-int8", home / "checkpoints" / "variants" / "ptq-int8")
    broken = Path(shutil.copytree(saved / "ptq-int8", home / "checkpoints" / "variants" / "cf-ptq"))
    _edit_config(broken, lambda record: record.pop("settings"))
    monkeypatch.setenv("RECOURSE_HOME", str(home))
    models.clear_loaded()
    yield home
    models.clear_loaded()


def test_variant_status_says_which_variants_do_not_load_and_why(home):
    from recourse.models import VARIANTS, load_student, variant_status

    statuses = {variant: variant_status(variant) for variant in VARIANTS}
    assert statuses["ptq-int8"] is None
    assert statuses["cf-ptq"] == ("does not load: checkpoints/variants/cf-ptq/config.json: "
                                  "the method's settings are missing")
    assert all(statuses[v] == "not built yet" for v in VARIANTS if v not in ("ptq-int8", "cf-ptq"))
    assert not any(str(home) in (status or "") for status in statuses.values())
    load_student("ptq-int8")  # the working one is unaffected
    with pytest.raises(CheckpointError):
        load_student("cf-ptq")


def test_variant_status_refuses_what_is_not_a_variant_name(home):
    from recourse.models import load_committed_variant, variant_status

    for value in (["ptq-int8"], "../classifier", None):
        with pytest.raises(ValueError, match="unknown variant"):
            variant_status(value)
        with pytest.raises(ValueError, match="unknown variant"):
            load_committed_variant(value)


# --- the attacks on the committed checkpoints: content, not shape -------------------

COMMITTED = Path(__file__).resolve().parents[1] / "checkpoints"


def _flip_output_biases(directory: Path) -> None:
    weights = directory / "model.safetensors"
    state = load_file(str(weights))
    bias = [name for name, tensor in state.items() if name.startswith("head.") and name.endswith("bias")
            and tensor.shape == (40,)]
    assert len(bias) == 1, bias  # the head's 40 output biases
    state[bias[0]] = -state[bias[0]]
    save_file(state, str(weights))


def _invert_bytes(directory: Path, count: int = 10_368) -> None:
    """Invert ``count`` bytes in the middle of the weights (the tensors' data, not the
    header): the file still parses and every shape still fits."""
    weights = directory / "model.safetensors"
    data = bytearray(weights.read_bytes())
    start = len(data) // 2
    data[start:start + count] = bytes(255 - b for b in data[start:start + count])
    weights.write_bytes(bytes(data))


@pytest.mark.parametrize("name, load, damage", [
    ("classifier", load_classifier, _flip_output_biases),
    ("variants/gptq", load_variant, _invert_bytes),
    ("judge", load_classifier, _flip_output_biases),
])
def test_unrecorded_changes_to_committed_checkpoints_are_refused(tmp_path, name, load, damage):
    """Before the manifest both loaded silently and audited with wrong numbers."""
    source = COMMITTED / name
    if not (source / "config.json").is_file():
        pytest.skip(f"checkpoints/{name} is not committed here")
    directory = Path(shutil.copytree(source, tmp_path / name.replace("/", "-")))
    load(directory)  # the copy as committed loads
    damage(directory)
    _raises(load, directory, "model.safetensors: its content does not match manifest.json")


def test_every_committed_checkpoint_has_a_true_manifest():
    from recourse.checkpoints import verify_folder
    from scripts.chores.record_manifests import committed_folders

    folders = committed_folders(COMMITTED)
    assert COMMITTED / "classifier" in folders and COMMITTED / "generator" in folders
    for folder in folders:
        verify_folder(folder)


def test_a_changed_generator_file_is_a_checkpoint_error(tmp_path, monkeypatch):
    """The generator is opened by diffusers, which raised a raw OSError on a truncated file
    and loaded altered weights silently; its files are checked against the manifest first."""
    from recourse import models

    home = tmp_path / "home"
    shutil.copytree(COMMITTED / "generator", home / "checkpoints" / "generator")
    weights = home / "checkpoints" / "generator" / "denoiser" / "diffusion_pytorch_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    monkeypatch.setenv("RECOURSE_HOME", str(home))
    with pytest.raises(CheckpointError, match="denoiser/diffusion_pytorch_model.safetensors: its content does not"):
        models.load_generator()
    (home / "checkpoints" / "generator" / "extra.bin").write_bytes(b"x")
    with pytest.raises(CheckpointError, match="extra.bin: not listed"):
        models.load_generator()
