"""Soak the public app: N strangers probe it for T minutes while its memory is sampled.

    python -m scripts.measurements.soak --clients 10 --minutes 20 --json assets/results/soak-public.json
    python -m scripts.measurements.soak --url http://127.0.0.1:7860/ --pid 12345 --clients 4 --minutes 5

A public instance (``RECOURSE_PUBLIC=1 python app.py``) was seen to grow from 967 MB to
1.94 GB resident after 37 minutes of probing. This script starts the app itself in public
mode on loopback (a free port, a fresh ``GRADIO_TEMP_DIR``, its log kept), or attaches to
a running one with ``--url`` (loopback only) and ``--pid``. Then ``--clients`` threads, all
one caller (one IP, so the app's cap of 4 queued requests per caller applies: a 429 means
"wait a second and retry", and is counted), loop over what a stranger does, through the raw
Gradio HTTP API (``/gradio_api/upload``, ``/gradio_api/queue/join`` and the
``/gradio_api/queue/data`` event stream, a fresh session for each request, as a new visitor):

* ``audit``: upload the example photo (afresh each time, as real traffic does) and audit it
  with cheap settings, rotating the variant and the attribute;
* ``scan``: rank two gallery faces (``find_failures``);
* ``bad_choice``, ``garbage_upload``, ``over_budget``: requests the app must refuse (an
  unknown variant, random bytes named .jpg, a margin of 99);
* ``benchmark``: the benchmark view, rotating the run.

Every ``--every`` seconds the server's VmRSS and VmHWM (``/proc/<pid>/status``) are sampled,
with the requests done, the errors (an unexpected answer, a refusal of what should pass or
the reverse, a failed connection) and the files in the app's temporary folder. After the
load, ``--settle`` seconds without requests show whether memory comes back down. The JSON
holds the samples, RSS at 2 minutes and at the end, the growth in between, the requests and
statuses counted, the temporary folder's files and bytes, and the tail of the app's log.
Exit code 0, or 1 if the app died.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "assets" / "examples" / "grace-hopper.jpg"
TARGET = "flip the full-precision decision"
# steps, cone, seed, margin, method, edit steps, sigma: within the public budget, quick
CHEAP = (20, 40, 0, 0.0, "denoised", 2, 1.0)
OVER_BUDGET = (20, 40, 0, 99.0, "denoised", 2, 1.0)  # margin 99: past the public maximum of 3
VARIANTS = ("ptq-int8", "ptq-int4", "cf-ptq")
ATTRIBUTES = ("Smiling", "Young", "Male", "Eyeglasses")
# One stranger's round; each client starts at another place in it.
ROUND = ("audit", "benchmark", "large_photo", "bad_choice", "scan", "audit", "garbage_upload", "over_budget",
         "bomb")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
BASELINE_S = 120.0
TARGET_GROWTH_MIB = 150.0
TARGET_IDLE_MIB = 100.0  # RSS after the rest, over the idle RSS before the load
ERRORS_KEPT = 20
LOG_LINES = 40


@dataclass
class Sample:
    """The server's memory and the traffic so far, ``t_s`` seconds after the load began."""

    t_s: float
    rss_mib: float | None
    hwm_mib: float | None
    requests_done: int
    errors: int
    temp_files: int | None = None
    temp_mib: float | None = None
    phase: str = "load"  # "load" while the clients run, "settle" after they stopped

    def line(self) -> str:
        def mib(value: float | None) -> str:
            return "?" if value is None else f"{value:.0f}"

        temp = "" if self.temp_files is None else f"  temp {self.temp_files} files {self.temp_mib:.1f} MiB"
        return (f"[{self.phase:6}] t={self.t_s:6.0f} s  RSS {mib(self.rss_mib)} MiB  HWM {mib(self.hwm_mib)} MiB  "
                f"done {self.requests_done}  errors {self.errors}{temp}")


@dataclass
class Tally:
    """What the clients did, counted under one lock."""

    requests: Counter = field(default_factory=Counter)  # kind → rounds finished
    statuses: Counter = field(default_factory=Counter)  # "route code" and "kind: outcome"
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def status(self, key: str) -> None:
        with self.lock:
            self.statuses[key] += 1

    def done(self, kind: str, outcome: str, expected: str, detail: str = "") -> None:
        with self.lock:
            self.requests[kind] += 1
            self.statuses[f"{kind}: {outcome}"] += 1
            if outcome != expected:
                self._error(f"{kind}: {outcome} (expected {expected}) {detail}")

    def error(self, message: str) -> None:
        with self.lock:
            self._error(message)

    def _error(self, message: str) -> None:
        self.errors += 1
        if len(self.error_messages) < ERRORS_KEPT:
            self.error_messages.append(message[:300])

    @property
    def requests_done(self) -> int:
        with self.lock:
            return sum(self.requests.values())


# --- memory and files --------------------------------------------------------------------


def proc_mib(pid: int, field_name: str) -> float | None:
    """``VmRSS``, ``VmHWM``… of ``pid`` in MiB; None once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def folder_usage(folder: Path | None) -> tuple[int, int] | None:
    """``(files, bytes)`` under ``folder``, None when there is no folder to count."""
    if folder is None or not folder.is_dir():
        return None
    files = size = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                size += (Path(dirpath) / name).stat().st_size
                files += 1
    return files, size


def usage_by_suffix(folder: Path | None) -> dict[str, dict[str, int]]:
    """``{suffix: {"files", "bytes"}}`` under ``folder``, largest first: what accumulates."""
    kinds: dict[str, dict[str, int]] = {}
    if folder is None or not folder.is_dir():
        return kinds
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                kind = kinds.setdefault(path.suffix.lower() or "(none)", {"files": 0, "bytes": 0})
                kind["files"] += 1
                kind["bytes"] += path.stat().st_size
    return dict(sorted(kinds.items(), key=lambda item: -item[1]["bytes"]))


def take_sample(pid: int, started: float, tally: Tally, temp_dir: Path | None, phase: str) -> Sample:
    usage = folder_usage(temp_dir)
    return Sample(t_s=round(time.monotonic() - started, 1), rss_mib=proc_mib(pid, "VmRSS"),
                  hwm_mib=proc_mib(pid, "VmHWM"), requests_done=tally.requests_done, errors=tally.errors,
                  temp_files=None if usage is None else usage[0],
                  temp_mib=None if usage is None else round(usage[1] / 2**20, 2), phase=phase)


def summarize(samples: list[Sample], baseline_s: float = BASELINE_S, target_mib: float = TARGET_GROWTH_MIB) -> dict:
    """RSS at ``baseline_s`` (the first load sample at or after it; the first sample in a
    shorter run), at the end of the load, and the growth in between; and, less noisy, the
    idle growth: after settling against the first sample (taken before any request)."""
    load = [s for s in samples if s.phase == "load" and s.rss_mib is not None]
    settle = [s for s in samples if s.phase == "settle" and s.rss_mib is not None]
    if not load:
        return {"rss_at_2_min_mib": None, "rss_end_mib": None, "growth_after_2_min_mib": None,
                "baseline_t_s": None, "end_t_s": None, "rss_idle_before_mib": None, "rss_after_settle_mib": None,
                "idle_growth_mib": None, "peak_hwm_mib": None, "within_target": None, "target_growth_mib": target_mib,
                "idle_within_target": None, "target_idle_mib": TARGET_IDLE_MIB}
    baseline = next((s for s in load if s.t_s >= baseline_s), load[0])
    end = load[-1]
    growth = end.rss_mib - baseline.rss_mib
    hwms = [s.hwm_mib for s in samples if s.hwm_mib is not None]
    return {"rss_at_2_min_mib": round(baseline.rss_mib, 1), "rss_end_mib": round(end.rss_mib, 1),
            "growth_after_2_min_mib": round(growth, 1), "baseline_t_s": baseline.t_s, "end_t_s": end.t_s,
            "rss_idle_before_mib": round(load[0].rss_mib, 1),
            "rss_after_settle_mib": round(settle[-1].rss_mib, 1) if settle else None,
            "idle_growth_mib": round(settle[-1].rss_mib - load[0].rss_mib, 1) if settle else None,
            "peak_hwm_mib": round(max(hwms), 1) if hwms else None,
            "within_target": growth <= target_mib, "target_growth_mib": target_mib,
            "idle_within_target": settle[-1].rss_mib - load[0].rss_mib <= TARGET_IDLE_MIB if settle else None,
            "target_idle_mib": TARGET_IDLE_MIB}


def verdict_line(summary: dict) -> str:
    if summary["rss_end_mib"] is None:
        return "RSS not measured (no sample of the server's memory)"

    def minutes(seconds: float) -> str:
        return f"{seconds / 60:.3g}"

    return (f"RSS after {minutes(summary['baseline_t_s'])} min {summary['rss_at_2_min_mib']:.0f} MiB, "
            f"after {minutes(summary['end_t_s'])} min {summary['rss_end_mib']:.0f} MiB, "
            f"growth {summary['growth_after_2_min_mib']:.0f} MiB "
            f"(target: within {summary['target_growth_mib']:.0f} MiB)")


# --- the Gradio HTTP API -----------------------------------------------------------------


class Api:
    """One caller of the app's HTTP API, as a stranger without gradio_client calls it."""

    def __init__(self, url: str, tally: Tally, stop: threading.Event) -> None:
        import httpx

        self.url, self.tally, self.stop = url, tally, stop
        self.http = httpx.Client(timeout=httpx.Timeout(60, read=600))
        self.config = self.get_config()

    def get_config(self) -> dict:
        answer = self.http.get(f"{self.url}config")
        self.tally.status(f"config {answer.status_code}")
        answer.raise_for_status()
        return answer.json()

    def event(self, api_name: str, leading: list) -> tuple[int, list]:
        """``(fn_index, data)``: ``leading``, then every later input's default from /config."""
        index, event = next((i, d) for i, d in enumerate(self.config["dependencies"])
                            if d.get("api_name") == api_name)
        defaults = {c["id"]: c.get("props", {}).get("value") for c in self.config["components"]}
        return index, [*leading, *(defaults.get(i) for i in event["inputs"][len(leading):])]

    def choices(self, api_name: str, position: int) -> list:
        """The values offered by input ``position`` of ``api_name``."""
        _, event = next((i, d) for i, d in enumerate(self.config["dependencies"]) if d.get("api_name") == api_name)
        component = next(c for c in self.config["components"] if c["id"] == event["inputs"][position])
        return [c[1] if isinstance(c, (list, tuple)) else c for c in component.get("props", {}).get("choices", [])]

    def post_retrying(self, route: str, **kwargs):
        """POST until it is not refused with 429 (waiting a second each time); None if stopped."""
        while True:
            answer = self.http.post(f"{self.url}gradio_api/{route}", **kwargs)
            self.tally.status(f"{route} {answer.status_code}")
            if answer.status_code != 429:
                return answer
            if self.stop.wait(1.0):
                return None

    def upload(self, data: bytes, name: str, mime: str = "image/jpeg") -> dict | None | str:
        """The uploaded file as an image input's value; the refusal text if refused; None if stopped."""
        answer = self.post_retrying("upload", files={"files": (name, data, mime)})
        if answer is None:
            return None
        if answer.status_code != 200:
            return f"upload {answer.status_code}: {answer.text[:200]}"
        return {"path": answer.json()[0], "meta": {"_type": "gradio.FileData"}, "orig_name": name}

    def call(self, api_name: str, leading: list) -> dict | None:
        """Join the queue (retrying on 429) in a fresh session and read its event stream: the
        completion message (``success`` and ``output``); None if stopped while refused."""
        index, data = self.event(api_name, leading)
        session = uuid.uuid4().hex
        joined = self.post_retrying("queue/join", json={"data": data, "fn_index": index, "session_hash": session,
                                                        "trigger_id": None})
        if joined is None:
            return None
        if joined.status_code != 200:
            return {"success": False, "http": joined.status_code, "output": {"error": joined.text[:300]}}
        with self.http.stream("GET", f"{self.url}gradio_api/queue/data", params={"session_hash": session}) as stream:
            self.tally.status(f"queue/data {stream.status_code}")
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return message
                if message.get("msg") in ("unexpected_error", "close_stream"):
                    return {"success": False, "unexpected": True, "output": {"error": str(message)[:300]}}
        return {"success": False, "unexpected": True, "output": {"error": "the event stream ended early"}}


# --- what a stranger does ------------------------------------------------------------------


def outcome_of(message: dict | None) -> tuple[str, str]:
    """``(outcome, detail)`` of a completion message: ok, refused or unexpected."""
    if message is None:
        return "stopped", ""
    if message.get("unexpected") or message.get("http") not in (None, 422):
        return "unexpected", str(message.get("output"))[:300]
    if message.get("success"):
        return "ok", ""
    return "refused", str((message.get("output") or {}).get("error"))[:300]


@functools.lru_cache(maxsize=1)
def large_photo(photo: bytes) -> bytes:
    """The example photo at 4000×3000 (12 MP), as a phone writes it: the upload path of a real
    photo, decoded reduced and aligned."""
    from PIL import Image

    image = Image.open(io.BytesIO(photo)).convert("RGB")
    canvas = Image.new("RGB", (4000, 3000), (200, 200, 200))
    canvas.paste(image.resize((2200, 2200 * image.height // image.width)), (900, 300))
    buffer = io.BytesIO()
    canvas.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@functools.lru_cache(maxsize=1)
def bomb() -> bytes:
    """A PNG of 9000×9000 grey pixels in a few kilobytes: refused from its header."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (9000, 9000)).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


class Stranger:
    """One client thread's round of requests (``ROUND``), varied by a counter."""

    def __init__(self, api: Api, number: int, photo: bytes) -> None:
        self.api, self.number, self.photo, self.turn = api, number, photo, number
        self.runs = api.choices("benchmark", 0) or [None]

    def variant_and_attribute(self) -> tuple[str, str]:
        return VARIANTS[self.turn % len(VARIANTS)], ATTRIBUTES[(self.turn // len(VARIANTS)) % len(ATTRIBUTES)]

    def audit(self, image, variant: str, attribute: str, settings=CHEAP) -> dict | None:
        return self.api.call("audit", [image, None, variant, attribute, TARGET, *settings])

    def upload_photo(self):
        return self.api.upload(self.photo, f"face-{self.number}-{self.turn}.jpg")

    def run(self, kind: str) -> tuple[str, str, str]:
        """Do one ``kind`` of request: ``(outcome, expected, detail)``."""
        variant, attribute = self.variant_and_attribute()
        if kind == "benchmark":
            outcome, detail = outcome_of(self.api.call("benchmark", [self.runs[self.turn % len(self.runs)]]))
            return outcome, "ok", detail
        if kind == "scan":
            outcome, detail = outcome_of(self.api.call("find_failures", ["gallery faces", "", None, "test", 2, None,
                                                                         variant, attribute, *CHEAP]))
            return outcome, "ok", detail
        if kind in ("large_photo", "bomb"):  # a 12 MP phone photo, aligned; a small file of too many pixels
            data, expected = (large_photo(self.photo), "ok") if kind == "large_photo" else (bomb(), "refused")
            image = self.api.upload(data, f"{kind}-{self.number}-{self.turn}.{'jpg' if kind == 'large_photo' else 'png'}")
            if image is None or isinstance(image, str):
                return ("stopped", expected, "") if image is None else ("refused", expected, image)
            outcome, detail = outcome_of(self.audit(image, variant, attribute))
            return outcome, expected, detail
        if kind == "garbage_upload":
            image = self.api.upload(os.urandom(4096), f"garbage-{self.number}.jpg")
            if isinstance(image, str):
                return "refused", "refused", image  # refused at the upload: fine too
            outcome, detail = outcome_of(None if image is None else self.audit(image, variant, attribute))
            return outcome, "refused", detail
        image = self.upload_photo()
        if image is None:
            return "stopped", "ok", ""
        if isinstance(image, str):
            return "unexpected", "ok", image
        if kind == "audit":
            message, expected = self.audit(image, variant, attribute), "ok"
        elif kind == "bad_choice":
            message, expected = self.audit(image, "no-such-variant", attribute), "refused"
        elif kind == "over_budget":
            message, expected = self.audit(image, variant, attribute, OVER_BUDGET), "refused"
        else:
            raise ValueError(kind)
        outcome, detail = outcome_of(message)
        return outcome, expected, detail

    def loop(self, tally: Tally, stop: threading.Event) -> None:
        while not stop.is_set():
            kind = ROUND[self.turn % len(ROUND)]
            try:
                outcome, expected, detail = self.run(kind)
            except Exception as error:  # noqa: BLE001 - a soak counts failures, it does not stop on them
                tally.error(f"{kind}: {type(error).__name__}: {error}")
                tally.status(f"{kind}: exception")
                stop.wait(1.0)
            else:
                if outcome != "stopped":
                    tally.done(kind, outcome, expected, detail)
            self.turn += 1


def client_thread(url: str, number: int, tally: Tally, stop: threading.Event, photo: bytes) -> None:
    try:
        Stranger(Api(url, tally, stop), number, photo).loop(tally, stop)
    except Exception as error:  # noqa: BLE001 - e.g. /config unreachable
        tally.error(f"client {number} stopped: {type(error).__name__}: {error}")


# --- the app -----------------------------------------------------------------------------


@contextlib.contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class Target:
    """The app under soak: its URL, its process id, its temp folder and log (when known), and
    ``alive()``."""

    url: str
    pid: int
    temp_dir: Path | None
    log: Path | None
    alive: Callable[[], bool]
    started: bool


@contextlib.contextmanager
def started_app(timeout: float, keep: bool = False) -> Iterator[Target]:
    """``RECOURSE_PUBLIC=1 python app.py`` on a free loopback port with a fresh temp folder
    (removed after, with the app's log, unless ``keep``)."""
    from scripts.figures.app_screenshot import app_process

    temp_dir = Path(tempfile.mkdtemp(prefix="soak-gradio-"))
    log_dir = Path(tempfile.mkdtemp(prefix="soak-log-"))
    log = log_dir / "app.log"
    env = {"RECOURSE_PUBLIC": "1", "GRADIO_TEMP_DIR": str(temp_dir), "RECOURSE_TEMP_BASE": str(temp_dir),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    try:
        with patched_environ(env), app_process(timeout=timeout, log=log) as (url, process):
            yield Target(url, process.pid, temp_dir, log, lambda: process.poll() is None, started=True)
    finally:
        if keep:
            print(f"kept the app's temp folder {temp_dir} and log {log}")
        else:
            shutil.rmtree(temp_dir, ignore_errors=True)
            shutil.rmtree(log_dir, ignore_errors=True)


def attached_app(url: str, pid: int, temp_dir: str | None, log: str | None) -> Target:
    url = url if url.endswith("/") else url + "/"
    return Target(url, pid, Path(temp_dir) if temp_dir else None, Path(log) if log else None,
                  lambda: Path(f"/proc/{pid}").exists(), started=False)


def log_lines(log: Path | None, starting: str = "") -> int | None:
    """Lines of the app's log (those starting with ``starting``)."""
    if log is None or not log.is_file():
        return None
    with open(log, errors="replace") as lines:
        return sum(1 for line in lines if line.startswith(starting))


def log_tail(log: Path | None, lines: int = LOG_LINES) -> list[str]:
    if log is None or not log.is_file():
        return []
    return log.read_text(errors="replace").splitlines()[-lines:]


# --- the soak ----------------------------------------------------------------------------


def soak(target: Target, clients: int, minutes: float, every: float, settle: float) -> tuple[list[Sample], Tally, bool]:
    """Run the clients for ``minutes``, sampling every ``every`` s, then ``settle`` s idle.
    ``(samples, tally, the app died)``."""
    tally, stop, photo = Tally(), threading.Event(), EXAMPLE.read_bytes()
    started = time.monotonic()
    samples = [take_sample(target.pid, started, tally, target.temp_dir, "load")]
    print(samples[0].line(), flush=True)
    threads = [threading.Thread(target=client_thread, args=(target.url, i, tally, stop, photo), daemon=True,
                                name=f"stranger-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    died = sample_for(samples, target, tally, started, minutes * 60, every, "load")
    stop.set()
    deadline = time.monotonic() + 300  # requests already queued finish (each one's own wait)
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    if not died and settle > 0:
        died = sample_for(samples, target, tally, started, settle, min(every, settle), "settle")
    return samples, tally, died


def sample_for(samples: list[Sample], target: Target, tally: Tally, started: float, seconds: float, every: float,
               phase: str) -> bool:
    """Append a sample every ``every`` s for ``seconds`` from now (times counted from
    ``started``); True if the app died."""
    since = time.monotonic()
    next_at = since + every
    while next_at <= since + seconds + 1e-6:
        time.sleep(max(0.0, next_at - time.monotonic()))
        if not target.alive():
            print(f"the app (pid {target.pid}) died", flush=True)
            return True
        samples.append(take_sample(target.pid, started, tally, target.temp_dir, phase))
        print(samples[-1].line(), flush=True)
        next_at += every
    return False


def report(args: argparse.Namespace, target: Target, samples: list[Sample], tally: Tally, died: bool,
           usage: tuple[int, int] | None) -> dict:
    summary = summarize(samples)
    return {
        "command": " ".join(["python -m scripts.measurements.soak", *sys.argv[1:]]),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "clients": args.clients, "minutes": args.minutes, "every_s": args.every, "settle_s": args.settle,
        "app": {"started_here": target.started, "pid": target.pid, "died": died},
        "samples": [asdict(s) for s in samples],
        **summary,
        "requests": dict(sorted(tally.requests.items())),
        "statuses": dict(sorted(tally.statuses.items())),
        "errors": tally.errors, "error_messages": tally.error_messages,
        "temp_files": None if usage is None else usage[0], "temp_bytes": None if usage is None else usage[1],
        "temp_by_suffix": usage_by_suffix(target.temp_dir),
        "app_log_bytes": target.log.stat().st_size if target.log and target.log.is_file() else None,
        "app_log_lines": log_lines(target.log),
        "app_log_tracebacks": log_lines(target.log, "Traceback"),  # refusals are one line each: real faults only
        "app_log_tail": log_tail(target.log),
    }


def loopback_url(url: str) -> str:
    host = urlparse(url).hostname
    if host not in LOOPBACK:
        raise argparse.ArgumentTypeError(f"--url must be on loopback (127.0.0.1 or localhost), not {host!r}")
    return url


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:5]))
    parser.add_argument("--clients", type=int, default=10, help="client threads, all one caller (default 10)")
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the clients run (default 20)")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between memory samples (default 10)")
    parser.add_argument("--settle", type=float, default=30.0,
                        help="seconds of samples with no requests after the clients stop (default 30; 0: none)")
    parser.add_argument("--json", type=Path, help="write the samples and summary here")
    parser.add_argument("--url", type=loopback_url,
                        help="attach to this running app (loopback only) instead of starting one; needs --pid")
    parser.add_argument("--pid", type=int, help="with --url: the app's process, whose memory is sampled")
    parser.add_argument("--temp-dir", help="with --url: the app's GRADIO_TEMP_DIR, to count its files")
    parser.add_argument("--log", help="with --url: the app's log, for its last lines")
    parser.add_argument("--keep", action="store_true",
                        help="keep the started app's temp folder and log (removed by default) to look into")
    parser.add_argument("--start-timeout", type=float, default=600.0,
                        help="seconds to wait for a started app to answer (default 600)")
    args = parser.parse_args(argv)
    if args.url and args.pid is None:
        parser.error("--url needs --pid (the process to measure)")
    if not args.url and (args.pid or args.temp_dir or args.log):
        parser.error("--pid, --temp-dir and --log go with --url")
    if args.url and args.keep:
        parser.error("--keep goes with a started app, not --url")
    if args.clients < 1 or args.minutes <= 0 or args.every <= 0 or args.settle < 0:
        parser.error("--clients ≥ 1, --minutes > 0, --every > 0 and --settle ≥ 0")
    return args


def run(args: argparse.Namespace, target: Target) -> int:
    print(f"soaking {target.url} (pid {target.pid}) with {args.clients} clients for {args.minutes:g} min", flush=True)
    samples, tally, died = soak(target, args.clients, args.minutes, args.every, args.settle)
    usage = folder_usage(target.temp_dir)  # before a started app stops and cleans its folder
    result = report(args, target, samples, tally, died, usage)
    if usage is not None:
        print(f"temp folder: {usage[0]} files, {usage[1] / 2**20:.1f} MiB")
    print(f"requests {result['requests']}, errors {tally.errors}")
    for message in tally.error_messages[:5]:
        print(f"  error: {message}")
    if result["idle_growth_mib"] is not None:
        print(f"idle RSS before the load {result['rss_idle_before_mib']:.0f} MiB, after {args.settle:g} s of rest "
              f"{result['rss_after_settle_mib']:.0f} MiB ({result['idle_growth_mib']:+.0f} MiB; target: within "
              f"{result['target_idle_mib']:.0f} MiB)")
    if result["app_log_lines"] is not None:
        print(f"app log: {result['app_log_lines']:,} lines, {result['app_log_tracebacks']} tracebacks")
    print(verdict_line(result), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 1 if died else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.url:
        return run(args, attached_app(args.url, args.pid, args.temp_dir, args.log))
    print("starting RECOURSE_PUBLIC=1 python app.py on loopback…", flush=True)
    try:
        with started_app(args.start_timeout, args.keep) as target:
            return run(args, target)
    except (RuntimeError, TimeoutError) as error:
        print(f"the app did not start: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
