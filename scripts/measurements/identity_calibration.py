"""Calibrate the identity instrument: distances of the same face (noised, mirrored) and of two faces.

The identity instrument is the dlib face descriptor (``recourse.instruments.identity``), here at
64 px on real test faces: what distance does the same face get (with small Gaussian pixel noise,
or mirrored), and what do two different faces get? FVA and FS of counterfactuals only mean
something beside these.

    python -m scripts.measurements.identity_calibration --data ../shared/data/celeba-hq-64 --n 200 \\
        --json assets/results/identity-calibration.json

"Different faces" are all pairs of distinct test images. CelebA-HQ has several images of some
people and no identity labels here, so a few of those pairs may be the same person: the share of
different pairs under the threshold is an upper bound on the false-match rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from recourse.data import load_split, to_float_images
from recourse.instruments.identity import DLIB_THRESHOLD, FALLBACK_BOX, UPSAMPLED, face_descriptor

NOISE_LEVELS = (0.01, 0.02, 0.05)  # Gaussian σ on [0, 1] pixels: 2.5/255, 5/255, 13/255


def summary(distances: np.ndarray) -> dict:
    return {"pairs": int(distances.size), "median": round(float(np.median(distances)), 4),
            "mean (FS)": round(float(distances.mean()), 4),
            "p05": round(float(np.percentile(distances, 5)), 4), "p95": round(float(np.percentile(distances, 95)), 4),
            "within threshold % (FVA)": round(100.0 * float((distances <= DLIB_THRESHOLD).mean()), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=200, help="test faces (the first n of the split)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pixel noise")
    parser.add_argument("--json")
    args = parser.parse_args()
    started = time.time()
    faces = to_float_images(load_split(Path(args.data), args.split, 64, cache_dir=".cache").images[: args.n])
    describe = face_descriptor()
    originals = describe(faces)
    conditions = {}
    generator = torch.Generator().manual_seed(args.seed)
    for sigma in NOISE_LEVELS:
        noisy = (faces + sigma * torch.randn(faces.shape, generator=generator)).clamp(0, 1)
        other = describe(noisy)
        conditions[f"same face, noise sigma {sigma}"] = {
            **summary(np.linalg.norm(originals.vectors - other.vectors, axis=1)),
            "detected": int(other.detected.sum())}
    flipped = describe(faces.flip(-1))
    conditions["same face, mirrored"] = {**summary(np.linalg.norm(originals.vectors - flipped.vectors, axis=1)),
                                         "detected": int(flipped.detected.sum())}
    first, second = np.triu_indices(len(faces), k=1)
    conditions["two different faces (all pairs)"] = summary(
        np.linalg.norm(originals.vectors[first] - originals.vectors[second], axis=1))
    output = {"command": "python -m scripts.measurements.identity_calibration " + " ".join(sys.argv[1:]),
              "data": str(args.data), "split": args.split, "faces": len(faces),
              "threshold": DLIB_THRESHOLD, "upsampled_to": UPSAMPLED, "fallback_box": FALLBACK_BOX,
              "detected_originals": int(originals.detected.sum()), "conditions": conditions,
              "seconds": round(time.time() - started, 1), "threads": torch.get_num_threads()}
    for name, row in conditions.items():
        print(f"{name:34s} median {row['median']:.3f}  FS {row['mean (FS)']:.3f}  "
              f"p05–p95 {row['p05']:.3f}–{row['p95']:.3f}  ≤{DLIB_THRESHOLD}: {row['within threshold % (FVA)']:.1f}%")
    print(f"detector found {output['detected_originals']} of {len(faces)} faces; {output['seconds']} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(output, indent=2) + "\n")


if __name__ == "__main__":
    main()
