"""How many scans real JPEGs have, and what the worst allowed one costs to decode (MAX_JPEG_SCANS).

The worst JPEG is the worst that recourse.faces allows: these are the measurements behind
``faces.MAX_JPEG_SCANS``.

    python -m scripts.measurements.jpeg_scans FOLDER ... [--sample N] [--encoders] [--json]
    python -m scripts.measurements.jpeg_scans --decode [--repo PATH] [--timeout S] [--only TEXT ...]

The first form walks the markers of every JPEG under the folders (``--sample N``: N of each
folder's files, evenly spread) with ``recourse.jpeg_markers.read_layout`` and prints the
distribution of scan counts and the share of progressive files; ``--encoders`` adds the
JPEGs that the encoders found here write of one photo (Pillow, OpenCV, libjpeg-turbo's
cjpeg and jpegtran, mozjpeg's scan optimisation, jpegli: each where installed), with every
progressive option they have.

``--decode`` builds hostile and worst-allowed JPEGs and decodes each with
``recourse.faces.load_photo`` in a fresh process (after a warm-up), reporting the seconds,
the peak resident memory it added (``VmHWM`` after minus ``VmRSS`` before, from
``/proc/self/status``) and the outcome; ``--repo`` measures another checkout (before and
after a change), ``--timeout`` stops a decode that runs longer.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

from recourse import faces
from recourse.jpeg_markers import JpegStructureError, coefficient_bytes, read_layout

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = (".jpg", ".jpeg", ".jpe", ".jfif", ".mpo")
SOURCE_PHOTO = ROOT / "assets" / "examples" / "grace-hopper.jpg"


# --- building files -----------------------------------------------------------------


def scan_chunks(data: bytes) -> tuple[bytes, list[bytes], bytes]:
    """Split an encoder's JPEG into (head, chunks, tail): chunk k holds scan k's SOS and
    entropy-coded data and the table segments between it and the scan before (a progressive
    file may redefine its Huffman tables before each scan), so that a chunk appended again
    before the tail (EOI) is decoded as that scan again."""
    assert data[-2:] == b"\xff\xd9", "ends with EOI"
    starts, ends = [], []
    position = 2
    while True:
        marker_at = _next_marker(data, position)
        marker = data[marker_at + 1]
        if marker == 0xD9:
            break
        length = int.from_bytes(data[marker_at + 2:marker_at + 4], "big")
        position = marker_at + 2 + length
        if marker == 0xDA:
            starts.append(marker_at)
            ends.append(_next_marker(data, position))  # the entropy-coded data ends there
            position = ends[-1]
    bounds = [_table_start(data, starts[0])] + ends
    return data[:bounds[0]], [data[a:b] for a, b in zip(bounds, bounds[1:])], data[ends[-1]:]


def _next_marker(data: bytes, position: int) -> int:
    while True:
        position = data.index(b"\xff", position)
        if data[position + 1] not in (0x00, 0xFF) and not 0xD0 <= data[position + 1] <= 0xD7:
            return position
        position += 1


def _table_start(data: bytes, first_scan: int) -> int:
    """Where the table segments right before the first scan begin (the frame header ends)."""
    position, start = 2, first_scan
    while position < first_scan:
        marker_at = _next_marker(data, position)
        position = marker_at + 2 + int.from_bytes(data[marker_at + 2:marker_at + 4], "big")
        if 0xC0 <= data[marker_at + 1] <= 0xCF and data[marker_at + 1] not in (0xC4, 0xC8, 0xCC):
            start = position  # tables after the frame header travel with the first scan
    return start


def with_scans(data: bytes, scans: int, which: int = -1) -> bytes:
    """The JPEG with scan ``which`` (and the tables before it) repeated at its end until it
    has ``scans`` scans: what the attack did with its cheapest scan."""
    head, chunks, tail = scan_chunks(data)
    return head + b"".join(chunks) + chunks[which] * (scans - len(chunks)) + tail


def with_size(data: bytes, width: int, height: int) -> bytes:
    """The JPEG with its frame header claiming ``width × height`` pixels (nothing else
    changed: the data then runs out early, so only the checks before decoding see it)."""
    position = 2
    while True:
        marker_at = _next_marker(data, position)
        marker = data[marker_at + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            size = height.to_bytes(2, "big") + width.to_bytes(2, "big")
            return data[:marker_at + 5] + size + data[marker_at + 9:]
        position = marker_at + 2 + int.from_bytes(data[marker_at + 2:marker_at + 4], "big")


def encode(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", **options)
    return buffer.getvalue()


# --- the survey ------------------------------------------------------------------------


def survey(paths: list[Path]) -> dict:
    """Scan counts of JPEG files (a JpegStructureError is counted, with its message)."""
    scans: Counter = Counter()
    progressive = 0
    by_kind: Counter = Counter()
    errors: Counter = Counter()
    for path in paths:
        try:
            layout = read_layout(path.read_bytes())
        except JpegStructureError as error:
            errors[str(error)] += 1
            continue
        scans[layout.scans] += 1
        progressive += layout.progressive
        kind = ("progressive" if layout.progressive else "sequential") + f" {len(layout.components)} components"
        by_kind[f"{kind}, {layout.scans} scans"] += 1
    walked = sum(scans.values())
    return {"files": len(paths), "walked": walked, "progressive": progressive,
            "progressive_share": round(progressive / walked, 4) if walked else None,
            "max_scans": max(scans) if scans else None, "scans": dict(sorted(scans.items())),
            "kinds": dict(by_kind.most_common()), "errors": dict(errors)}


def jpeg_files(folder: Path, sample: int | None) -> list[Path]:
    files = sorted(path for path in folder.rglob("*") if path.suffix.lower() in SUFFIXES and path.is_file())
    if sample and len(files) > sample:
        files = [files[round(i * (len(files) - 1) / (sample - 1))] for i in range(sample)] if sample > 1 else files[:1]
    return files


def encoder_samples(photo: Image.Image) -> dict[str, bytes]:
    """The JPEGs of one photo written by each encoder found here, with its progressive options."""
    rgb = photo.convert("RGB")
    samples = {"pillow baseline q75": encode(rgb, quality=75)}
    for quality in (50, 75, 95):
        for subsampling in (0, 1, 2):
            for optimize in (False, True):
                samples[f"pillow progressive q{quality} sub{subsampling} opt{int(optimize)}"] = encode(
                    rgb, quality=quality, subsampling=subsampling, progressive=True, optimize=optimize)
    samples["pillow progressive grey"] = encode(rgb.convert("L"), progressive=True, optimize=True)
    samples["pillow progressive cmyk"] = encode(rgb.convert("CMYK"), progressive=True, optimize=True)
    samples.update(_opencv_samples(rgb))
    samples.update(_command_samples(rgb))
    samples.update(_library_samples(rgb, samples["pillow baseline q75"]))
    return samples


def _opencv_samples(rgb: Image.Image) -> dict[str, bytes]:
    try:
        import cv2
    except ImportError:
        return {}
    bgr = np.ascontiguousarray(np.asarray(rgb)[:, :, ::-1])
    samples = {}
    factors = {name: getattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{name}") for name in ("444", "422", "420", "411")
               if hasattr(cv2, f"IMWRITE_JPEG_SAMPLING_FACTOR_{name}")}
    for quality in (50, 95):
        for name, factor in factors.items():
            ok, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, 1,
                                                     cv2.IMWRITE_JPEG_OPTIMIZE, 1,
                                                     cv2.IMWRITE_JPEG_SAMPLING_FACTOR, factor])
            if ok:
                samples[f"opencv progressive q{quality} {name}"] = encoded.tobytes()
    ok, encoded = cv2.imencode(".jpg", cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    if ok:
        samples["opencv progressive grey"] = encoded.tobytes()
    return samples


def _command_samples(rgb: Image.Image) -> dict[str, bytes]:
    """libjpeg-turbo's cjpeg and jpegtran (Debian's libjpeg-turbo-progs), where installed."""
    samples = {}
    with tempfile.TemporaryDirectory() as folder:
        ppm = Path(folder) / "photo.ppm"
        rgb.save(ppm)
        baseline = Path(folder) / "photo.jpg"
        rgb.save(baseline, quality=90)
        runs = {}
        if shutil.which("cjpeg"):
            for options in (["-progressive"], ["-progressive", "-optimize"], ["-progressive", "-sample", "1x1"],
                            ["-progressive", "-grayscale"], ["-progressive", "-arithmetic"]):
                runs["cjpeg " + " ".join(options)] = ["cjpeg", *options, str(ppm)]
        if shutil.which("jpegtran"):
            runs["jpegtran -progressive"] = ["jpegtran", "-progressive", str(baseline)]
            runs["jpegtran -progressive -arithmetic"] = ["jpegtran", "-progressive", "-arithmetic", str(baseline)]
        for name, command in runs.items():
            completed = subprocess.run(command, capture_output=True)
            if completed.returncode == 0:
                samples[name] = completed.stdout
    return samples


def _library_samples(rgb: Image.Image, baseline: bytes) -> dict[str, bytes]:
    """mozjpeg's scan optimisation (mozjpeg-lossless-optimization) and jpegli (pyjpegli),
    where importable."""
    samples = {}
    try:
        import mozjpeg_lossless_optimization as mozjpeg

        samples["mozjpeg optimize (progressive, optimised scans)"] = mozjpeg.optimize(baseline)
        samples["mozjpeg optimize, grey"] = mozjpeg.optimize(encode(rgb.convert("L"), quality=75))
        samples["mozjpeg optimize, 4:4:4"] = mozjpeg.optimize(encode(rgb, quality=95, subsampling=0))
    except ImportError:
        pass
    try:
        import pyjpegli

        for quality in (50, 90):
            samples[f"jpegli q{quality}"] = pyjpegli.encode(rgb.tobytes(), rgb.width, rgb.height, quality=quality)
    except ImportError:
        pass
    return samples


# --- decode cost -------------------------------------------------------------------------

# Runs inside the measured process: prints one JSON line.
PROBE = r"""
import gc, io, json, sys, time
from PIL import Image
from recourse import faces

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # MiB
warm_up = io.BytesIO()
Image.new("RGB", (64, 64)).save(warm_up, format="JPEG", progressive=True)
faces.load_photo(warm_up.getvalue())  # Pillow's JPEG plugin and libjpeg are loaded before timing
gc.collect()
before = status("VmRSS")
started = time.perf_counter()
try:
    faces.load_photo(sys.argv[1])
    outcome = "decoded"
except faces.FaceAlignmentError as error:
    outcome = str(error)
seconds = time.perf_counter() - started
print(json.dumps({"peak": status("VmHWM") - before, "seconds": seconds, "outcome": outcome}))
"""


def measure(repo: Path, path: Path, timeout: float) -> dict:
    try:
        completed = subprocess.run([sys.executable, "-c", PROBE, str(path)], cwd=repo, capture_output=True, text=True,
                                   env={**os.environ, "PYTHONPATH": str(repo)}, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "peak": None, "outcome": f"still decoding after {timeout:.0f} s (stopped)"}
    if completed.returncode != 0:
        return {"seconds": None, "peak": None, "outcome": "failed: " + completed.stderr.strip()[-200:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def allowed_side(sample: bytes, aspect: float = 1.0) -> int:
    """The largest width (height = width × aspect) at which ``faces`` lets this JPEG's layout
    through its checks (bisection on the header alone: nothing is decoded)."""
    def allowed(width: int) -> bool:
        try:
            faces._checked(with_size(sample, width, max(1, round(width * aspect))), "probe.jpg")
            return True
        except (faces.FaceAlignmentError, Image.DecompressionBombError):
            return False
    low, high = 8, 16384
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if allowed(middle) else (low, middle - 1)
    return low


def photo_texture(width: int, height: int) -> Image.Image:
    """A photo-like picture of any size: the source photo, scaled (cheap to encode)."""
    return Image.open(SOURCE_PHOTO).convert("RGB").resize((width, height), Image.Resampling.BILINEAR)


def decode_cases(folder: Path) -> list[tuple[str, Path]]:
    """The attack, and the most expensive JPEGs of each layout that the checks allow: at the
    largest size the memory cap lets through, a photo as an encoder writes it, and a flat
    picture (whose scans are nearly empty, the attack's kind) with each of its scans in turn
    repeated up to MAX_JPEG_SCANS; then one size over the cap."""
    cases = []

    def add(name: str, data: bytes) -> None:
        if len(data) > faces.MAX_UPLOAD_BYTES:
            return  # refused from its size alone: the cost of a scan with data is bounded by it
        path = folder / (name.translate(str.maketrans(" ×,:", "_x__")) + ".jpg")
        path.write_bytes(data)
        cases.append((name, path))

    # the attack: a large progressive picture whose cheap last scan is repeated
    attack = encode(Image.new("RGB", (6324, 6324), (120, 110, 100)), progressive=True, quality=75)
    add("attack 40MP 2,500 scans", with_scans(attack, 2500))
    add("attack 40MP 250 scans", with_scans(attack, 250))
    add("attack 64×64 2,500 scans", with_scans(encode(Image.new("RGB", (64, 64)), progressive=True), 2500))
    # the other file: coefficient buffers of 8 bytes a pixel that the cap did not count
    add("attack 40MP CMYK progressive", encode(Image.new("CMYK", (6324, 6324)), progressive=True))
    limit = faces.MAX_JPEG_SCANS
    for label, mode, options in (("grey", "L", {}), ("4:2:0", "RGB", {"subsampling": 2}),
                                 ("4:4:4", "RGB", {"subsampling": 0}), ("CMYK", "CMYK", {})):
        side = min(allowed_side(encode(Image.new(mode, (64, 64)), progressive=True, **options)),
                   int(faces.MAX_PIXELS ** 0.5))
        add(f"{label} {side}² photo", encode(photo_texture(side, side).convert(mode), progressive=True, quality=90,
                                             **options))
        flat = encode(Image.new(mode, (side, side), (120, 110, 100, 0)[:len(mode)] if mode != "L" else 120),
                      progressive=True, quality=90, **options)
        for which in range(len(scan_chunks(flat)[1])):
            add(f"{label} {side}² flat, scan {which + 1} to {limit}", with_scans(flat, limit, which))
        add(f"{label} {side + 64}² photo (over the cap)",
            encode(photo_texture(side + 64, side + 64).convert(mode), progressive=True, quality=90, **options))
    if shutil.which("jpegtran"):  # arithmetic coding: an empty scan is a few bytes, and costs as much
        side = allowed_side(encode(Image.new("L", (64, 64)), progressive=True))
        flat = subprocess.run(["jpegtran", "-progressive", "-arithmetic"], capture_output=True, check=True,
                              input=encode(Image.new("L", (side, side), 120), quality=90)).stdout
        head, chunks, tail = scan_chunks(flat)
        small = [chunk for chunk in chunks if len(chunk) < 1024]  # Pillow can't decode one over 64 KB
        for which in range(len(small)):
            add(f"grey {side}² arithmetic, scan {which + 1} to {limit}",
                head + b"".join(small) + small[which] * (limit - len(small)) + tail)
    add("grey 6324² baseline photo", encode(photo_texture(6324, 6324).convert("L"), quality=90))
    add("4:2:0 6324² baseline photo", encode(photo_texture(6324, 6324), quality=90))
    return cases


def decode_report(repo: Path, timeout: float, only: list[str] | None = None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, path in decode_cases(Path(folder)):
            if only and not any(text in name for text in only):
                continue
            data = path.read_bytes()
            layout = read_layout(data)
            result = measure(repo, path, timeout)
            rows.append({"case": name, "kb": round(len(data) / 1024), "scans": layout.scans,
                         "scan_blocks": layout.scan_blocks,
                         "coefficient_mib": round(coefficient_bytes(layout) / 2**20, 1),
                         **result})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--sample", type=int, help="files per folder at most, evenly spread")
    parser.add_argument("--encoders", action="store_true", help="add what the encoders found here write")
    parser.add_argument("--decode", action="store_true", help="measure the decode cost of hostile and allowed files")
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout whose recourse.faces decodes (--decode)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a decode may run (--decode)")
    parser.add_argument("--only", action="append", help="the --decode cases whose name contains this (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict = {}
    for folder in args.folders:
        report[str(folder)] = survey(jpeg_files(folder, args.sample))
    if args.encoders:
        samples = encoder_samples(Image.open(SOURCE_PHOTO))
        layouts = {name: read_layout(data) for name, data in samples.items()}
        report["encoders"] = {name: {"scans": layout.scans, "progressive": layout.progressive,
                                     "components": len(layout.components)} for name, layout in layouts.items()}
    if args.decode:
        report["decode"] = decode_report(args.repo, args.timeout, args.only)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    for name, result in report.items():
        if name == "encoders":
            print("encoders (one photo):")
            for encoder, layout in result.items():
                print(f"  {encoder:<52} {layout['scans']:>3} scans  "
                      f"{'progressive' if layout['progressive'] else 'sequential'}, {layout['components']} components")
        elif name == "decode":
            print(f"decode with recourse.faces of {args.repo}:")
            print(f"  {'case':<36} {'KB':>7} {'scans':>6} {'coef MiB':>8} {'peak MiB':>8} {'s':>7}  outcome")
            for row in result:
                peak = "-" if row["peak"] is None else f"{row['peak']:.0f}"
                seconds = "-" if row["seconds"] is None else f"{row['seconds']:.2f}"
                print(f"  {row['case']:<36} {row['kb']:>7} {row['scans']:>6} {row['coefficient_mib']:>8} {peak:>8} "
                      f"{seconds:>7}  {row['outcome'][:100]}")
        else:
            print(f"{name}: {result['walked']} of {result['files']} JPEGs walked, "
                  f"{result['progressive']} progressive ({(result['progressive_share'] or 0):.1%}), "
                  f"at most {result['max_scans']} scans")
            print(f"  scans: {result['scans']}")
            for kind, count in result["kinds"].items():
                print(f"  {count:>6}  {kind}")
            for error, count in result["errors"].items():
                print(f"  {count:>6}  refused: {error}")


if __name__ == "__main__":
    main()
