"""A folder of one's own for each running app: its uploads, Gradio's cache and its exports.

Several apps may share a temporary folder (two instances on one host, a Space restarting
beside the old process). Each claims a fresh ``recourse-instance-*`` folder inside the shared
base and holds an exclusive ``flock`` on a lock file in it for as long as the process
lives; the kernel drops the lock when the process ends, however it ends. A starting app
removes only sibling instance folders whose lock it can take (their owner is gone) and that
have not changed for a while: never a running instance's files, never anything else in the
base.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PREFIX = "recourse-instance-"
LOCK_NAME = ".lock"


@dataclass(frozen=True)
class InstanceFolder:
    """This process's folder and the open lock file that marks it as alive."""

    path: Path
    lock: IO[bytes]

    def sub(self, name: str) -> Path:
        """A folder inside, made if missing."""
        folder = self.path / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def claim(base: str | os.PathLike) -> InstanceFolder:
    """A new instance folder in ``base``, locked by this process until it ends."""
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    lock = open(path / LOCK_NAME, "wb")  # noqa: SIM115 — held open for the process's life
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return InstanceFolder(path, lock)


def _abandoned(folder: Path) -> bool:
    """Whether no live process holds ``folder``'s lock (a folder without one was left half made)."""
    try:
        with open(folder / LOCK_NAME, "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(lock, fcntl.LOCK_UN)
            return True
    except FileNotFoundError:
        return True


def _last_change(folder: Path) -> float:
    """The newest modification time of the folder or anything in it."""
    newest = folder.lstat().st_mtime
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
            except FileNotFoundError:
                continue
    return newest


def prune_abandoned(base: str | os.PathLike, older_than_s: float, now: float, own: Path | None = None) -> int:
    """Remove the instance folders in ``base`` whose owner has ended and that nothing changed in
    for ``older_than_s``; returns how many went. Other entries of ``base`` are never touched."""
    base = Path(base)
    if not base.is_dir():
        return 0
    removed = 0
    for folder in base.glob(PREFIX + "*"):
        try:
            if own is not None and folder.resolve() == own.resolve():
                continue
            if folder.is_symlink() or not folder.is_dir() or not _abandoned(folder):
                continue
            if now - _last_change(folder) <= older_than_s:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        except FileNotFoundError:  # another starting instance pruned it meanwhile
            continue
    return removed
