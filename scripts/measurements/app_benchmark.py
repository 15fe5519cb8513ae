"""Time the app: one audit at default settings, time to predictions, and a concurrent load.

    python -m scripts.measurements.app_benchmark [--variant ptq-int8] [--repeats 10] [--clients 8] [--seconds 120]
    python -m scripts.measurements.app_benchmark --start-up 5      # only: how soon app.py serves

1. ``audit_image`` in this process on the gallery faces: median seconds of a full audit
   (both predictions, two counterfactuals, metrics, both attribution methods) and of its
   stages.
2. ``python app.py`` started for real; through ``gradio_client``, an uploaded photo is
   audited ``--repeats`` times: median time from the request to the first yielded output
   (the predictions) and to the last (the whole audit), HTTP and upload included.
3. ``--clients`` clients, each in its own thread with its own ``Client``, send audits back to
   back for ``--seconds``: requests sent, completed, failed, lost (sent but never answered),
   and the server's resident memory (VmRSS) sampled every 5 s.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from recourse.audit.paired import share_cores_between_paired_edits
from recourse.audit.pipeline import audit_image
from recourse.audit.result import AuditSettings
from recourse.generation import CounterfactualConfig
from recourse.generation.denoised import REFERENCE_VIEWS
from recourse.locations import assets_dir
from recourse.models import VARIANTS
from scripts.figures.app_screenshot import ROOT, app_process, wait_until_ready

GALLERY = ROOT / "assets" / "gallery"
FLIP = "flip the full-precision decision"
LOAD_ATTRIBUTES = ("Smiling", "Young", "Male", "Eyeglasses")

EDIT = CounterfactualConfig()  # the app's editing defaults


def photo() -> Path:
    return assets_dir() / "examples" / "grace-hopper.jpg"  # public domain, shipped with matplotlib


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def in_process(variant: str, repeats: int, attribute: str = "Smiling", photos: Path | None = None) -> None:
    """``repeats`` audits of the gallery's faces, or of the photos in ``photos`` (aligned as
    uploads are, so the display pictures are made on each photo's crop), each with its display
    pictures (stage ``pictures``)."""
    from recourse.render.pictures import display_pictures

    share_cores_between_paired_edits()  # as the app does at start-up
    if photos is None:
        faces = [torch.from_numpy(np.array(Image.open(p).convert("RGB"))).permute(2, 0, 1).float() / 255
                 for p in sorted(GALLERY.glob("*.png"))]
    else:
        faces = [p.read_bytes() for p in sorted(photos.iterdir()) if p.suffix.lower() in (".jpg", ".png")]
    # the minimal recourse (margin 0, no stops): the settings the guide's in-process timings were measured at
    minimal = AuditSettings()
    audit_image(faces[0], variant=variant, attribute=attribute, settings=minimal)  # load and warm up
    stages: dict[str, list[float]] = {}
    for i in range(repeats):
        REFERENCE_VIEWS.clear()  # each audit from cold, as a new face is (the warm-up's face comes again)
        started = time.perf_counter()
        result = audit_image(faces[i % len(faces)], variant=variant, attribute=attribute, settings=minimal)
        drawn = time.perf_counter()
        display_pictures(result)
        stages.setdefault("audit + pictures", []).append(time.perf_counter() - started)
        stages.setdefault("pictures", []).append(time.perf_counter() - drawn)
        for name, seconds in result.seconds.items():
            stages.setdefault(name, []).append(seconds)
    source = "gallery faces" if photos is None else f"photos of {photos}"
    print(f"in process, {repeats} audits of {source} ({variant}, {attribute}, default settings, "
          f"{torch.get_num_threads()} torch threads):")
    for name, values in stages.items():
        print(f"  {name:16s} median {statistics.median(values):.3f} s  (min {min(values):.3f}, max {max(values):.3f})")


def start_up(repeats: int) -> None:
    """``python app.py`` started ``repeats`` times: seconds to the first HTTP answer, and to the
    log's line that every model is loaded and warmed up (recourse.ui.startup.READY_LINE)."""
    import tempfile

    serving, ready = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="app-start-") as folder:
            log = Path(folder) / "app.log"
            started = time.perf_counter()
            with app_process(log=log, ready=False) as (_, process):
                serving.append(time.perf_counter() - started)
                wait_until_ready(process, log, time.monotonic() + 600, every=0.1)
                ready.append(time.perf_counter() - started)
    print(f"start-up, {repeats} starts of app.py:")
    print(f"  serving (first HTTP answer)   median {statistics.median(serving):.1f} s  (min {min(serving):.1f}, "
          f"max {max(serving):.1f})")
    print(f"  every model loaded, warmed up median {statistics.median(ready):.1f} s  (min {min(ready):.1f}, "
          f"max {max(ready):.1f})")


def through_client(url: str, variant: str, repeats: int) -> None:
    """Request → first yielded output (the predictions) and → last (the whole audit)."""
    from gradio_client import Client, handle_file

    client = Client(url, verbose=False)
    first, last = [], []
    for i in range(repeats + 1):
        started = time.perf_counter()
        job = client.submit(handle_file(str(photo())), variant, "Smiling", FLIP, EDIT.finish_steps, EDIT.cone_degrees, 0, 0.0,
                            api_name="/audit")
        arrivals = []
        for _ in job:  # one item per yield of the event; the iterator polls every millisecond
            arrivals.append(time.perf_counter() - started)
        if not arrivals:
            raise RuntimeError(f"no output: {job.status()}")
        if i:  # the first request warms up the upload path
            first.append(arrivals[0])
            last.append(arrivals[-1])
    print(f"through gradio_client, {repeats} audits of an uploaded photo (upload and alignment included):")
    print(f"  to predictions   median {statistics.median(first):.3f} s  (max {max(first):.3f})")
    print(f"  full audit       median {statistics.median(last):.3f} s  (max {max(last):.3f})")


def load(url: str, pid: int, variant: str, clients: int, seconds: float) -> None:
    from gradio_client import Client, handle_file

    counts = {"sent": 0, "completed": 0, "failed": 0}
    errors: list[str] = []
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def worker(number: int) -> None:
        client = Client(url, verbose=False)
        request = 0
        while time.monotonic() < stop_at:
            attribute = LOAD_ATTRIBUTES[(number + request) % len(LOAD_ATTRIBUTES)]
            with lock:
                counts["sent"] += 1
            started = time.perf_counter()
            try:
                values = next(o for o in client.predict(handle_file(str(photo())), variant, attribute, FLIP, EDIT.finish_steps, EDIT.cone_degrees,
                                                        request, 0.0, api_name="/audit")
                              if isinstance(o, dict) and "recourse" in o)
                assert values["attribute"] == attribute
                with lock:
                    counts["completed"] += 1
                    latencies.append(time.perf_counter() - started)
            except Exception as error:  # counted and reported: this is what the load test measures
                with lock:
                    counts["failed"] += 1
                    errors.append(f"{type(error).__name__}: {str(error)[:200]}")
            request += 1

    memory = [rss_mib(pid)]
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        time.sleep(5)
        memory.append(rss_mib(pid))
    lost = counts["sent"] - counts["completed"] - counts["failed"]
    print(f"load: {clients} clients for {seconds:.0f} s: {counts['sent']} sent, {counts['completed']} completed, "
          f"{counts['failed']} failed, {lost} lost")
    if latencies:
        print(f"  latency per audit under load: median {statistics.median(latencies):.2f} s, "
              f"max {max(latencies):.2f} s; throughput {counts['completed'] / seconds:.2f} audits/s")
    print(f"  server memory (VmRSS, MiB): start {memory[0]:.0f}, after the first 5 s {memory[1]:.0f}, "
          f"end {memory[-1]:.0f}, max {max(memory):.0f}")
    quarters = [memory[min(len(memory) - 1, round(q * (len(memory) - 1) / 4))] for q in range(5)]
    print("  at 0, 1/4, 1/2, 3/4 and the end of the run: " + ", ".join(f"{m:.0f}" for m in quarters))
    for error in errors[:5]:
        print("  error:", error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default=VARIANTS[0], choices=VARIANTS)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--in-process-only", action="store_true", help="only step 1, the audit in this process")
    parser.add_argument("--attribute", default="Smiling", help="step 1's attribute")
    parser.add_argument("--photos", type=Path, default=None, help="step 1 on these photos instead of the gallery")
    parser.add_argument("--start-up", type=int, metavar="N",
                        help="only start app.py N times: seconds until it serves and until every model is loaded")
    args = parser.parse_args()
    if args.start_up:
        start_up(args.start_up)
        return
    in_process(args.variant, args.repeats, args.attribute, args.photos)
    if args.in_process_only:
        return
    with app_process() as (url, process):
        through_client(url, args.variant, args.repeats)
        load(url, process.pid, args.variant, args.clients, args.seconds)


if __name__ == "__main__":
    main()
