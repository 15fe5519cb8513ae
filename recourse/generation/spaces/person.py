"""Which pixels show the person: MediaPipe's selfie segmentation, run in LiteRT.

A hair edit recolours hair, and hair is told from a background of the same colour by this
model, not by colour: the background of a portrait stays as it was. The model (256×256 RGB in
[0, 1] in, the person's probability out) ships in ``checkpoints/segmentation`` with its
provenance; its bytes are checked against the folder's manifest before LiteRT reads them.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from recourse.checkpoints import verified_bytes
from recourse.locations import checkpoints_dir

MODEL_FILE = "selfie_segmentation.tflite"
SIDE = 256  # the model's input and output size


class SegmentationError(RuntimeError):
    """The segmentation model or its runtime is missing."""


def _resize(images: torch.Tensor, side: int | tuple[int, int]) -> torch.Tensor:
    size = (side, side) if isinstance(side, int) else side
    if tuple(images.shape[-2:]) == size:
        return images
    shrinking = images.shape[-1] > size[1]
    return F.interpolate(images, size=size, mode="bilinear", align_corners=False, antialias=shrinking)


class PersonSegmenter:
    """``segmenter(images)``: ``(N, 1, H, W)`` person probabilities of float ``(N, 3, H, W)``
    frames in [0, 1]. The interpreter is made on first use and shared; calls take turns (a
    LiteRT interpreter is not reentrant)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else checkpoints_dir() / "segmentation"
        self._interpreter = None
        self._lock = threading.Lock()

    def _load(self):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as error:
            raise SegmentationError(f"person segmentation needs ai-edge-litert ({error}); "
                                    "pip install -r requirements.txt") from None
        path = self.directory / MODEL_FILE
        if not path.is_file():
            raise SegmentationError(f"{path}: the person segmentation model is missing "
                                    "(see checkpoints/segmentation/README.md)")
        interpreter = Interpreter(model_content=verified_bytes(path), num_threads=1)
        interpreter.allocate_tensors()
        return interpreter

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"expected float images (N, 3, H, W), got {getattr(images, 'shape', type(images))}")
        height, width = images.shape[-2:]
        frames = _resize(images.detach().float().clamp(0, 1), SIDE).permute(0, 2, 3, 1).contiguous().numpy()
        masks = np.empty((len(frames), 1, SIDE, SIDE), np.float32)
        with self._lock:
            if self._interpreter is None:
                self._interpreter = self._load()
            entry = self._interpreter.get_input_details()[0]["index"]
            exit_ = self._interpreter.get_output_details()[0]["index"]
            for i, frame in enumerate(frames):
                self._interpreter.set_tensor(entry, frame[None])
                self._interpreter.invoke()
                masks[i, 0] = self._interpreter.get_tensor(exit_)[0, :, :, 0]
        return _resize(torch.from_numpy(masks), (height, width)).clamp(0, 1).to(images.dtype)


PERSON = PersonSegmenter()
