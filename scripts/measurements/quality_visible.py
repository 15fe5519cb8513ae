"""The product's default recourse on test: each attribute's edit read at the visible and benchmark stops.

    python -m scripts.measurements.quality_visible --data ../shared/data/celeba-hq-64 --split test --n 500 \\
        --resume-dir out/quality-visible-test --json assets/results/quality-visible-test.json

For each of the first ``--n`` faces and each attribute, the full-precision classifier makes the
audit's whole edit (``recourse.audit.result.product_settings().edit_config``: the committed settings,
aimed past every stop), in batches of 20 faces and timed; each stop (``recourse.audit.stops.committed_stops``:
the visible stop and the benchmark's margin) is the first point of that edit's straight path where
the classifier is past its margin (``recourse.audit.paired.stop_on_paths``), as the app shows it. At each
stop: FR, dlib's FVA, the oracle's MNAC, the independent judges' seen rate, ceiling and shift
(``recourse.instruments.set_verdicts``), and the oracle-feature FD against real faces of the target
class beside the real-versus-real floor (the same split's faces that are not tasks).

The edits are kept in ``--resume-dir`` in chunks, with the settings they were made with: a run
stopped by a session's end continues where it was, and a folder made with other settings is refused.
Each chunk is also read face by face as soon as it is made (``recourse.audit.stop_readings``,
``stop_faces``: logits, the oracle's decisions and features, dlib's descriptors, the judges'
scores; no picture) and kept in ``--readings-dir``: a folder small enough to commit, from which
a run longer than a session goes on in the next one, where the edits (pictures of real faces)
are not kept. The pooled numbers (``reading_from_faces``) are those of reading all faces at once.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shlex
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file as load_arrays
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import load_file, save_file

from recourse.audit.result import product_settings
from recourse.audit.stops import for_attribute
from recourse.generation.methods import edit_kind
from recourse.audit.stop_readings import Originals, StopFaces, reading_from_faces, stop_faces
from recourse.data import attribute_index, to_float_images
from recourse.generation import generate, load_generator
from recourse.generation.quality import oracle_features
from recourse.generation.regions import REGIONS
from recourse.instruments.realism import realism_with_floor
from recourse.locations import generator_dir
from recourse.names import QUALITY_ATTRIBUTES

CHUNK = 20  # faces per saved chunk: what a session's end can cost


def settings_key(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def chunk_edits(x: torch.Tensor, classifier, attributes: list[str], targets: torch.Tensor, config, generator,
                folder: Path | None, start: int, stop: int) -> dict[str, tuple[torch.Tensor, list[float]]]:
    """Each attribute's whole edit of the faces ``start:stop`` and the seconds each took, from
    ``folder`` where made. The chunk's faces are edited in one batch per attribute, each with its
    own seed: the same numbers as face by face (``tests/test_regions.py``: a region edit does not
    depend on batch order), in about 0.7 of the time for a region edit. A face's seconds are its
    share of its batch's: the app's own time for one face is ``scripts.method_speed``'s."""
    paths = {attribute: folder / f"{attribute}-{start:05d}-{stop:05d}.safetensors" if folder else None
             for attribute in attributes}
    missing = [attribute for attribute in attributes if paths[attribute] is None or not paths[attribute].is_file()]
    chunks = {}
    for attribute in missing:
        index = attribute_index(attribute)
        started = time.perf_counter()
        edit = generate(x[start:stop], classifier, attribute, targets[start:stop, index], config, generator,
                        seeds=tuple(config.seed + i for i in range(start, stop))).edits
        chunks[attribute] = (edit, [(time.perf_counter() - started) / (stop - start)] * (stop - start))
    for attribute in attributes:
        if attribute in chunks:
            if paths[attribute] is not None:  # written whole, then named: another process never reads half
                chunk, times = chunks[attribute]
                partial = paths[attribute].with_suffix(f".{os.getpid()}.tmp")
                save_file({"edits": chunk.contiguous(), "seconds": torch.tensor(times, dtype=torch.float64)}, partial)
                partial.replace(paths[attribute])
        else:
            kept = load_file(paths[attribute])
            chunks[attribute] = (kept["edits"], kept["seconds"].tolist())
    if missing:
        print(f"faces {start}–{stop - 1} of {len(x)}: " + ", ".join(
            f"{attribute} {statistics.median(chunks[attribute][1]):.2f} s" for attribute in missing)
            + " per edit", flush=True)
    return chunks


def chunk_starts(count: int, backward: bool = False) -> list[int]:
    """The first face of each chunk, in the order a process makes them: ``backward`` from the
    last, so that a second process shares a run's chunks with the first without meeting it
    until they are done."""
    starts = list(range(0, count, CHUNK))
    return starts[::-1] if backward else starts


def read_faces(originals: Originals, attributes: list[str], stops: dict[str, dict[str, float]], config, generator,
               edits_folder: Path | None, readings_folder: Path | None, backward: bool = False
               ) -> dict[str, tuple[dict[str, StopFaces], list[float]]]:
    """Each attribute's edits read face by face at each of its stops (``stops[attribute]``: name →
    margin), with the seconds each edit took:
    chunk by chunk, from ``readings_folder`` where read (then the chunk's edits are not needed),
    else from the chunk's edits (:func:`chunk_edits`), read and kept there."""
    read: dict[int, dict[str, tuple[dict[str, StopFaces], list[float]]]] = {}
    count = len(originals.x)
    for start in chunk_starts(count, backward):
        stop = min(start + CHUNK, count)
        paths = {attribute: readings_folder / f"{attribute}-{start:05d}-{stop:05d}.safetensors" if readings_folder
                 else None for attribute in attributes}
        unread = [attribute for attribute in attributes if paths[attribute] is None or not paths[attribute].is_file()]
        edits = chunk_edits(originals.x, originals.classifier, unread, originals.targets, config, generator,
                            edits_folder, start, stop) if unread else {}
        read[start] = {}
        for attribute in attributes:
            if attribute in edits:
                chunk, times = edits[attribute]
                spaces = getattr(generator, "edit_spaces", None) or True  # True: the colour readings alone
                faces = {name: stop_faces(originals, attribute, chunk, margin, slice(start, stop), features=True,
                                          spaces=spaces)[1]
                         for name, margin in stops[attribute].items()}
                if paths[attribute] is not None:
                    arrays = {name: array for stop_name, one in faces.items() for name, array in one.arrays(stop_name).items()}
                    partial = paths[attribute].with_suffix(f".{os.getpid()}.tmp")
                    save_arrays({**arrays, "seconds": np.asarray(times, np.float64)}, str(partial))
                    partial.replace(paths[attribute])
            else:
                arrays = load_arrays(str(paths[attribute]))
                faces = {name: StopFaces.from_arrays(arrays, name) for name in stops[attribute]}
                times = arrays["seconds"].tolist()
            read[start][attribute] = (faces, times)
    starts = sorted(read)
    return {attribute: ({name: StopFaces.joined([read[start][attribute][0][name] for start in starts])
                         for name in stops[attribute]},
                        [t for start in starts for t in read[start][attribute][1]]) for attribute in attributes}


def judge_rows(verdicts: list[dict]) -> list[dict]:
    """Each independent judge's verdict per target class, and pooled over both (weighted by n)."""
    rows = []
    for name in dict.fromkeys(v["judge"] for v in verdicts):
        own = [v for v in verdicts if v["judge"] == name]
        for v in own:
            rows.append({key: v[key] for key in ("judge", "target", "n", "missing", "seen_rate", "seen_low",
                                                 "seen_high", "ceiling", "seen_over_ceiling", "shift",
                                                 "shift_low", "shift_high")})
        weights = [v["n"] for v in own]

        def pooled(key: str) -> float | None:
            values = [(v[key], w) for v, w in zip(own, weights) if v[key] is not None and np.isfinite(v[key])]
            return round(sum(a * w for a, w in values) / sum(w for _, w in values), 4) if values else None

        rows.append({"judge": name, "target": "both", "n": sum(weights), "seen_rate": pooled("seen_rate"),
                     "ceiling": pooled("ceiling"), "seen_over_ceiling": pooled("seen_over_ceiling"),
                     "shift": pooled("shift")})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES))
    parser.add_argument("--resume-dir", help="keep the edits here, chunk by chunk, and continue from them")
    parser.add_argument("--readings-dir", help="keep each chunk's face-by-face readings here (no pictures: small "
                                               "enough to commit) and continue from them")
    parser.add_argument("--generator", default=str(generator_dir()))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backward", action="store_true",
                        help="make the chunks from the last (a second process on the same --resume-dir)")
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    settings = product_settings()
    config, stops = settings.edit_config, settings.stops
    # the generator by its files' hashes, not its path: a run resumed from another checkout keeps its edits
    weights = json.loads((Path(args.generator) / "manifest.json").read_text())["sha256"]
    key = settings_key({"config": asdict(config), "split": args.split, "generator": weights})
    folder = Path(args.resume_dir) / key if args.resume_dir else None
    generator = load_generator(args.generator)
    # each attribute's stops: a region-space edit's visible stop is its attribute's own
    per_attribute = {attribute: for_attribute(stops, attribute, edit_kind(config, attribute, generator))
                     for attribute in args.attributes}
    margins = {attribute: {"visible": one.visible, "benchmark": one.benchmark} for attribute, one in per_attribute.items()}
    # the readings depend on the stops too; the instruments are the committed ones
    readings_key = settings_key({"edits": key, "stops": stops.to_dict(), "per_attribute": margins})
    readings = Path(args.readings_dir) / readings_key if args.readings_dir else None
    for kept in (folder, readings):
        if kept is not None:
            kept.mkdir(parents=True, exist_ok=True)
            (kept / "settings.json").write_text(json.dumps({"config": asdict(config), "split": args.split,
                                                            "stops": stops.to_dict()}, indent=2))
    originals = Originals.load(args.data, args.split, args.n)
    pool = originals.rest
    pool_features = oracle_features(originals.oracle, to_float_images(pool.images[args.n:]))
    started = time.perf_counter()
    rows = []
    read = read_faces(originals, args.attributes, margins, config, generator, folder, readings, args.backward)
    for attribute in args.attributes:
        index = attribute_index(attribute)
        targets = originals.targets[:, index]
        faces, seconds = read[attribute]
        for name, margin in margins[attribute].items():
            reading = reading_from_faces(originals, attribute, faces[name], margin)
            realism = realism_with_floor(faces[name].features, targets.numpy(), pool_features,
                                         pool.labels[args.n:, index])
            row = {"attribute": attribute, "region": REGIONS[attribute] if config.region_mask else "frame",
                   "stop": name, "margin": margin, "n": len(originals.x),
                   "reached_rate": reading.reached_rate, "flip_rate": reading.flip_rate, "fva": reading.fva,
                   "artifact_pass_rate": reading.artifact_pass_rate,
                   "mnac": reading.mnac,
                   "fd": realism.fd, "floor_fd": realism.floor_fd,
                   "fd_over_floor": round(realism.fd / realism.floor_fd, 3) if realism.floor_fd else None,
                   "judges": judge_rows(reading.verdicts), "median_seconds": round(statistics.median(seconds), 3)}
            rows.append(row)
            pooled = [j for j in row["judges"] if j["target"] == "both"]
            print(f"{attribute:20s} {name:9s} (margin {margin:g}): reached {row['reached_rate']:5.1f}  "
                  f"FR {row['flip_rate']:5.1f}  FVA {row['fva']:5.1f}  "
                  f"MNAC {row['mnac']:.2f}  FD {row['fd']} (floor {row['floor_fd']})  artifacts passed "
                  f"{row['artifact_pass_rate']}  "
                  + "  ".join(f"{j['judge']}: shift {j['shift']} seen/ceiling {j['seen_over_ceiling']}" for j in pooled),
                  flush=True)
    output = {"command": "python -m scripts.measurements.quality_visible "
                         + shlex.join(sys.argv[1:] if argv is None else argv),
              "date": datetime.date.today().isoformat(), "split": args.split, "n": len(originals.x),
              "stops": stops.to_dict(), "settings": asdict(config),
              "seconds_this_run": round(time.perf_counter() - started, 1), "threads": args.threads,
              "attributes": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2, allow_nan=False) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
