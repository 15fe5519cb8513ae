"""A folder of counterfactual batches already made, so that a long evaluation resumes.

An evaluation of 500 faces × 8 attributes through the denoiser takes hours on two cores,
longer than a session may run; each batch is written the moment it is made, and a rerun
with the same folder makes only the batches that are missing. The folder records what run
it belongs to (``run.json``: command settings, split, faces, generator weights); a rerun
with other settings refuses the folder instead of mixing two runs' pictures.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import torch

RUN_FILE = "run.json"


class BatchStore:
    """Counterfactual batches keyed by ``(attribute, start, stop)``, stored as float32 ``.npy``."""

    def __init__(self, directory: str | Path, run: dict) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        run = json.loads(json.dumps(run, sort_keys=True))  # as it reads back: tuples become lists
        recorded = self.directory / RUN_FILE
        if recorded.exists():
            try:
                before = json.loads(recorded.read_text())
            except (OSError, json.JSONDecodeError) as error:
                raise ValueError(f"{recorded} is not a readable run record ({error}); "
                                 "remove the folder or choose another") from error
            if before != run:
                changed = sorted(k for k in set(before) | set(run) if before.get(k) != run.get(k))
                raise ValueError(f"{self.directory} holds batches of another run (differs in: "
                                 f"{', '.join(changed)}); choose another folder or remove it")
        else:
            _write_atomically(recorded, (json.dumps(run, indent=2, sort_keys=True) + "\n").encode())

    def _path(self, attribute: str, start: int, stop: int) -> Path:
        return self.directory / f"{attribute}-{start:06d}-{stop:06d}.npy"

    def get(self, attribute: str, start: int, stop: int) -> torch.Tensor | None:
        """The stored batch, or ``None`` when it was not made (or its file is damaged)."""
        path = self._path(attribute, start, stop)
        if not path.exists():
            return None
        try:
            return torch.from_numpy(np.load(path, allow_pickle=False))
        except (OSError, ValueError):
            return None  # a file cut short by a killed run: made again

    def put(self, attribute: str, start: int, stop: int, images: torch.Tensor) -> None:
        buffer = io.BytesIO()
        np.save(buffer, images.detach().to(torch.float32).numpy(), allow_pickle=False)
        _write_atomically(self._path(attribute, start, stop), buffer.getvalue())

    def made(self) -> int:
        return len(list(self.directory.glob("*.npy")))


def _write_atomically(path: Path, data: bytes) -> None:
    """A killed run leaves a ``.part`` file, never a file cut short under the real name."""
    partial = path.with_suffix(".part")
    partial.write_bytes(data)
    os.replace(partial, path)
