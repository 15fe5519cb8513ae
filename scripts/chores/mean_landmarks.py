"""The aligned framing's mean 68 face landmarks in a 64-px frame (recourse.generation.regions).

    python -m scripts.chores.mean_landmarks --data ../shared/data/celeba-hq-64 --count 300

fits dlib's 68 landmarks on the first ``count`` validation faces (as the regions fit them: the
frame upsampled to 256 px), averages them over the faces where one was found and prints the
constant ``MEAN_LANDMARKS_64`` of recourse/generation/regions.py.
"""

import argparse
from pathlib import Path

import numpy as np
import torch

from recourse.data import load_split, to_float_images
from recourse.generation.regions import FRAME, _fit, to_frame


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "data"
                                              / "celeba-hq-64"), help="CelebA-HQ folder (val split is used)")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--cache-dir", default=".cache")
    args = parser.parse_args()
    torch.set_num_threads(1)

    images = to_float_images(load_split(Path(args.data), "val", FRAME, cache_dir=args.cache_dir).images[:args.count])
    points, found = _fit(images)
    mean = to_frame(points[found].mean(axis=0), FRAME, FRAME)
    spread = np.linalg.norm(to_frame(points[found], FRAME, FRAME) - mean, axis=-1)
    print(f"# {int(found.sum())} of {len(images)} faces found; median distance of a fitted landmark from the mean "
          f"{np.median(spread):.2f} px (90th percentile {np.percentile(spread, 90):.2f} px)")
    rows = [", ".join(f"[{x:.2f}, {y:.2f}]" for x, y in mean[start:start + 6]) for start in range(0, len(mean), 6)]
    print("MEAN_LANDMARKS_64 = np.array([\n    " + ",\n    ".join(rows) + ",\n])")


if __name__ == "__main__":
    main()
