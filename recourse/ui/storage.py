"""Where this app keeps files, and what it gives out in them.

Each running app keeps its uploads, Gradio's cache and its exports in a folder of its own
inside the shared temporary folder (recourse.ui.serve.instance_folder): it cleans only what it made,
and what a killed instance left once nobody holds it. Children (tests' app processes) share
the same base instead of nesting in this instance's folder. The folder is claimed when this
module is imported, and ``GRADIO_TEMP_DIR`` pointed into it: before any component is built.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from recourse.render.audit_html import audit_record, report_html
from recourse.ui import limits
from recourse.ui.limits import EXPORT_LIFETIME_S
from recourse.ui.serve.instance_folder import claim

TEMP_BASE = Path(os.environ.get("RECOURSE_TEMP_BASE") or os.environ.get("GRADIO_TEMP_DIR")
                 or Path(tempfile.gettempdir()) / "gradio")
os.environ["RECOURSE_TEMP_BASE"] = str(TEMP_BASE)
INSTANCE = claim(TEMP_BASE)
os.environ["GRADIO_TEMP_DIR"] = str(INSTANCE.sub("gradio"))  # read by every Gradio component built after
EXPORTS = INSTANCE.sub("gradio") / "exports"  # inside Gradio's cache: served from where they are, not copied
_EXPORT_LOCK = threading.Lock()


def shareable(record: dict) -> dict:
    """An audit's record as a public app gives it out: without the server's library versions."""
    return {key: value for key, value in record.items() if key != "versions"} if limits.PUBLIC else record


def shareable_result(result):
    """An audit as a public app gives it out, in every form (the HTML report included): without
    the server's library versions."""
    return replace(result, versions={}) if limits.PUBLIC else result


def _prune_exports() -> None:
    """Remove export folders older than an hour (also those left by an earlier run). Other
    audits may prune at the same time, so a folder that vanishes meanwhile is fine."""
    if not EXPORTS.is_dir():
        return
    for old in list(EXPORTS.iterdir()):
        try:
            if time.time() - old.stat().st_mtime > EXPORT_LIFETIME_S:
                shutil.rmtree(old, ignore_errors=True)
        except FileNotFoundError:
            continue


def export(result, source: str) -> tuple[str, str]:
    """The audit as JSON and as a one-page HTML report, in a fresh folder of its own."""
    with _EXPORT_LOCK:
        _prune_exports()
        EXPORTS.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="audit-", dir=EXPORTS))
    stem = f"audit-{result.predictions.variant}-{result.predictions.attribute}"
    json_path, html_path = folder / f"{stem}.json", folder / f"{stem}.html"
    result = shareable_result(result)
    json_path.write_text(json.dumps({"image": source, **shareable(audit_record(result))}, indent=2) + "\n")
    html_path.write_text(report_html(result, source))
    return str(json_path), str(html_path)
