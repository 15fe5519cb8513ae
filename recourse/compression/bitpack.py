"""Packing signed integer codes of any width from 2 to 8 bits densely into bytes."""

from __future__ import annotations

import numpy as np
import torch


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Signed codes in ``[-2^(bits-1), 2^(bits-1) - 1]`` → ``ceil(n · bits / 8)`` uint8 bytes."""
    half = 2 ** (bits - 1)
    flat = codes.detach().flatten().to(torch.int16)
    if not 2 <= bits <= 8:
        raise ValueError(f"bits must be in 2..8, got {bits}")
    if len(flat) and (flat.min() < -half or flat.max() > half - 1):
        raise ValueError(f"codes out of the {bits}-bit range")
    unsigned = (flat + half).to(torch.uint8).numpy()
    planes = np.unpackbits(unsigned[:, None], axis=1)[:, 8 - bits:]  # the low `bits` bits, MSB first
    return torch.from_numpy(np.packbits(planes.reshape(-1)))


def unpack_codes(packed: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: ``count`` signed codes as int16."""
    planes = np.unpackbits(packed.numpy())[: count * bits].reshape(count, bits)
    padded = np.concatenate([np.zeros((count, 8 - bits), dtype=np.uint8), planes], axis=1)
    unsigned = np.packbits(padded, axis=1).reshape(-1)
    return torch.from_numpy(unsigned.astype(np.int16)) - 2 ** (bits - 1)
