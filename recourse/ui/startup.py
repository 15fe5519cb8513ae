"""What the app does before it serves: every model loaded (or a clear message and exit code 2),
what a killed earlier run left removed, a warm-up audit, and the middleware that caps what one
caller may send (recourse.request_limits)."""

from __future__ import annotations

import sys
import time

import gradio as gr
import numpy as np
from PIL import Image

from recourse.audit import audit_image
from recourse.audit_instruments import COMMITTED, model_resolution, resolve_identity, resolve_strong_judge
from recourse.checkpoints import CheckpointError
from recourse.instance_folder import prune_abandoned
from recourse.models import VARIANTS, load_generator, load_judge, load_teacher, variant_status
from recourse.request_limits import RequestLimits, client_of
from recourse.ui import limits
from recourse.ui.audit import framed_tensor, gallery_faces
from recourse.ui.errors import without_paths
from recourse.ui.storage import INSTANCE, TEMP_BASE


def load_models(log=print) -> None:
    """Load every model before serving. Loading a variant traces it with torch.fx, which
    patches ``nn.Module.__call__`` for the whole process while it runs: an audit running in
    another thread at that moment would fail, so nothing is loaded once requests are served.
    A variant that does not load is reported, not fatal."""
    started = time.perf_counter()
    log("loading the full-precision classifier, the robust judge and the generator…")
    load_teacher()
    try:
        load_judge()
    except (CheckpointError, FileNotFoundError) as error:  # audits run without it; their cards say "no judge"
        log(f"robust judge: not loaded ({without_paths(error)})")
    load_generator()  # its files checked against their manifest; a failure is a CheckpointError
    # the stronger judge and dlib's face descriptor (seconds to load) before the first request;
    # where either is absent, audits run and their cards say why ("not trained")
    resolution = model_resolution(load_teacher())
    strong = resolve_strong_judge(COMMITTED, resolution)[1]
    log(f"stronger judge: {'loaded' if strong is None else strong}")
    identity = resolve_identity(COMMITTED, resolution)[1]
    log(f"identity (dlib face descriptor): {'loaded' if identity is None else identity}")
    for variant in VARIANTS:
        status = variant_status(variant)
        log(f"variant {variant}: {'loaded' if status is None else status}")
    log(f"models loaded in {time.perf_counter() - started:.1f} s")


def warm_up(log=print) -> None:
    """One small audit, so that the first user's audit does not pay for first-call costs."""
    faces_ = gallery_faces()
    available = [v for v in VARIANTS if variant_status(v) is None]
    if faces_ and available:
        started = time.perf_counter()
        audit_image(framed_tensor(np.array(Image.open(faces_[0][0]).convert("RGB"))), available[0], "Smiling")
        log(f"warm-up done in {time.perf_counter() - started:.1f} s")


def start_up(log=print) -> None:
    """Load the models, or stop with a clear message and exit code 2 (not a traceback) when a
    checkpoint is missing or broken; and remove what a killed earlier run left behind."""
    removed = prune_abandoned(TEMP_BASE, limits.CACHE_LIFETIME_S, time.time(), own=INSTANCE.path)
    log(f"removed {removed} folders of app instances that have ended")
    try:
        load_models(log)
    except (CheckpointError, FileNotFoundError) as error:
        print(f"The app cannot start: {without_paths(error)}", file=sys.stderr, flush=True)
        sys.exit(2)


def queued_by(demo: gr.Blocks, client: str) -> int:
    """How many requests ``client`` has waiting or running in ``demo``'s queue (Gradio 6.31
    keeps them in ``event_ids_to_events`` from joining until they end)."""
    events = list(getattr(demo._queue, "event_ids_to_events", {}).values())
    return sum(1 for event in events if client_of(event.request.scope, limits.TRUST_FORWARDED) == client)


def request_limits(demo: gr.Blocks) -> list:
    """The middleware that caps what one caller may send (see recourse.request_limits)."""
    from gradio.route_utils import FnIndexInferError
    from starlette.middleware import Middleware

    return [Middleware(RequestLimits, max_body=limits.MAX_BODY_BYTES, upload_quota=limits.UPLOAD_QUOTA,
                       window_s=limits.UPLOAD_WINDOW_S, max_queued=limits.MAX_QUEUED,
                       queued=lambda client: queued_by(demo, client), trust_forwarded=limits.TRUST_FORWARDED,
                       public=limits.PUBLIC, malformed=(FnIndexInferError,))]
