"""Each app instance cleans only its own temporary folders: a running instance's files are
never touched, an ended one's are removed once old, and nothing else in the shared base."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from recourse.ui.serve.instance_folder import LOCK_NAME, PREFIX, claim, prune_abandoned

OLD = time.time() - 7200


def _age(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)


def _claim_in_child(base: Path) -> subprocess.Popen:
    """Another process holding an instance folder until its stdin closes."""
    code = ("import sys; from recourse.ui.serve.instance_folder import claim; f = claim(sys.argv[1]); "
            "(f.path / 'upload.png').write_bytes(b'x'); print(f.path, flush=True); sys.stdin.read()")
    return subprocess.Popen([sys.executable, "-c", code, str(base)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parents[1])


def test_a_running_instances_folder_is_never_pruned_however_old(tmp_path):
    """Was: start-up removed every entry of the shared upload folder older than 15 minutes
    that the starting app had not made (526 files of another running instance)."""
    child = _claim_in_child(tmp_path)
    try:
        theirs = Path(child.stdout.readline().strip())
        _age(theirs)
        mine = claim(tmp_path)
        assert prune_abandoned(tmp_path, 900, time.time(), own=mine.path) == 0
        assert (theirs / "upload.png").is_file()
    finally:
        child.stdin.close()
        child.wait(timeout=60)


def test_an_ended_instances_old_folder_goes_and_nothing_else(tmp_path):
    child = _claim_in_child(tmp_path)
    ended = Path(child.stdout.readline().strip())
    child.stdin.close()
    child.wait(timeout=60)  # its lock is gone with it
    recent = _claim_in_child(tmp_path)
    recent_path = Path(recent.stdout.readline().strip())
    recent.stdin.close()
    recent.wait(timeout=60)
    other_app = tmp_path / "someone-elses-upload"
    other_app.mkdir()
    (other_app / "file.png").write_bytes(b"x")
    half_made = tmp_path / f"{PREFIX}half"
    half_made.mkdir()
    for folder in (ended, other_app, half_made):
        _age(folder)
    mine = claim(tmp_path)
    assert prune_abandoned(tmp_path, 900, time.time(), own=mine.path) == 2
    assert not ended.exists() and not half_made.exists()
    assert recent_path.exists()  # ended, but changed within the lifetime
    assert (other_app / "file.png").is_file() and (mine.path / LOCK_NAME).is_file()


def test_the_app_keeps_uploads_and_exports_in_its_own_folder():
    import app

    assert Path(os.environ["GRADIO_TEMP_DIR"]) == app.INSTANCE.path / "gradio"
    assert app.EXPORTS.parent == app.INSTANCE.path / "gradio" and app.INSTANCE.path.parent == app.TEMP_BASE
