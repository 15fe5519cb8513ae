"""The ``recourse`` command (or ``python -m recourse``): :func:`main` parses the arguments
(:mod:`recourse.cli.commands`) and runs the one command they name, an expected error said in
one line."""

# One module per command (recourse/cli/<command>.py): its ``register(commands)`` adds its
# subparser and options and sets ``run`` (and, where it reads checkpoints/ whatever its
# options, ``uses_committed_models``); commands.py lists them and builds the parser; shared
# options and helpers are in common.py. Only light modules are imported here and there: torch,
# diffusers and OpenCV are imported inside the commands that use them, so that --help and
# argument errors answer at once.

from __future__ import annotations

import sys

from recourse.cli.commands import build_parser
from recourse.cli.common import expected_errors, on_off  # noqa: F401  on_off: for scripts
from recourse.cli.reproduce import (  # noqa: F401  re-exported: the scripts and docs name them here
    EARLIER_GENERATION, _uses_recourse_points, generation_arguments, reproduction,
)
from recourse.locations import checkpoints_dir, home_message, require_checkpoints
from recourse.validation import check_outputs


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
