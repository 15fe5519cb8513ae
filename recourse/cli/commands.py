"""Command line: ``recourse <command> ...`` (or ``python -m recourse``). Argument parsing only:
each command turns its arguments into the library's config and calls the library."""

# This docstring is the parser's description (``recourse --help``). The parser is built here,
# apart from ``main`` in __init__.py, so that rebuilding a recorded command
# (reproduce.reproduction) parses it without importing the package that imports reproduce.

from __future__ import annotations

import argparse

from recourse import __version__
from recourse.cli import (
    audit, benchmark, claims, compare_runs, counterfactual, evaluate, evaluate_counterfactuals, fit_edit_spaces, margin_reached,
    method_speed, power, quantize, recompute_claims, run_segments, scan, stability, train_classifier, train_denoiser,
    train_generator,
)

# The commands, in the order --help lists them: a new command is a module and a line here.
COMMANDS = (
    train_classifier,
    evaluate,
    quantize,
    benchmark,
    train_generator,
    train_denoiser,
    fit_edit_spaces,
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
    run_segments,
    compare_runs,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recourse", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser
