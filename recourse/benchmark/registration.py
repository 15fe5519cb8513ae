"""Does a run keep what its registration fixed before it?

A registration file (``assets/results/benchmark-primary.json``, written by
``scripts/measurements/register_primary.py`` before any run it governs) has a ``run`` block:
the split, the tasks, the attributes, the margin, the rows and the floors. A run that names
the file with ``--primary-family`` must be that run; :func:`deviations` lists every way it is
not, so that the command refuses it instead of reading registered claims off another run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from recourse.locations import generator_dir

_MATCHED = re.compile(r"^fp32-noise \((\d+) draws, matched to (.+)\)$")
_REFERENCE = re.compile(r"^fp32-ref \(.*at least (\d+)\)$")
_RERUN = re.compile(r"^fp32-rerun\b")


def registered_run(path: str | Path) -> dict:
    """The ``run`` block of a registration file, or ValueError saying what is missing."""
    try:
        run = json.loads(Path(path).read_text())["run"]
    except (OSError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path}: no registered run ({type(error).__name__}: {error})") from None
    if not isinstance(run, dict):
        raise ValueError(f"{path}: its run block is not an object")
    return run


def _names(listed: str) -> set[str]:
    """``"a, b and c"`` → ``{"a", "b", "c"}``."""
    return {name.strip() for name in re.split(r",|\band\b", listed) if name.strip()}


def floor_deviations(floors: list[str], draws: int, matched: tuple[str, ...], rerun: bool,
                     references: int) -> list[str]:
    """How the run's floors fall short of the registered ones (each phrase as register_primary writes it)."""
    found = []
    for floor in floors:
        if match := _MATCHED.match(floor):
            wanted, missing = int(match[1]), sorted(_names(match[2]) - set(matched))
            if draws != wanted:
                found.append(f"noise draws {draws}, registered {wanted}")
            if missing:
                found.append(f"no noise floor matched to {', '.join(missing)} (--matched-noise)")
        elif match := _REFERENCE.match(floor):
            if references < int(match[1]):
                found.append(f"{references} reference models, registered at least {match[1]} (--reference-models)")
        elif _RERUN.match(floor):
            if not rerun:
                found.append("no fp32-rerun floor (--rerun-floor)")
        else:
            found.append(f"the registered floor {floor!r} is not one this check can read")
    return found


def deviations(run: dict, *, split: str, first_task: int, tasks: int, attributes: tuple[str, ...],
               margin: float | None, variants: tuple[str, ...], generator: str, noise_draws: int,
               matched_noise: tuple[str, ...], rerun_floor: bool, reference_models: int) -> list[str]:
    """Every way a run differs from the registered ``run`` block; empty when it is that run."""
    found = []
    for name, actual in (("split", split), ("first_task", first_task), ("tasks", tasks)):
        if name in run and run[name] != actual:
            found.append(f"{name} {actual!r}, registered {run[name]!r}")
    if "attributes" in run and set(run["attributes"]) != set(attributes):
        found.append(f"attributes {', '.join(attributes)}, registered {', '.join(run['attributes'])}")
    if "margin" in run and (margin is None or float(margin) != float(run["margin"])):
        found.append(f"margin {margin}, registered {run['margin']}")
    missing = [row for row in run.get("rows", []) if row not in variants]
    if missing:
        found.append(f"registered rows not run: {', '.join(missing)}")
    if "generator" in run and Path(generator).resolve() != generator_dir().resolve():
        found.append(f"generator {generator}, registered {run['generator']!r} (the committed default)")
    return found + floor_deviations(list(run.get("floors", [])), noise_draws, matched_noise, rerun_floor,
                                    reference_models)
