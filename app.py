"""The recourse audit app: ``python app.py`` (offline, CPU), also a Hugging Face Space.

Layout and event wiring only. Each tab's contents and event functions are in ``recourse.ui``
(audit, failures, benchmark, your_models); public mode and every limit in ``recourse.ui.limits``.
The event functions only convert UI values, call the library and convert its results back
(``recourse.render`` draws).

Public mode (on a Space, or with ``RECOURSE_PUBLIC=1``): every request goes through the queue
(the direct ``/run`` routes are closed), the failure scan never takes a server path, and audits
and scans keep to a cost budget (``recourse.ui.limits``). Local mode only: "Your models" audits
an auditor's own pair, given as two model cards (``recourse.foreign``).

Start-up (``recourse.ui.startup``): a quick check of the classifier and the generator (a broken
one stops the app with one line and exit code 2), then the server answers at once while every
other model loads in the background; an audit, a scan or "Use these models" asked for meanwhile
waits for the loading and says so in its status line.

Always: uploads reach the app as checked paths in Gradio's upload folder and are decoded by
``recourse.faces`` only (``recourse.ui.serve.inputs``); request bodies are capped
(``recourse.ui.serve.request_limits``); each running app keeps its files in a folder of its own
(``recourse.ui.storage``, claimed on import, before any component is built).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import gradio as gr

from recourse import faces
from recourse.ui.audit import (build_audit_tab, follow_stop, method_controls, select_gallery_face, show_path_point,
                               variant_choices)
from recourse.ui.benchmark import benchmark_view, build_benchmark_tab
from recourse.ui.failures import build_failures_tab, find_failures, select_failure
from recourse.ui.limits import CACHE_LIFETIME_S, HEAVY_CONCURRENCY, PUBLIC, QUEUE_SIZE, SESSIONS_KEPT
from recourse.ui.serve.memory import limit_arenas
from recourse.ui.startup import LOADING, after_loading, distrust_forwarded_headers, request_limits, start_up
from recourse.ui.texts import HEADING
from recourse.ui.your_models import use_cards

# What tests and scripts read as app.<name> (the Audit tab's components: __getattr__ below).
from recourse.data import ATTRIBUTES
from recourse.models import VARIANTS
from recourse.render.methods import METHOD_NOTES, method_summary
from recourse.ui.audit import EXAMPLE_PHOTO, TARGETS, framed_tensor, gallery_faces
from recourse.ui.benchmark import BENCHMARKS, first_benchmark_run
from recourse.ui.errors import without_paths as _public
from recourse.ui.limits import (
    MAX_BODY_BYTES, MAX_EDIT_STEPS, MAX_MARGIN, MAX_QUEUED, MAX_SCAN_EDIT_WORK, MAX_STEPS, MIN_CONE, PUBLIC_MAX_QUEUED,
    SIGMAS,
)
from recourse.ui.settings import DEFAULTS, scan_count, settings_from
from recourse.ui.storage import EXPORTS, INSTANCE, TEMP_BASE, export as _export, shareable as _shareable
from recourse.ui.texts import BUDGET_NOTE, PUBLIC_CARDS_REFUSED
from recourse.ui.your_models import card_pair

CSS = Path(__file__).with_name("app.css").read_text()  # the layout, its rules explained there

# ---------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------

with gr.Blocks(title="Recourse audit", analytics_enabled=False, delete_cache=(600, CACHE_LIFETIME_S)) as demo:
    selected_face = gr.State(None)  # per user: framed pixels of the chosen gallery or ranked face
    found_faces = gr.State({})  # per user: the last ranking (variant, attribute, framed faces worst first)
    gr.Markdown(HEADING)
    with gr.Tabs() as tabs:
        with gr.Tab("Audit", id="audit"):
            audit = build_audit_tab()
        with gr.Tab("Benchmark", id="benchmark"):
            benchmark = build_benchmark_tab()
        with gr.Tab("Find failures", id="failures"):
            failures = build_failures_tab()
    models = audit.models  # "Your models", on the Audit tab: None in public mode

    RESULT_OUTPUTS = audit.result_outputs
    WALK_SETTINGS = [audit.steps, audit.guidance, audit.seed, audit.margin]
    METHOD_SETTINGS = [audit.method, audit.edit_steps, audit.sigma]  # after the walks': older API calls keep order
    CARDS = [] if models is None else [models.model_card, models.variant_card]
    AUDIT_INPUTS = [audit.upload, selected_face, audit.variant, audit.attribute, audit.target, *WALK_SETTINGS,
                    *METHOD_SETTINGS, *CARDS]
    AUDIT_OUTPUTS = [audit.original_view, *RESULT_OUTPUTS]
    # the Audit tab's settings, and its "Your models", ranked in place of the variant when given
    SCAN_INPUTS = [failures.source, failures.folder, failures.root, failures.split, failures.count, failures.photos,
                   failures.variant, failures.attribute, *WALK_SETTINGS, *METHOD_SETTINGS, *CARDS]
    HEAVY = {"concurrency_limit": HEAVY_CONCURRENCY, "concurrency_id": "heavy"}
    # The status line brought into view when an audit starts; at app.css's phone width the results
    # sit under every control, so it goes to the top of the screen and the verdict and faces arrive
    # under it, in view. A wide screen scrolls only where the status is out of sight.
    SHOW_STATUS = ("() => { document.querySelector('#status')?.scrollIntoView("
                   "{block: matchMedia('(max-width: 640px)').matches ? 'start' : 'nearest'}); }")

    # -----------------------------------------------------------------------------------
    # Events
    # -----------------------------------------------------------------------------------
    audit.method.change(method_controls, audit.method,
                        [audit.method_note, audit.edit_steps, audit.sigma, audit.steps, audit.guidance], queue=False,
                        api_visibility="private")
    gr.on([audit.attribute.change, audit.method.change], follow_stop, [audit.attribute, audit.method], audit.margin,
          queue=False, api_visibility="private")
    audit.gallery.select(select_gallery_face, None, [selected_face, audit.upload, audit.original_view],
                         api_visibility="private")
    audit.upload.upload(lambda: None, None, selected_face, api_visibility="private")
    audit.position.input(show_path_point, [audit.position, audit.path_state],
                         [audit.paths, audit.teacher_path_view, audit.student_path_view], api_visibility="private")
    # Whatever runs a model waits for the models loading at start-up (recourse.ui.startup), saying
    # so in its status line; without a launch (tests, scripts) nothing waits.
    audit_after_loading = after_loading(audit.run_audit, audit.status)
    audit.run.click(audit.clear_results, None, RESULT_OUTPUTS, queue=False, api_visibility="private",
                    js=SHOW_STATUS).then(
        audit_after_loading, AUDIT_INPUTS, AUDIT_OUTPUTS, api_name="audit", **HEAVY)
    if models is not None:
        models.use.click(after_loading(use_cards, models.status),
                         [models.model_card, models.variant_card, audit.attribute, failures.attribute],
                         [audit.attribute, failures.attribute, models.status], api_name="use_models")
    benchmark.run.change(benchmark_view, benchmark.run, [benchmark.caption, benchmark.table, benchmark.plot],
                         api_name="benchmark")
    scanning = failures.scan.click(after_loading(find_failures, failures.status), SCAN_INPUTS,
                                   [failures.ranking, failures.thumbnails, found_faces, failures.status],
                                   api_name="find_failures", **HEAVY)
    failures.cancel.click(None, None, None, cancels=[scanning])
    for chooser in (failures.ranking, failures.thumbnails):
        chooser.select(select_failure, found_faces,
                       [selected_face, audit.upload, audit.original_view, audit.variant, audit.attribute,
                        audit.target, tabs], api_visibility="private").then(
            audit.clear_results, None, RESULT_OUTPUTS, queue=False, api_visibility="private", js=SHOW_STATUS).then(
            audit_after_loading, AUDIT_INPUTS, AUDIT_OUTPUTS, api_visibility="private", **HEAVY)
    # each variant labelled with why it cannot be used, once all are loaded (the list is usable meanwhile)
    demo.load(after_loading(lambda: [gr.Dropdown(choices=variant_choices())] * 2), None,
              [audit.variant, failures.variant], api_visibility="private", show_progress="hidden")

# One queue for every route: in public mode the direct /run routes are closed (gradio_client
# and the browser join the queue), and the queue holds at most QUEUE_SIZE requests.
demo.queue(max_size=QUEUE_SIZE, api_open=not PUBLIC)


def __getattr__(name: str):
    """``app.<component>`` as tests and scripts read it: the Audit tab's components and its
    events (``app.status``, ``app.run_audit``) by name."""
    if not name.startswith("__") and hasattr(audit, name):
        return getattr(audit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    limit_arenas(HEAVY_CONCURRENCY)  # before Gradio's worker threads exist (recourse.ui.serve.memory)
    log = partial(print, flush=True)
    distrust_forwarded_headers()  # the middleware alone names the caller (recourse.ui.serve.request_limits)
    start_up(log)  # quick: a broken classifier or generator stops the app here, exit code 2
    # every other model, then a warm-up audit, in the background once the server is up
    LOADING.start(log, when=lambda: demo.is_running)
    theme = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                              font_mono=["ui-monospace", "monospace"])  # system fonts: nothing fetched, offline
    # show_error=False: errors we raise (gr.Error) are shown; any other, gradio's own included, shows a
    # generic message, since its text may hold server paths
    # public: no monitoring page (it shows every caller's counts) and no run history (it can
    # send a caller's runs to a bucket of theirs from this server)
    demo.launch(theme=theme, css=CSS, max_file_size=faces.MAX_UPLOAD_BYTES, show_error=False,
                app_kwargs={"middleware": request_limits(demo)}, enable_monitoring=False if PUBLIC else None,
                run_history=not PUBLIC, state_session_capacity=SESSIONS_KEPT, prevent_thread_lock=True)
    LOADING.serve(demo)  # until interrupted; a model that fails to load stops it as start_up would
