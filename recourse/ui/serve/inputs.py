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

from pathlib import Path
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder

from recourse.ui.errors import Refusal

REFUSED = "Upload the photo as a file (drag it in or choose it); other ways of naming an image are not accepted."


def uploaded_path(payload: Any) -> str:
    """The server path of one uploaded file, after checking that it is a plain file inside
    Gradio's upload folder (symbolic links resolved). Refuses, with one message for every
    case so that a caller learns nothing about the server's files: a ``data:`` or web URL
    without a path, a path outside the upload folder, a missing file."""
    path = getattr(payload, "path", None) if not isinstance(payload, dict) else payload.get("path")
    url = getattr(payload, "url", None) if not isinstance(payload, dict) else payload.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        raise Refusal(REFUSED)
    if not isinstance(path, str) or not path or "\x00" in path:
        raise Refusal(REFUSED)
    folder = Path(get_upload_folder()).resolve()
    try:
        resolved = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symbolic-link loop
        raise Refusal(REFUSED) from None
    if folder not in resolved.parents or not resolved.is_file():
        raise Refusal(REFUSED)
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


class Bounded(gr.Slider):
    """``gr.Slider`` whose out-of-range refusal is a :class:`Refusal` (one line in the log, as
    every refusal) instead of Gradio's own error, which prints a traceback each time."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        try:
            return super().preprocess(payload)
        except gr.Error as error:
            raise Refusal(str(error.message)) from None


class WholeNumber(gr.Number):
    """``gr.Number`` that refuses anything but a whole number before Gradio converts it
    (Gradio's own step rounds ``2.5`` to 2 and takes ``true`` for 1, so the app's check would
    see a valid seed)."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        if payload is not None and (isinstance(payload, bool) or not isinstance(payload, (int, float))
                                    or isinstance(payload, float) and not payload.is_integer()):
            shown = repr(payload)
            raise Refusal(f"{self.label or 'value'} must be a whole number, got "
                          f"{shown[:40] + '…' if len(shown) > 40 else shown}")
        try:
            return super().preprocess(payload)
        except gr.Error as error:  # out of range: a refusal, not Gradio's error with its traceback
            raise Refusal(str(error.message)) from None


def check_choice(payload: Any, choices: list) -> None:
    """Refuse a value that is not one of ``choices``, quoting at most 40 characters of it
    (Gradio's own refusal echoes the whole value: 5 MB in, 5 MB out)."""
    if payload is not None and (not isinstance(payload, (str, int, float)) or payload not in choices):
        shown = repr(payload)
        raise Refusal(f"unknown choice {shown[:40] + '…' if len(shown) > 40 else shown}; choose one of the list")


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
