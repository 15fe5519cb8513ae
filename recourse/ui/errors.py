"""What the app says when something fails: the user's mistake in its own words, without server
paths; anything else as a generic message, its details in the server's log."""

from __future__ import annotations

import os
import tempfile
import traceback
from pathlib import Path

import gradio as gr

from recourse.checkpoints import CheckpointError
from recourse.data import DatasetError
from recourse.locations import assets_dir
from recourse.ui import limits

EXPECTED_ERRORS = (ValueError, CheckpointError, DatasetError, OSError)  # bad input, missing or broken checkpoints


def without_paths(error: BaseException) -> str:
    """An error's message without server paths."""
    message = str(error)
    for name, root in limits.SCAN_ROOTS.items():  # a listed folder is shown by its name only
        message = message.replace(str(root), name).replace(str(root.resolve()), name)
    for path in (str(assets_dir().parent), str(Path.cwd()), tempfile.gettempdir(), str(Path.home())):
        message = message.replace(path + os.sep, "").replace(path, "…")
    return message[:500]


class Refusal(gr.Error):
    """What a caller sent or asked for, refused: the message shown to them, and one line in the
    server's log. Gradio prints a traceback for every ``gr.Error`` by default, and a stranger's
    refused requests would fill the log with them."""

    def __init__(self, message: str) -> None:
        super().__init__(message, print_exception=False)
        print(f"refused: {message[:200]}", flush=True)


def unexpected(error: BaseException) -> gr.Error:
    """A failure nobody foresaw: its traceback to the log once, a generic message to the caller."""
    traceback.print_exception(error)
    return gr.Error("Something went wrong inside the app (logged on the server). Try again or choose other settings.",
                    print_exception=False)
