"""Measure what one upload costs in memory: peak and left-behind RSS, each photo in a fresh process.

Peak and left-behind resident memory of aligning a hostile or merely large photo, each in a
fresh process.

    python -m scripts.measurements.upload_memory [--repo PATH] [--concurrent 4]

``--repo`` runs the measurement against another checkout of the project (for example
``git worktree add /tmp/before HEAD~1``), so that before and after can be compared with
the same files. Each case runs ``recourse.faces.align_face`` in a new Python process after
a warm-up alignment (so that OpenCV and its cascades are already loaded) and reports,
from ``/proc/self/status``:

* peak: ``VmHWM`` after the call minus ``VmRSS`` before it (what the upload added at most);
* left: ``VmRSS`` after the call and a garbage collection, minus ``VmRSS`` before it;
* the outcome: ``aligned`` or the refusal message, and the seconds it took.

The last two cases align the two 16-bit files ``--concurrent`` times at once in threads of
one process, as the app does with parallel requests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]

# Runs inside the measured process: prints one JSON line.
PROBE = r"""
import gc, json, sys, threading, time
from PIL import Image
from recourse import faces

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # MiB
path, copies = sys.argv[1], int(sys.argv[2])
try:
    faces.align_face(Image.new("RGB", (200, 200), (128, 128, 128)))  # warm-up: cv2 and the cascades
except faces.FaceAlignmentError:
    pass
gc.collect()
before = status("VmRSS")
outcomes = []
def one():
    try:
        faces.align_face(path)
        outcomes.append("aligned")
    except faces.FaceAlignmentError as error:
        outcomes.append(str(error))
started = time.perf_counter()
threads = [threading.Thread(target=one) for _ in range(copies)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
seconds = time.perf_counter() - started
gc.collect()
print(json.dumps({"peak": status("VmHWM") - before, "left": status("VmRSS") - before,
                  "seconds": seconds, "outcomes": sorted(set(outcomes))}))
"""


def make_cases(folder: Path) -> list[tuple[str, Path]]:
    """Small files that decode to many pixels, and ordinary large photos."""
    cases = []

    def add(name: str, image: Image.Image, **options) -> None:
        path = folder / name
        image.save(path, **options)
        cases.append((name, path))

    add("16bit-64MP.png", Image.fromarray(np.zeros((8000, 8000), np.uint16)))  # the file
    add("16bit-36MP.png", Image.fromarray(np.zeros((6000, 6000), np.uint16)))  # under a 40 MP cap
    add("rgba-36MP.png", Image.new("RGBA", (6000, 6000), (0, 0, 0, 0)))
    add("palette-36MP.png", Image.new("P", (6000, 6000)))
    add("rgb-36MP.jpg", Image.new("RGB", (6000, 6000), (120, 110, 100)), quality=90)
    add("rgb-12MP.jpg", Image.new("RGB", (4000, 3000), (120, 110, 100)), quality=90)  # a phone photo
    # issue 25's bombs, refused from the header (before: decoded by Gradio's image input)
    add("rgba-144MP.webp", Image.new("RGBA", (12000, 12000)), lossless=True)
    add("1bit-169MP.png", Image.new("1", (13000, 13000)))
    add("cmyk-49MP.tif", Image.new("CMYK", (7000, 7000)), compression="tiff_deflate")
    # the largest photo of each kind that is decoded (at the 40 MP or the 80 MB cap)
    add("grey-40MP.png", Image.new("L", (6324, 6324)))
    add("1bit-40MP.png", Image.new("1", (6324, 6324)))
    add("16bit-40MP.png", Image.fromarray(np.full((6324, 6324), 40000, np.uint16)))
    add("rgb-20MP.png", Image.new("RGB", (4570, 4570), (120, 110, 100)))
    add("rgba-20MP.png", Image.new("RGBA", (4570, 4570), (120, 110, 100, 128)))
    add("rgba-7MP.webp", Image.new("RGBA", (2640, 2640), (120, 110, 100, 128)), lossless=True)
    add("cmyk-20MP.tif", Image.new("CMYK", (4570, 4570)), compression="tiff_deflate")
    add("float-20MP.tif", Image.new("F", (4570, 4570), 0.5), compression="tiff_deflate")
    add("rgb-40MP.jpg", Image.new("RGB", (6324, 6324), (120, 110, 100)), quality=90)
    return cases


def measure(repo: Path, path: Path, copies: int = 1) -> dict:
    completed = subprocess.run([sys.executable, "-c", PROBE, str(path), str(copies)], cwd=repo,
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout whose recourse.faces is measured")
    parser.add_argument("--concurrent", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cases = make_cases(Path(folder))
        print(f"recourse.faces of {args.repo}")
        print(f"{'case':<24} {'file KB':>8} {'peak MiB':>9} {'left MiB':>9} {'s':>6}  outcome")
        runs = [(name, path, 1) for name, path in cases]
        runs += [(f"{name} ×{args.concurrent}", path, args.concurrent) for name, path in cases[:2]]
        for name, path, copies in runs:
            result = measure(args.repo, path, copies)
            if "error" in result:
                print(f"{name:<24} failed: {result['error']}")
                continue
            print(f"{name:<24} {path.stat().st_size / 1024:>8.0f} {result['peak']:>9.0f} {result['left']:>9.0f} "
                  f"{result['seconds']:>6.2f}  {'; '.join(result['outcomes'])[:90]}")


if __name__ == "__main__":
    main()
