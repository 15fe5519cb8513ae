"""Does the teacher's recourse reach the stated margin? (``recourse margin-reached``)

Reads a benchmark folder's cached teacher parts (one per chunk): over the tasks whose recourse
is valid, the teacher's logit of the target at ``x'_f`` signed towards the target. The margin is
reached where it is at least ``--margin`` (to ``--tolerance``), and the stop is tight where it
is not much more. An independent review found 1.01–1.87 at "margin 2" on the cone walk.

    recourse margin-reached out/bench26-test --margin 2 [--json FILE]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from recourse.benchmark.settings import FP32
from recourse.caches import CacheMismatch, read_tensors


@dataclass(frozen=True)
class MarginReached:
    chunks: int
    tasks: int
    valid: int
    reached: int  # valid tasks whose signed logit is at least margin − tolerance
    minimum: float
    median: float
    maximum: float


def signed_logits(logit: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The target's logit, positive towards the target (target 0 flips the sign)."""
    return torch.where(target == 1, logit, -logit)


def margin_reached(folder: Path, margin: float, tolerance: float = 1e-3) -> MarginReached:
    parts = sorted((folder / "cache").glob(f"{FP32}-*.safetensors"))
    if not parts:
        raise SystemExit(f"no cached teacher parts under {folder / 'cache'}: is it a benchmark --out folder?")
    try:  # the benchmark's own reader: a part whose content does not match its checksum is refused
        loaded = [read_tensors(path, {})[0] for path in parts]
    except CacheMismatch as error:
        raise SystemExit(f"a cached teacher part is damaged: {error}") from None
    logit, target, valid = (torch.cat([part[key] for part in loaded]) for key in ("logit", "target", "valid"))
    signed = signed_logits(logit.double(), target)[valid.bool()]
    if not len(signed):
        raise SystemExit("no valid teacher recourse in the cached parts")
    return MarginReached(chunks=len(parts), tasks=len(logit), valid=len(signed),
                         reached=int((signed >= margin - tolerance).sum()), minimum=float(signed.min()),
                         median=float(signed.median()), maximum=float(signed.max()))
