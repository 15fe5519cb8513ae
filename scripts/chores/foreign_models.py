"""The worked example's models: the classifier exported and quantized as an auditor's own would be.

The project's classifier exported the ways an auditor's own would be, quantized by their
tools, each with its model card, and checked.

    python -m scripts.chores.foreign_models --data ../shared/data/celeba-hq-64 --out out/foreign

writes four folders under ``--out``, each a model card beside its model:

* ``fp32-onnx`` and ``fp32-pt2``: ``checkpoints/classifier`` as ONNX and as a ``torch.export``
  program;
* ``ort-int8``: the ONNX copy quantized by ONNX Runtime's static quantizer (QDQ, uint8
  activations, int8 per-channel weights, MinMax calibration on ``--calibration`` train faces);
* ``torchao-int8``: the program quantized by torchao's pt2e flow (X86InductorQuantizer; the
  ``torch.ao`` pt2e flow is no longer in torch 2.13), calibrated on the same faces.

Then each is loaded through its card (``recourse.foreign``) and run on ``--check`` test faces:
its decisions must equal those of its own runtime called directly (a plain ONNX Runtime
session; the converted program as torch.export.load gives it) — exactly, or the script exits
with status 1. Also reported: decision agreement with the float classifier, accuracy against
the labels, and latency per face (batch 64) in the same run. ``worked-example.json`` holds it all.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import load_classifier
from recourse.data import ATTRIBUTES, load_split, to_float_images
from recourse.foreign.adapter import ForeignClassifier
from recourse.foreign.cards import write_card
from recourse.foreign.export import export_onnx, quantize_onnx_static, quantize_program_pt2e, save_program
from recourse.foreign.loaders import load_foreign, onnx_session
from recourse.locations import checkpoints_dir

BATCH = 64


def card(name: str, fmt: str, weights: str, description: str, folder: Path) -> dict:
    import hashlib

    return {"card_version": 1, "name": name, "description": description, "format": fmt, "weights": weights,
            "sha256": hashlib.sha256((folder / weights).read_bytes()).hexdigest(),
            # the project's classifier normalises inside: it takes [0, 1] RGB at 64×64, CelebA-HQ framing
            "input": {"size": [64, 64], "channel_order": "RGB", "layout": "NCHW", "value_range": [0, 1],
                      "mean": [0, 0, 0], "std": [1, 1, 1], "framing": "celeba-hq"},
            "output": {"kind": "logits", "attributes": list(ATTRIBUTES)}}


def batches(images: torch.Tensor):
    for start in range(0, len(images), BATCH):
        yield images[start:start + BATCH]


def seconds_per_face(call, images: torch.Tensor, repeats: int = 3) -> float:
    """Median over ``repeats`` of the time to score ``images`` in batches of 64, per face."""
    times = []
    with torch.no_grad():
        call(images[:BATCH])  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            for batch in batches(images):
                call(batch)
            times.append((time.perf_counter() - start) / len(images))
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/celeba-hq-64")
    parser.add_argument("--out", default="out/foreign")
    parser.add_argument("--calibration", type=int, default=512, help="train faces to calibrate on")
    parser.add_argument("--check", type=int, default=1000, help="test faces to check decisions on")
    parser.add_argument("--timing", type=int, default=256, help="test faces to time each model on")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reuse", action="store_true", help="keep models already under --out; only check them")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    out = Path(args.out)
    classifier = load_classifier(checkpoints_dir() / "classifier")
    started = time.perf_counter()

    test = load_split(args.data, "test", 64, cache_dir=".cache")
    images = to_float_images(test.images[:args.check])
    labels = torch.as_tensor(test.labels[:args.check]).bool()
    example = images[:2]

    folders = {name: out / name for name in ("fp32-onnx", "fp32-pt2", "ort-int8", "torchao-int8")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    made = all((folder / name).is_file() for folder in folders.values() for name in ("recourse-card.json",))
    if not (args.reuse and made):
        train = load_split(args.data, "train", 64, cache_dir=".cache")
        pick = np.random.default_rng(0).choice(len(train.images), args.calibration, replace=False)
        calibration = list(batches(to_float_images(train.images[np.sort(pick)])))
        export_onnx(classifier, example, folders["fp32-onnx"] / "model.onnx")
        save_program(classifier, example, folders["fp32-pt2"] / "model.pt2")
        quantize_onnx_static(folders["fp32-onnx"] / "model.onnx", folders["ort-int8"] / "model.onnx", calibration)
        torch.export.save(quantize_program_pt2e(classifier, example, calibration),
                          str(folders["torchao-int8"] / "model.pt2"))
    where = f"checkpoints/classifier; {args.calibration} CelebA-HQ train faces (seed 0) for calibration"
    descriptions = {"fp32-onnx": "the project's classifier, ONNX (float)",
                    "fp32-pt2": "the project's classifier, torch.export (float)",
                    "ort-int8": f"ONNX Runtime static int8 (QDQ, U8S8, per-channel, MinMax) of {where}",
                    "torchao-int8": f"torchao pt2e int8 (X86InductorQuantizer default) of {where}"}
    for name, folder in folders.items():
        weights = "model.onnx" if "onnx" in name or name == "ort-int8" else "model.pt2"
        fmt = "onnx" if weights.endswith(".onnx") else "torch-export"
        if not (args.reuse and made):
            write_card(folder, card(f"classifier-{name}", fmt, weights, descriptions[name], folder))

    with torch.no_grad():
        reference = torch.cat([classifier(b) for b in batches(images)])
    report: dict = {"command": "python -m scripts.chores.foreign_models "
                               + " ".join(sys.argv[1:] if argv is None else argv),
                    "calibration_faces": args.calibration, "check_faces": len(images), "threads": args.threads,
                    "torch": torch.__version__, "models": {}}
    failed = False
    for name, folder in folders.items():
        model = ForeignClassifier(load_foreign(folder))
        with torch.no_grad():
            logits = torch.cat([model(b) for b in batches(images)])
            if model.loaded.runtime == "onnxruntime":  # the runtime itself, called directly
                session = onnx_session(str(folder / "model.onnx"))
                own = torch.cat([torch.from_numpy(session.run(None, {session.get_inputs()[0].name: b.numpy()})[0])
                                 for b in batches(images)])
                own_call = lambda b, s=session: s.run(None, {s.get_inputs()[0].name: b.numpy()})  # noqa: E731
            else:  # the program as torch.export.load gives it (quantized: q/dq, no straight-through)
                program = torch.export.load(str(folder / "model.pt2")).module()
                own = torch.cat([program(b) for b in batches(images)])
                own_call = program
        same = (logits >= 0) == (own >= 0)
        agreement = float(same.float().mean())
        failed |= agreement != 1.0
        report["models"][name] = {
            "runtime": model.loaded.runtime, "quantized": model.loaded.quantized,
            "differentiable": model.loaded.differentiable, "bytes": (folder / ("model.onnx" if "onnx" in name
                                                                              or name == "ort-int8" else "model.pt2")).stat().st_size,
            "decisions_equal_to_own_runtime": agreement, "max_abs_logit_difference_to_own_runtime":
                float((logits - own).abs().max()),
            "decision_agreement_with_fp32_classifier": float(((logits >= 0) == (reference >= 0)).float().mean()),
            "max_abs_logit_difference_to_fp32_classifier": float((logits - reference).abs().max()),
            "accuracy": float(((logits >= 0) == labels).float().mean()),
            "seconds_per_face_adapter": seconds_per_face(model, images[:args.timing]),
            "seconds_per_face_own_runtime": seconds_per_face(own_call, images[:args.timing]),
        }
        print(name, json.dumps(report["models"][name]))
    report["fp32_classifier"] = {"accuracy": float(((reference >= 0) == labels).float().mean()),
                                 "seconds_per_face": seconds_per_face(classifier, images[:args.timing])}
    report["seconds"] = round(time.perf_counter() - started, 1)
    (out / "worked-example.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out / 'worked-example.json'} ({report['seconds']} s)")
    if failed:
        print("FAILED: a loaded model's decisions differ from its own runtime's")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
