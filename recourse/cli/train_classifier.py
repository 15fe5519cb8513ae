"""``recourse train-classifier``: train the classifier, the oracle, the robust judge or the robust guide."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from recourse import __version__
import recourse.cli.common as common
from recourse.cli.common import MODEL_DIRS, _command_line, add_data_options, finite_float
from recourse.locations import DEFAULT_CACHE, checkpoints_dir


def register(commands) -> None:
    train = commands.add_parser("train-classifier", help="train the classifier, the oracle, the robust judge or the robust guide")
    add_data_options(train)
    train.add_argument("--preset", choices=sorted(MODEL_DIRS), default="classifier")
    train.add_argument("--out", help="checkpoint folder (default checkpoints/<preset>)")
    train.add_argument("--epochs", type=int)
    train.add_argument("--seed", type=int)
    train.add_argument("--adversarial-radius", type=finite_float,
                       help="L2 radius of the adversarial training in [0, 1] pixel units (default: the preset's)")
    train.add_argument("--state", help="resumable training state file (default .cache/train-<preset>.pt)")
    train.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    train.add_argument("--device", default="cpu", help="cpu (default) or cuda, where a GPU is at hand")
    train.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from recourse.checkpoints import update_config
    from recourse.evaluation import evaluate_accuracy
    from recourse.training import PRESETS, train_classifier

    if args.threads:
        torch.set_num_threads(args.threads)
    model_config, train_config = PRESETS[args.preset]
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed),
                                   ("adversarial_radius", args.adversarial_radius)) if v is not None}
    train_config = replace(train_config, **overrides)
    out = Path(args.out) if args.out else checkpoints_dir() / args.preset
    state = Path(args.state or DEFAULT_CACHE / f"train-{args.preset}.pt")
    train = common.load_images(args, "train", model_config.resolution)
    val = common.load_images(args, "val", model_config.resolution)
    result = train_classifier(train, val, out, model_config, train_config, state, device=args.device, metadata={
        "role": args.preset, "training_command": _command_line(args), "recourse_version": __version__,
        "data_split": {"train": "CelebA-HQ ids 0-23999", "val": "24000-26999", "test": "27000-29999"},
        "threads": torch.get_num_threads(), "device": common.device_name(args.device),
    })
    test = common.load_images(args, "test", model_config.resolution)
    test_result = evaluate_accuracy(common.load_classifier(out), test.images, test.labels)
    update_config(out, training_seconds=round(result.seconds, 1), history=result.history,
                  test_accuracy=test_result.mean, test_accuracy_per_attribute=test_result.per_attribute)
    print(f"best epoch {result.best_epoch}: val {result.best_val_accuracy:.2f}%, "
          f"test {test_result.mean:.2f}% (majority {test_result.baseline_mean:.2f}%), "
          f"{result.seconds / 60:.1f} min of training; saved to {out}")
    return 0
