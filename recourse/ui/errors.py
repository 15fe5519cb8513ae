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
from recourse.paths import assets_dir
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


def unexpected(error: BaseException) -> gr.Error:
    traceback.print_exception(error)  # the server's log keeps the details
    return gr.Error("Something went wrong inside the app (logged on the server). Try again or choose other settings.")
