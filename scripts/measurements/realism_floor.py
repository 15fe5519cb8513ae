"""The real-versus-real floor of oracle-feature FD and KID, at several set sizes over random draws.

Two disjoint random sets of real faces of one split, at several sizes, over several random
draws. An edited set's FD or KID means
something only beside the floor at its own size (FD grows as N shrinks).

    python -m scripts.measurements.realism_floor --data ../shared/data/celeba-hq-64 --split test --json assets/results/realism-floor-test.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import load_classifier
from recourse.data import load_split, to_float_images
from recourse.generation.quality import oracle_features
from recourse.instruments.realism import real_floor
from recourse.locations import oracle_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500, 1000, 1500])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    started = time.time()
    oracle = load_classifier(oracle_dir()).eval()
    images = load_split(Path(args.data), args.split, oracle.config.resolution, cache_dir=".cache").images
    with torch.no_grad():
        features = oracle_features(oracle, to_float_images(images))
    rows = []
    for size in args.sizes:
        floors = [real_floor(features, size, seed) for seed in range(args.draws)]
        fd, kid = np.array([f.fd for f in floors]), np.array([f.kid for f in floors])
        rows.append({"n": size, "fd_mean": round(float(fd.mean()), 3), "fd_sd": round(float(fd.std(ddof=1)), 3),
                     "kid_mean": round(float(kid.mean()), 5), "kid_sd": round(float(kid.std(ddof=1)), 5)})
        print(f"n {size:5d}: FD {fd.mean():.3f} ± {fd.std(ddof=1):.3f}, KID {kid.mean():.5f} ± {kid.std(ddof=1):.5f}")
    output = {"command": "python -m scripts.measurements.realism_floor "
                         + " ".join(sys.argv[1:] if argv is None else argv),
              "data": str(args.data), "split": args.split, "faces": len(images), "draws": args.draws,
              "features": "oracle penultimate (checkpoints/oracle)", "floor": rows,
              "seconds": round(time.time() - started, 1)}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(output, indent=2) + "\n")


if __name__ == "__main__":
    main()
