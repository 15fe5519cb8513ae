"""Command line: ``recourse <command> ...`` (or ``python -m recourse``). Argument parsing only:
each command turns its arguments into the library's config and calls the library."""

# One module per command (recourse/cli/<command>.py): its ``register(commands)`` adds its
# subparser and options and sets ``run`` (and, where it reads checkpoints/ whatever its
# options, ``uses_committed_models``); shared options and helpers are in common.py. Only
# light modules are imported here and there: torch, diffusers and OpenCV are imported inside
# the commands that use them, so that --help and argument errors answer at once.

from __future__ import annotations

import argparse
import sys

from recourse import __version__
from recourse.cli import (
    audit, benchmark, claims, counterfactual, evaluate, evaluate_counterfactuals, margin_reached, method_speed, power,
    quantize, recompute_claims, scan, stability, train_classifier, train_denoiser, train_generator,
)
from recourse.cli.common import expected_errors, on_off  # noqa: F401  on_off: for scripts
from recourse.cli.reproduce import (  # noqa: F401  re-exported: the scripts and docs name them here
    EARLIER_GENERATION, _uses_recourse_points, generation_arguments, reproduction,
)
from recourse.paths import checkpoints_dir, home_message, require_checkpoints
from recourse.validation import check_outputs

# The commands, in the order --help lists them: a new command is a module and a line here.
COMMANDS = (
    train_classifier,
    evaluate,
    quantize,
    benchmark,
    train_generator,
    train_denoiser,
    evaluate_counterfactuals,
    counterfactual,
    audit,
    scan,
    method_speed,
    stability,
    power,
    margin_reached,
    claims,
    recompute_claims,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recourse", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        check_outputs(args)
        # a command that reads checkpoints/ whatever its options: a missing folder is said in
        # one line naming RECOURSE_HOME before anything else is loaded
        uses_committed_models = getattr(args, "uses_committed_models", None)
        if uses_committed_models is not None and uses_committed_models(args):
            require_checkpoints()
        return args.run(args)
    except Exception as error:  # noqa: BLE001  the expected kinds are told apart below
        from recourse.checkpoints import CheckpointError

        if not isinstance(error, expected_errors()):
            raise
        if isinstance(error, CheckpointError) and not checkpoints_dir().is_dir():
            error = home_message()  # a default model path, read where there are no checkpoints
        print(f"error: {error}", file=sys.stderr)
        return 2
