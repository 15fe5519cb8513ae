"""``recourse train-denoiser``: train the face denoiser D(x, sigma), resumable."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from recourse import __version__
import recourse.cli.common as common
from recourse.cli.common import _command_line, add_data_options, finite_float
from recourse.locations import DEFAULT_CACHE, generator_dir

SIGMA_SAMPLINGS = ("log-uniform", "lognormal")  # recourse.generation.denoiser_training's, without importing torch


def register(commands) -> None:
    denoiser = commands.add_parser("train-denoiser", help="train the face denoiser D(x, sigma), resumable")
    add_data_options(denoiser)
    denoiser.add_argument("--state-dir", default=str(DEFAULT_CACHE / "denoiser-state"),
                          help="resumable state, learning curve and the latest EMA weights")
    denoiser.add_argument("--init-from", help="start from these saved weights when the state folder is empty")
    denoiser.add_argument("--steps", type=int, help="total optimiser steps (default 200000)")
    denoiser.add_argument("--batch-size", type=int)
    denoiser.add_argument("--learning-rate", type=finite_float, help="the peak learning rate (default 3e-4)")
    denoiser.add_argument("--seed", type=int)
    denoiser.add_argument("--fold", type=int, help="pixel-unshuffle factor before the UNet (default 4; 2 draws at "
                                                   "twice the resolution, at about twice the cost)")
    denoiser.add_argument("--channels", type=int, nargs="+", help="the UNet's channels per level (default 128 192 256)")
    denoiser.add_argument("--attention", type=int, nargs="+", choices=(0, 1),
                          help="1 where a level has attention, one per level (default 0 1 0)")
    denoiser.add_argument("--sigma-min", type=finite_float, help="the smallest training noise level (default 0.02)")
    denoiser.add_argument("--sigma-max", type=finite_float, help="the largest training noise level (default 1.0)")
    denoiser.add_argument("--sigma-sampling", choices=SIGMA_SAMPLINGS,
                          help="how training noise levels are drawn (default log-uniform; lognormal is EDM's)")
    denoiser.add_argument("--max-minutes", type=finite_float, help="stop (saving) once this much training is done in all")
    denoiser.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    denoiser.add_argument("--device", default="cpu", help="cpu (default) or cuda, where a GPU is at hand")
    denoiser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from recourse.generation.denoiser_training import DenoiserTrainConfig, pinned_config, train_denoiser
    from recourse.generation.generators import FACE_DENOISER_FOLDER

    if args.threads:
        torch.set_num_threads(args.threads)
    given = {k: v for k, v in (("steps", args.steps), ("seed", args.seed), ("batch_size", args.batch_size),
                               ("learning_rate", args.learning_rate),
                               ("fold", args.fold), ("block_out_channels", args.channels and tuple(args.channels)),
                               ("attention_levels", args.attention and tuple(bool(a) for a in args.attention)),
                               ("sigma_min", args.sigma_min), ("sigma_max", args.sigma_max),
                               ("sigma_sampling", args.sigma_sampling)) if v is not None}
    try:
        config = pinned_config(args.state_dir, DenoiserTrainConfig(**given), given)
    except (TypeError, ValueError) as error:
        raise SystemExit(f"error: {error}")
    train = common.load_images(args, "train", 64)
    val = common.load_images(args, "val", 64)
    stop_requested = []  # SIGTERM (a session's end, `kill`): save this step's state and leave
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(True))
    ema = train_denoiser(train.images, val.images[:256], Path(args.state_dir), config, init_from=args.init_from,
                         metadata={"training_command": _command_line(args), "recourse_version": __version__,
                                   "data_split": "CelebA-HQ train ids 0-23999; curve on val ids 24000-24255",
                                   "device": common.device_name(args.device)},
                         max_minutes=args.max_minutes, should_stop=lambda: bool(stop_requested),
                         device=args.device)
    print(f"EMA weights in {ema}; copy them to {generator_dir() / FACE_DENOISER_FOLDER} to commit them")
    return 0
