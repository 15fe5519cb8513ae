"""The app's input components, hardened against what a stranger may send.

Uploads as the app receives them: a path inside Gradio's upload folder, and nothing else.

Gradio's own image input opens whatever path a request names when the file object has no
``meta`` (its upload-folder check only runs when ``meta`` is there), decodes ``data:`` URLs
of any size, and converts non-RGB images in full before the app's caps can apply. The input
components here replace that step: they check the path and hand it on unopened, so that
``recourse.faces`` (header checks before any pixel is decoded) is the only decoder.

Imported by the app only: the library itself needs no Gradio.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterable

import gradio as gr
from gradio.utils import get_upload_folder

REFUSED = "Upload the photo as a file (drag it in or choose it); other ways of naming an image are not accepted."


def uploaded_path(payload: Any) -> str:
    """The server path of one uploaded file, after checking that it is a plain file inside
    Gradio's upload folder (symbolic links resolved). Refuses, with one message for every
    case so that a caller learns nothing about the server's files: a ``data:`` or web URL
    without a path, a path outside the upload folder, a missing file."""
    path = getattr(payload, "path", None) if not isinstance(payload, dict) else payload.get("path")
    url = getattr(payload, "url", None) if not isinstance(payload, dict) else payload.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        raise gr.Error(REFUSED)
    if not isinstance(path, str) or not path or "\x00" in path:
        raise gr.Error(REFUSED)
    folder = Path(get_upload_folder()).resolve()
    try:
        resolved = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symbolic-link loop
        raise gr.Error(REFUSED) from None
    if folder not in resolved.parents or not resolved.is_file():
        raise gr.Error(REFUSED)
    return str(resolved)


# No __init__ of their own in these subclasses: Gradio sends the browser the properties it
# finds in the signature of the component's __init__, so a narrower one would lose them.


class UploadedImage(gr.Image):
    """``gr.Image`` that never opens the file: whatever its ``type``, it returns the checked
    path of an upload (see :func:`uploaded_path`). The browser shows an ordinary image input."""

    is_template = True  # Gradio then draws it with its base class's front end (gr.Image)

    def preprocess(self, payload: Any) -> str | None:
        return None if payload is None else uploaded_path(payload)


class UploadedFiles(gr.File):
    """``gr.File`` whose files are checked as :func:`uploaded_path` does: a list of paths, at
    most ``limit`` of them (the rest are not looked at)."""

    is_template = True
    limit = 256

    def preprocess(self, payload: Any) -> list[str] | None:
        if payload is None:
            return None
        files = list(payload.root) if hasattr(payload, "root") else payload if isinstance(payload, list) else [payload]
        return [uploaded_path(file) for file in files[:self.limit]]


def check_choice(payload: Any, choices: list) -> None:
    """Refuse a value that is not one of ``choices``, quoting at most 40 characters of it
    (Gradio's own refusal echoes the whole value: 5 MB in, 5 MB out)."""
    if payload is not None and (not isinstance(payload, (str, int, float)) or payload not in choices):
        shown = repr(payload)
        raise gr.Error(f"unknown choice {shown[:40] + '…' if len(shown) > 40 else shown}; choose one of the list")


class Choice(gr.Dropdown):
    """``gr.Dropdown`` refusing unknown values as :func:`check_choice` does."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        check_choice(payload, [value for _, value in self.choices])
        return super().preprocess(payload)


class OneOf(gr.Radio):
    """``gr.Radio`` refusing unknown values as :func:`check_choice` does."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        check_choice(payload, [value for _, value in self.choices])
        return super().preprocess(payload)


def prune_folder(folder: str | os.PathLike, older_than_s: float, now: float, keep: Iterable[str] = ()) -> int:
    """Remove what lies in ``folder`` and was last changed more than ``older_than_s`` ago,
    except entries that hold a path of ``keep``: what a killed server left behind (Gradio
    only cleans what its own run made). Entries that vanish meanwhile (another server
    pruning) are fine. Returns how many went."""
    removed = 0
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    kept = {Path(path).absolute() for path in keep}
    for entry in list(folder.iterdir()):
        try:
            if now - entry.lstat().st_mtime <= older_than_s:
                continue
            if any(path == entry.absolute() or entry.absolute() in path.parents for path in kept):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed += 1
        except FileNotFoundError:
            continue
    return removed
