"""Measure where the face detector's box sits in the CelebA-HQ framing.

    python -m scripts.chores.calibrate_framing --data ../shared/data/celeba-hq-64 \
        --aligned ../shared/data/celeba-aligned-dev

prints the constants of recourse/faces.py: HQ_BOX_CENTER, HQ_BOX_WIDTH (medians over
training images) and CELEBA_ALIGNED_HQ_CROP (the median crop of Align&Cropped photos).
"""

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

from recourse.data import select_split
from recourse.faces import detect_faces, hq_crop_from_face_box


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="CelebA-HQ folder (train split is used)")
    parser.add_argument("--aligned", help="original CelebA folder (img_align_celeba/)")
    parser.add_argument("--n", type=int, default=400)
    args = parser.parse_args()

    names = select_split(args.data, "train").filenames
    relative, missed = [], 0
    for name in names[:: len(names) // args.n][: args.n]:
        image = Image.open(Path(args.data) / "CelebA-HQ-img" / name).convert("RGB")
        faces = detect_faces(image)
        if not faces:
            missed += 1
            continue
        x, y, w, h = faces[0]
        relative.append(((x + w / 2) / image.width, (y + h / 2) / image.height, w / image.width))
    center_x, center_y, width = np.median(np.array(relative), axis=0)
    print(f"CelebA-HQ: {len(relative)} detected, {missed} missed")
    print(f"HQ_BOX_CENTER = ({center_x:.3f}, {center_y:.3f})\nHQ_BOX_WIDTH = {width:.3f}")

    if args.aligned:
        folder = Path(args.aligned) / "img_align_celeba"
        crops = []
        for path in sorted(folder.iterdir())[: args.n]:
            faces = detect_faces(Image.open(path).convert("RGB"))
            if faces:
                crops.append(hq_crop_from_face_box(faces[0]))
        print(f"Align&Cropped: {len(crops)} of {min(args.n, len(list(folder.iterdir())))} detected "
              "(the crop uses the HQ constants currently in recourse/faces.py)")
        print("CELEBA_ALIGNED_HQ_CROP =", tuple(round(float(v), 1) for v in np.median(np.array(crops), axis=0)))


if __name__ == "__main__":
    main()
