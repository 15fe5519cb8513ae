"""Progress callbacks: the library reports ``(stage, done, total)``; the CLI draws bars."""

from __future__ import annotations

from typing import Callable

from tqdm import tqdm

Progress = Callable[[str, int, int], None]  # (stage, done, total)
# Called with a stage's name after each stage of long work (decoding, aligning, each
# counterfactual): a caller with a time limit raises there, so a limit is kept to within
# one stage's time.
StageCheck = Callable[[str], None]


def no_check(stage: str) -> None:
    """A stage check that lets every stage pass."""


def silent(stage: str, done: int, total: int) -> None:
    """A progress callback that reports nothing."""


def progress_bar(description: str, unit: str = "img") -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback whose bar appears only once work starts."""
    bars: list[tqdm] = []

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(desc=description, total=total, unit=unit, mininterval=2))
        bars[0].update(done - bars[0].n)
        if done == total:
            bars[0].close()

    return update


def stage_bars(unit: str = "it") -> Progress:
    """A ``progress(stage, done, total)`` callback: one bar per stage."""
    bars: dict[str, Callable[[int, int], None]] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            bars[stage] = progress_bar(stage, unit)
        bars[stage](done, total)

    return update
