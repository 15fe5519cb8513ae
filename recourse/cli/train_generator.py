"""``recourse train-generator``: train the latent diffusion face generator."""

from __future__ import annotations

import argparse
from pathlib import Path

from recourse import __version__
import recourse.cli.common as common
from recourse.cli.common import _command_line, add_data_options
from recourse.locations import DEFAULT_CACHE, generator_dir


def register(commands) -> None:
    train_generator = commands.add_parser("train-generator", help="train the latent diffusion face generator")
    add_data_options(train_generator)
    train_generator.add_argument("--out", default=str(generator_dir()))
    train_generator.add_argument("--steps", type=int, help="denoiser training steps")
    train_generator.add_argument("--seed", type=int)
    train_generator.add_argument("--resolution", type=int, default=64)
    train_generator.add_argument("--state-dir", default=str(DEFAULT_CACHE / "generator-state"))
    train_generator.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from recourse.generation.training import GeneratorTrainConfig, train_generator

    config = GeneratorTrainConfig(**{k: v for k, v in (("steps", args.steps), ("seed", args.seed)) if v is not None})
    train = common.load_images(args, "train", args.resolution)
    val = common.load_images(args, "val", args.resolution)
    result = train_generator(train.images, val.images, args.out, config, Path(args.state_dir), metadata={
        "training_command": _command_line(args), "recourse_version": __version__,
        "data_split": "CelebA-HQ train ids 0-23999"})
    print(f"denoiser loss {result.final_loss:.4f}; basis reconstruction error on val {result.reconstruction_error:.4f}; "
          f"{result.seconds / 60:.1f} min of denoiser training; saved to {args.out}")
    return 0
