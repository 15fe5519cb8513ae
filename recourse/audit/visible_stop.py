"""The rule that picks the visible stop, where the audit's picture is shown (``docs/metrics.md``,
"The recourse path"), fixed before its run: along the full-precision classifier's edits of
validation faces, the independent judges' mean shift is read at each candidate stop, and the
visible stop is the smallest candidate whose mean shift reaches :data:`PLATEAU` of the largest.

``python -m scripts.measurements.visible_stop`` makes the readings; :mod:`recourse.audit.stops`
applies this rule to the committed run, so the product's stop is the rule's, not a copied number.
"""

from __future__ import annotations

import math

PLATEAU = 0.9  # a stop is on the plateau once its mean shift reaches this share of the largest


def plateau_stop(stops: list[float], shifts: list[float | None], plateau: float = PLATEAU) -> float | None:
    """The smallest stop whose mean shift reaches ``plateau`` of the largest (None without any
    positive shift). ``shifts[i]`` is read at ``stops[i]``; a missing or non-finite one is passed over."""
    readable = [(stop, shift) for stop, shift in zip(stops, shifts) if shift is not None and math.isfinite(shift)]
    if not readable or max(shift for _, shift in readable) <= 0:
        return None
    largest = max(shift for _, shift in readable)
    return min(stop for stop, shift in readable if shift >= plateau * largest)


def chosen_stop(record: dict) -> float | None:
    """The rule applied to a visible-stop run's record: its ``summary`` (a row per candidate
    stop with its mean ``shift``) at the record's own ``plateau``."""
    summary = record.get("summary") or []
    return plateau_stop([row["stop"] for row in summary], [row["shift"] for row in summary],
                        record.get("plateau", PLATEAU))
