"""Run ``python app.py`` for real, audit a gallery face in headless Chromium, save a screenshot.

    python -m scripts.figures.app_screenshot --out assets/screenshot.png                    # 1280×800
    python -m scripts.figures.app_screenshot --out assets/screenshot-phone.png --width 390 --height 844 --full-page
    python -m scripts.figures.app_screenshot --out assets/screenshot-paths.png --element "#recourse-paths"  # the paths

Uses Debian's ``chromium`` (``apt-get install chromium``) through Playwright's Python
package; no browser is downloaded. ``start_app`` and ``audit_gallery_face`` are shared with
the tests (tests/test_app.py, tests/test_e2e_browser.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def start_app(timeout: float = 600.0, log: Path | None = None, ready: bool = True) -> Iterator[str]:
    """``python app.py`` on a free localhost port; yields its URL once it answers (and, with
    ``ready``, once every model is loaded and warmed up), stops it after. Loading every variant
    takes seconds alone, minutes on cores shared with training runs."""
    with app_process(timeout, log, ready) as (url, _):
        yield url


@contextlib.contextmanager
def app_process(timeout: float = 600.0, log: Path | None = None, ready: bool = True,
                env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """As :func:`start_app`, also giving the process (to watch its memory). The app serves
    before its models are loaded (recourse.ui.startup); ``ready`` waits for them too, so that what
    a caller measures is an audit, not the loading. ``env``: variables for the app's process only
    (``RECOURSE_PUBLIC``, say), over this process's own."""
    port = free_port()
    env = {**os.environ, **(env or {}), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="app-log-"))) / "app.log"
        output = stack.enter_context(open(log, "w"))
        process = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=output,
                                   stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + timeout
            while not answers(url):
                waited(process, deadline, f"answer on {url}")
            if ready:
                wait_until_ready(process, log, deadline)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def wait_until_ready(process: subprocess.Popen, log: Path, deadline: float, every: float = 0.5) -> None:
    """Until the app's ``log`` says every model is loaded and warmed up (recourse.ui.startup)."""
    from recourse.ui.startup import READY_LINE

    while READY_LINE not in log.read_text(errors="replace"):
        waited(process, deadline, "load its models", every)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def waited(process: subprocess.Popen, deadline: float, what: str, every: float = 0.5) -> None:
    """``every`` seconds more of waiting for the app to ``what``; an error where it has exited
    or the deadline has passed."""
    if process.poll() is not None:
        raise RuntimeError(f"app.py exited with code {process.returncode} before it could {what}")
    if time.monotonic() > deadline:
        raise TimeoutError(f"app.py did not {what} in time")
    time.sleep(every)


def audit_gallery_face(page, url: str | None, face: int = 0, timeout_ms: int = 120_000) -> None:
    """Open the app (unless ``url`` is None: the page shows it already), pick a gallery face,
    run the audit and wait for the value cards."""
    if url is not None:
        page.goto(url, wait_until="domcontentloaded")
    page.locator("#gallery button.thumbnail-item").nth(face).click(timeout=timeout_ms)
    page.locator("#aligned img").wait_for(timeout=timeout_ms)
    page.locator("#run-audit").click()
    page.locator("#value-cards .value-card").first.wait_for(timeout=timeout_ms)
    page.locator("#student-cf img").wait_for(timeout=timeout_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "assets" / "screenshot.png"))
    parser.add_argument("--face", type=int, default=0, help="gallery position of the face to audit")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--full-page", action="store_true", help="the whole page, not only the first screen")
    parser.add_argument("--element", help="only this element (a CSS selector, e.g. #recourse-paths)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with start_app() as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        audit_gallery_face(page, url, args.face)
        page.wait_for_timeout(500)  # let the last images paint
        page.evaluate("window.scrollTo(0, 0)")
        if args.element:
            page.locator(args.element).screenshot(path=args.out)
        else:
            page.screenshot(path=args.out, full_page=args.full_page)
        height = page.evaluate("document.documentElement.scrollHeight")
        browser.close()
    print(f"wrote {args.out} (page {args.width}×{height} px)")


if __name__ == "__main__":
    main()
