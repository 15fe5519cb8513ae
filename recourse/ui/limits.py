"""Public mode and every limit of the app, in one place.

Public mode (on a Space, detected from ``SPACE_ID``, or with ``RECOURSE_PUBLIC=1``) is fixed
when this module is imported. The failure scan then never takes a server path; it ranks
uploaded photos, the gallery, or the folders an operator lists in ``RECOURSE_SCAN_ROOTS`` (shown
by name only). Every request goes through the queue (the direct ``/run`` routes are closed),
each caller may have a few requests queued and upload so much per window, and audits and scans
keep to a cost budget.

The event functions read these names from this module when they run (``limits.MAX_STEPS``),
never a copy: a test changes a limit with ``monkeypatch.setattr(limits, name, value)``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

PUBLIC = bool(os.environ.get("SPACE_ID")) or os.environ.get("RECOURSE_PUBLIC") == "1"
SCAN_ROOTS = {Path(p).name: Path(p) for p in os.environ.get("RECOURSE_SCAN_ROOTS", "").split(os.pathsep) if p}
MAX_SCAN_IMAGES = 64 if PUBLIC else 256
# The cost budget. In public mode each method's steps, the margin and the cone are held
# below what the library allows (walk steps 400, cone 0 and margin 10 made a 62 s audit), a
# scan may spend at most so many of the method's steps in all (faces × steps), and audits and
# scans stop at a wall-time limit, checked after each stage of an audit and each face of a scan.
MAX_STEPS = 120 if PUBLIC else 400  # the walks' editing steps; 120: the default
# The denoised method's optimiser steps: each is a pass through the face denoiser and back,
# about 40 walk steps' worth (24, the default, take about 2 s a counterfactual on 2 cores).
MAX_EDIT_STEPS = 48 if PUBLIC else 200
SIGMAS = (0.02, 1.0)  # the noise levels the committed face denoiser was trained on
# The picture's stop: a point of each model's edit. The denoised edit costs its steps whatever
# the stop; a walk's is held by MAX_STEPS and AUDIT_SECONDS.
MAX_MARGIN = 14.0
MIN_CONE = 10.0 if PUBLIC else 0.0
MAX_SCAN_WORK = 16 * 120 if PUBLIC else MAX_SCAN_IMAGES * 400  # walk steps
MAX_SCAN_EDIT_WORK = 16 * 24 if PUBLIC else MAX_SCAN_IMAGES * 200  # denoiser steps
AUDIT_SECONDS = 90.0 if PUBLIC else math.inf
SCAN_SECONDS = 300.0 if PUBLIC else math.inf
# What one caller may send (recourse.ui.serve.request_limits): a body (uploads excepted) of at most
# 1 MB (no input of this app needs more: images come as uploads), uploads of at most
# UPLOAD_QUOTA bytes per UPLOAD_WINDOW_S, and MAX_QUEUED requests waiting or running.
MAX_BODY_BYTES = 2**20
UPLOAD_QUOTA = (200 if PUBLIC else 10_000) * 2**20
UPLOAD_WINDOW_S = 600.0
PUBLIC_MAX_QUEUED = 4
MAX_QUEUED = PUBLIC_MAX_QUEUED if PUBLIC else 1000
PUBLIC_QUEUE_SIZE = 64
QUEUE_SIZE = PUBLIC_QUEUE_SIZE if PUBLIC else 256
# Under a crowd (this many requests of all callers waiting or running) each caller keeps one
# place: one caller under many addresses, or many real callers, leave room for a newcomer.
CROWD = QUEUE_SIZE // 2


def _trusted_proxies() -> int:
    """Proxies in front of the app that append the address they were reached from to
    X-Forwarded-For (``recourse.ui.serve.request_limits``): ``RECOURSE_TRUSTED_PROXIES``, else one on a
    Space (its own proxy; docs/guide.md says why one) and none elsewhere."""
    text = os.environ.get("RECOURSE_TRUSTED_PROXIES", "1" if os.environ.get("SPACE_ID") else "0")
    if not text.strip().isdigit():
        raise SystemExit(f"RECOURSE_TRUSTED_PROXIES must be a whole number of proxies (0 or more), got {text[:40]!r}")
    return int(text)


TRUSTED_PROXIES = _trusted_proxies()
# Two heavy requests at a time on two cores; the rest wait in the queue (never dropped).
HEAVY_CONCURRENCY = int(os.environ.get("RECOURSE_APP_CONCURRENCY", "2"))
# Sessions whose outputs Gradio keeps in memory (its default, 10,000, lets every API call's
# session hold its audit's pictures and tables until ten thousand more have come).
SESSIONS_KEPT = 200 if PUBLIC else 10_000
CACHE_LIFETIME_S = 900  # uploads and outputs in Gradio's cache are deleted this old (every 600 s)
EXPORT_LIFETIME_S = 900 if PUBLIC else 3600  # a public app writes about 1.3 MB an audit: bounded disk
