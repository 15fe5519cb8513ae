"""Command line: ``python -m recourse <command> ...``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from recourse import __version__
from recourse.checkpoints import CheckpointError, load_classifier, read_config, update_config
from recourse.classifier import ClassifierConfig
from recourse.data import SPLITS, DatasetError, detect_layout, load_split
from recourse.training import TrainConfig

DEFAULT_CACHE = Path(".cache")
CHECKPOINT_DIRS = {"classifier": Path("checkpoints/classifier"), "oracle": Path("checkpoints/oracle")}

# The oracle differs from the audited classifier in width, activation, seed and augmentation,
# so that a counterfactual tuned against one is not automatically accepted by the other.
PRESETS: dict[str, tuple[ClassifierConfig, TrainConfig]] = {
    "classifier": (ClassifierConfig(), TrainConfig()),
    "oracle": (
        ClassifierConfig(widths=(32, 64, 128, 256), activation="silu", dropout=0.2),
        TrainConfig(epochs=16, seed=1, augmentation="flip-shift-color", max_shift=3),
    ),
}


def _progress_bar(description: str):
    bar = tqdm(desc=description, unit="img", mininterval=2)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh() if done == total else None

    return update


def load_images(data: Path, split: str, resolution: int, cache_dir: Path | None):
    """Load a split; original-CelebA photos are aligned to the CelebA-HQ framing first."""
    if detect_layout(data) != "celeba":
        return load_split(data, split, resolution, cache_dir, None, _progress_bar(f"loading {split}"))
    from recourse.faces import CelebAFramer

    framer = CelebAFramer()
    images = load_split(data, split, resolution, cache_dir, framer, _progress_bar(f"aligning {split}"))
    if framer.detected or framer.fallbacks:
        print(f"aligned {framer.detected} photos by face detection; {framer.fallbacks} without a detected face "
              f"took the Align&Cropped layout's fixed crop")
    return images


def command_train_classifier(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads) if args.threads else None
    model_config, train_config = PRESETS[args.preset]
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    train_config = replace(train_config, **overrides)
    out = Path(args.out or CHECKPOINT_DIRS[args.preset])
    state = Path(args.state or DEFAULT_CACHE / f"train-{args.preset}.pt")
    cache = None if args.no_cache else Path(args.cache_dir)
    train = load_images(Path(args.data), "train", model_config.resolution, cache)
    val = load_images(Path(args.data), "val", model_config.resolution, cache)
    from recourse.training import train_classifier

    command = "python -m recourse " + " ".join(shlex.quote(a) for a in args.argv)
    result = train_classifier(train, val, out, model_config, train_config, state, metadata={
        "role": args.preset, "training_command": command, "recourse_version": __version__,
        "data_split": {"train": "CelebA-HQ ids 0-23999", "val": "24000-26999", "test": "27000-29999"},
        "threads": torch.get_num_threads(),
    })
    test = load_images(Path(args.data), "test", model_config.resolution, cache)
    from recourse.evaluation import evaluate_accuracy

    test_result = evaluate_accuracy(load_classifier(out), test.images, test.labels)
    update_config(out, training_seconds=round(result.seconds, 1), history=result.history,
                  test_accuracy=test_result.mean, test_accuracy_per_attribute=test_result.per_attribute)
    print(f"best epoch {result.best_epoch}: val {result.best_val_accuracy:.2f}%, "
          f"test {test_result.mean:.2f}% (majority {test_result.baseline_mean:.2f}%), "
          f"{result.seconds / 60:.1f} min of training; saved to {out}")
    return 0


def command_evaluate(args: argparse.Namespace) -> int:
    checkpoint = Path(args.checkpoint or CHECKPOINT_DIRS[args.model])
    model = load_classifier(checkpoint)
    data = Path(args.data)
    images = load_images(data, args.split, model.config.resolution, None if args.no_cache else Path(args.cache_dir))
    from recourse.evaluation import evaluate_accuracy

    started = time.time()
    result = evaluate_accuracy(model, images.images, images.labels)
    report = {
        "model": args.model, "checkpoint": str(checkpoint), "data": str(data), "layout": detect_layout(data),
        "split": args.split, **result.to_dict(), "seconds": round(time.time() - started, 1),
        "recorded_test_accuracy": read_config(checkpoint).get("test_accuracy"),
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    width = max(len(a) for a in result.per_attribute)
    print(f"{'attribute':{width}s}  accuracy  majority")
    for name, value in result.per_attribute.items():
        print(f"{name:{width}s}  {value:8.2f}  {result.baseline_per_attribute[name]:8.2f}")
    print(f"{'MEAN':{width}s}  {result.mean:8.2f}  {result.baseline_mean:8.2f}   ({result.n_images} images, "
          f"{args.model}, split {args.split})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m recourse", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

    def add_data_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--data", required=True, help="a CelebA-HQ or original CelebA folder")
        sub.add_argument("--cache-dir", default=str(DEFAULT_CACHE), help="where decoded images are cached")
        sub.add_argument("--no-cache", action="store_true", help="decode images without reading or writing a cache")

    train = commands.add_parser("train-classifier", help="train the classifier or the oracle")
    add_data_options(train)
    train.add_argument("--preset", choices=sorted(PRESETS), default="classifier")
    train.add_argument("--out", help="checkpoint folder (default checkpoints/<preset>)")
    train.add_argument("--epochs", type=int)
    train.add_argument("--seed", type=int)
    train.add_argument("--state", help="resumable training state file (default .cache/train-<preset>.pt)")
    train.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    train.set_defaults(run=command_train_classifier)

    evaluate = commands.add_parser("evaluate", help="per-attribute accuracy of a classifier")
    add_data_options(evaluate)
    evaluate.add_argument("--split", choices=SPLITS, default="test")
    evaluate.add_argument("--model", choices=sorted(CHECKPOINT_DIRS), default="classifier")
    evaluate.add_argument("--checkpoint", help="checkpoint folder (default checkpoints/<model>)")
    evaluate.add_argument("--json", help="write the report here")
    evaluate.set_defaults(run=command_evaluate)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args)
    except (DatasetError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
