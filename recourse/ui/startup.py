"""What the app does at start-up: the quick checks before it serves (the classifier and the
generator's files, or a clear message and exit code 2; what a killed earlier run left removed),
every other model loaded in the background once the server is up (``LOADING``), a warm-up audit
after that, and the middleware that caps what one caller may send (recourse.ui.serve.request_limits).

The server answers as soon as the layout is built; an event that runs a model waits for the
loading (``after_loading``), telling its caller what is being loaded and for how long, instead
of failing. It waits for every model, not only the one it runs: loading a variant traces it with
torch.fx, which patches ``nn.Module.__call__`` for the whole process while it runs, so no model
may run in another thread until every variant is loaded.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

import gradio as gr
import numpy as np
from PIL import Image

from recourse.audit.instruments import COMMITTED, model_resolution, resolve_identity, resolve_strong_judge
from recourse.audit.paired import share_cores_between_paired_edits
from recourse.audit.pipeline import audit_image
from recourse.audit.result import AuditSettings
from recourse.checkpoints import CheckpointError, verify_folder
from recourse.locations import generator_dir
from recourse.models import VARIANTS, load_generator, load_judge, load_teacher, variant_status
from recourse.ui import limits
from recourse.ui.audit import framed_tensor, gallery_faces
from recourse.ui.errors import without_paths
from recourse.ui.serve.instance_folder import prune_abandoned
from recourse.ui.serve.request_limits import RequestLimits
from recourse.ui.storage import INSTANCE, TEMP_BASE

FATAL = (CheckpointError, FileNotFoundError)  # a broken or missing classifier or generator: exit code 2
# What the background loading makes ready, in its order: the robust judge and the generator,
# then the stronger judge and dlib's face descriptor, then every variant.
RESOURCES = ("generator", "judges", "variants")
MODELS = RESOURCES  # what an audit or a scan waits for: every one (see the module's docstring)


def load_models(log=print, loaded: Callable[[str], None] = lambda resource: None) -> None:
    """Load every model; ``loaded(resource)`` after each of ``RESOURCES`` is ready and
    ``loaded("variant")`` after each variant. A variant that does not load is reported, not
    fatal; a broken classifier or generator raises (``FATAL``). Run before any model runs in
    another thread (see the module's docstring): by ``Loading`` in the app."""
    started = time.perf_counter()
    log("loading the full-precision classifier, the robust judge and the generator…")
    load_teacher()
    try:
        load_judge()
    except (CheckpointError, FileNotFoundError) as error:  # audits run without it; their cards say "no judge"
        log(f"robust judge: not loaded ({without_paths(error)})")
    load_generator()  # its files checked against their manifest; a failure is a CheckpointError
    loaded("generator")
    # the stronger judge and dlib's face descriptor (seconds to load) before the first audit;
    # where either is absent, audits run and their cards say why ("not trained")
    resolution = model_resolution(load_teacher())
    strong = resolve_strong_judge(COMMITTED, resolution)[1]
    log(f"stronger judge: {'loaded' if strong is None else strong}")
    identity = resolve_identity(COMMITTED, resolution)[1]
    log(f"identity (dlib face descriptor): {'loaded' if identity is None else identity}")
    loaded("judges")
    for variant in VARIANTS:
        status = variant_status(variant)
        log(f"variant {variant}: {'loaded' if status is None else status}")
        loaded("variant")
    loaded("variants")
    log(f"models loaded in {time.perf_counter() - started:.1f} s")


WARM_UP = "RECOURSE_WARM_UP"  # "0": no warm-up audit (a test server, or a Space short of CPU time)


def warm_up(log=print) -> None:
    """One small audit, so that the first user's audit does not pay for first-call costs."""
    if os.environ.get(WARM_UP) == "0":
        log(f"warm-up skipped ({WARM_UP}=0)")
        return
    faces_ = gallery_faces()
    available = [v for v in VARIANTS if variant_status(v) is None]
    if faces_ and available:
        started = time.perf_counter()
        face = framed_tensor(np.array(Image.open(faces_[0][0]).convert("RGB")))
        # the smallest audit (margin 0, no stops) runs the same code as a user's, at the least cost
        audit_image(face, variant=available[0], attribute="Smiling", settings=AuditSettings())
        log(f"warm-up done in {time.perf_counter() - started:.1f} s")


def check_models() -> None:
    """What must hold before the app serves, quickly (well under a second): the full-precision
    classifier loads (its files checked against their manifest) and the generator's files match
    theirs. A broken one raises (``FATAL``); one that fails later, as it loads in the
    background, stops the app the same way (``Loading``)."""
    load_teacher()  # cached: the background loading uses this one
    directory = generator_dir()
    if not directory.is_dir():
        load_generator()  # says it is missing, and how to make one
    verify_folder(directory)


def cannot_start(error: BaseException) -> str:
    """The one line a broken classifier or generator stops the app with (no path, no traceback)."""
    return f"The app cannot start: {without_paths(error)}"


def start_up(log=print) -> None:
    """What the app checks before it serves: stop with a clear message and exit code 2 (not a
    traceback) when the classifier or the generator is missing or broken; and remove what a
    killed earlier run left behind. Every other model loads later, in the background (``LOADING``)."""
    log(f"torch threads: {share_cores_between_paired_edits()} (an audit's two models edit at once)")
    removed = prune_abandoned(TEMP_BASE, limits.CACHE_LIFETIME_S, time.time(), own=INSTANCE.path)
    log(f"removed {removed} folders of app instances that have ended")
    try:
        check_models()
    except FATAL as error:
        print(cannot_start(error), file=sys.stderr, flush=True)
        sys.exit(2)


class Loading:
    """The models loaded in a background thread (``start``), one event per resource of
    ``RESOURCES``, each set once that resource is ready (or the loading has failed).

    Until ``start`` is called nothing is pending: an app imported without being launched (tests,
    scripts) loads each model when an event first needs it, as before."""

    def __init__(self, load: Callable[..., None] = load_models, warm: Callable[..., None] = warm_up,
                 variants: int = len(VARIANTS)):
        self._load, self._warm, self._variants = load, warm, variants
        self._events = {resource: threading.Event() for resource in RESOURCES}
        for event in self._events.values():
            event.set()  # nothing pending until started
        self.started_at: float | None = None  # when the loading began (the server up)
        self.variants_loaded = 0
        self.error: str | None = None  # the line the app stops with, where the loading failed
        self.exit_code = 0
        self.warmed = threading.Event()
        self.thread: threading.Thread | None = None

    # -- the loading thread ------------------------------------------------------------------

    def start(self, log=print, when: Callable[[], bool] = lambda: True) -> threading.Thread:
        """Load every model, then warm up, in a daemon thread that begins once ``when()`` is true
        (the server is up: its start is not slowed). Every resource is pending from this call on."""
        for event in self._events.values():
            event.clear()
        self.thread = threading.Thread(target=self._run, args=(log, when), name="recourse-loading", daemon=True)
        self.thread.start()
        return self.thread

    def _loaded(self, resource: str) -> None:
        if resource == "variant":
            self.variants_loaded += 1
        else:
            self._events[resource].set()

    def _run(self, log, when: Callable[[], bool]) -> None:
        while not when():
            time.sleep(0.05)
        self.started_at = time.perf_counter()
        try:
            self._load(log, self._loaded)
        except FATAL as error:
            self.error, self.exit_code = cannot_start(error), 2
        except Exception as error:  # noqa: BLE001 — a failure nobody foresaw: its traceback to the log
            logging.getLogger(__name__).exception("loading the models failed")
            self.error, self.exit_code = f"The app cannot start: loading the models failed ({type(error).__name__})", 1
        if self.error is not None:
            for event in self._events.values():
                event.set()  # whoever waits is answered (with the error); serve() stops the app
            return
        try:
            self._warm(log)
        except Exception:  # noqa: BLE001 — the warm-up only saves the first user time
            logging.getLogger(__name__).exception("warm-up failed")
        finally:
            self.warmed.set()
            log(READY_LINE)

    # -- what the events see -----------------------------------------------------------------

    def ready(self, needs=MODELS) -> bool:
        return all(self._events[resource].is_set() for resource in needs) and self.error is None

    def note(self) -> str:
        """What the loading is at, for a caller who waits: "Loading the models (first start), 12 s
        so far: 20 of 35 variants loaded…"."""
        seconds = 0 if self.started_at is None else time.perf_counter() - self.started_at
        if not self._events["generator"].is_set():
            doing = "the generator and the robust judge"
        elif not self._events["judges"].is_set():
            doing = "the stronger judge and the face descriptor"
        else:
            doing = f"{self.variants_loaded} of {self._variants} variants loaded"
        return f"Loading the models (first start), {seconds:.0f} s so far: {doing}…"

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise gr.Error(self.error, print_exception=False)  # logged once, when the loading failed

    def waiting(self, needs=MODELS, every: float = 1.0) -> Iterator[str]:
        """While ``needs`` are loading: ``note()`` about every ``every`` seconds; then returns, or
        raises gr.Error where the loading failed."""
        while True:
            pending = [self._events[resource] for resource in needs if not self._events[resource].is_set()]
            if not pending:
                break
            yield self.note()
            pending[0].wait(every)
        self._raise_if_failed()

    def wait(self, needs=MODELS) -> None:
        """Block until ``needs`` are loaded; gr.Error where the loading failed."""
        for resource in needs:
            self._events[resource].wait()
        self._raise_if_failed()

    # -- the main thread -----------------------------------------------------------------------

    def serve(self, demo: gr.Blocks) -> None:
        """Keep the launched app serving (``demo.launch(prevent_thread_lock=True)``) until it is
        interrupted, or until the loading fails: then the server is closed and the app stops with
        the one line and its exit code (2 for a broken classifier or generator), as when the
        check before serving fails."""
        try:
            while demo.is_running and self.error is None:
                time.sleep(0.1)
        except KeyboardInterrupt:  # as Gradio's own block_thread
            print("Keyboard interruption in main thread... closing server.", flush=True)
            demo.close(verbose=False)
            return
        if self.error is not None:
            demo.close(verbose=False)
            print(self.error, file=sys.stderr, flush=True)
            sys.exit(self.exit_code)


LOADING = Loading()
READY_LINE = "ready: every model loaded and warmed up"  # the log line test servers wait for


def after_loading(fn: Callable, status: gr.components.Component | None = None, needs=MODELS,
                  loading: Loading | None = None) -> Callable:
    """``fn`` as an event that first waits for ``needs`` to load. With a ``status`` output the
    event is a generator that shows the caller ``Loading.note()`` there (and on its progress bar,
    where ``fn`` takes one) about every second while it waits, then yields what ``fn`` yields
    (or returns); without one, it blocks until then. Its signature is ``fn``'s (Gradio reads it)."""
    loading = LOADING if loading is None else loading
    if status is None:
        @functools.wraps(fn)
        def blocking(*args, **kwargs):
            loading.wait(needs)
            return fn(*args, **kwargs)
        return blocking
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def event(*args, **kwargs):
        try:
            progress = signature.bind_partial(*args, **kwargs).arguments.get("progress")
        except TypeError:
            progress = None
        for note in loading.waiting(needs):
            if isinstance(progress, gr.Progress):
                progress(None, desc=note)
            yield {status: note}
        result = fn(*args, **kwargs)
        if inspect.isgenerator(result):
            yield from result
        else:
            yield result

    return event


def queued_by(demo: gr.Blocks, client: str | None = None) -> int:
    """How many requests ``client`` (None: every caller) has waiting or running in ``demo``'s
    queue (Gradio 6.31 keeps them in ``event_ids_to_events`` from joining until they end). The
    caller is the request's ``client``, as the middleware wrote it (recourse.ui.serve.request_limits)."""
    events = list(getattr(demo._queue, "event_ids_to_events", {}).values())
    if client is None:
        return len(events)
    return sum(1 for event in events if (event.request.scope.get("client") or ("unknown",))[0] == client)


def distrust_forwarded_headers() -> None:
    """Keep uvicorn from rewriting the caller's address: by default it believes X-Forwarded-For
    from loopback peers (its ``forwarded_allow_ips``), so that a caller on the same machine could
    name itself anyone. The middleware reads the header instead, with the proxies the operator
    trusts (``limits.TRUSTED_PROXIES``). Call before ``launch`` (uvicorn reads it then)."""
    os.environ["FORWARDED_ALLOW_IPS"] = ""


def request_limits(demo: gr.Blocks) -> list:
    """The middleware that caps what one caller may send (see recourse.ui.serve.request_limits)."""
    from gradio.route_utils import FnIndexInferError
    from starlette.middleware import Middleware

    return [Middleware(RequestLimits, max_body=limits.MAX_BODY_BYTES, upload_quota=limits.UPLOAD_QUOTA,
                       window_s=limits.UPLOAD_WINDOW_S, max_queued=limits.MAX_QUEUED,
                       queued=lambda client: queued_by(demo, client), queued_total=lambda: queued_by(demo),
                       crowd=limits.CROWD if limits.PUBLIC else float("inf"), trusted_proxies=limits.TRUSTED_PROXIES,
                       public=limits.PUBLIC, malformed=(FnIndexInferError,))]
