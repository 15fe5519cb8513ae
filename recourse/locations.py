"""Where the project's files live, resolved one way for the library, the CLI and the app.

The committed checkpoints and assets sit beside the package in a source checkout. An
installed package (``pip install .``) has no checkout around it, so it looks in the
working directory instead; ``RECOURSE_HOME`` names the folder that holds ``checkpoints/``
and ``assets/`` explicitly, so that the installed ``recourse`` command works from any
folder. The 100 MB of checkpoints are not shipped in the wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parents[1]


def project_root() -> Path:
    """The folder holding ``checkpoints/`` and ``assets/``."""
    if "RECOURSE_HOME" in os.environ:
        return Path(os.environ["RECOURSE_HOME"])
    if (_SOURCE_ROOT / "checkpoints").is_dir():
        return _SOURCE_ROOT
    return Path.cwd()


def checkpoints_dir() -> Path:
    return project_root() / "checkpoints"


def home_message() -> str:
    """One line for a user whose committed models are not where they were looked for (an
    installed package run outside the clone that holds ``checkpoints/``)."""
    where = "RECOURSE_HOME" if "RECOURSE_HOME" in os.environ else "the working directory"
    return (f"no committed models: {checkpoints_dir()} does not exist ({where}). Set RECOURSE_HOME to the "
            "folder holding checkpoints/, a clone of the recourse-audit repository: "
            "RECOURSE_HOME=/path/to/clone recourse ...")


def require_checkpoints() -> None:
    """A ValueError with :func:`home_message` when there is no ``checkpoints/`` folder."""
    if not checkpoints_dir().is_dir():
        raise ValueError(home_message())


def teacher_dir() -> Path:
    """The full-precision classifier under audit."""
    return checkpoints_dir() / "classifier"


def oracle_dir() -> Path:
    """The independent classifier that judges counterfactuals and never guides them."""
    return checkpoints_dir() / "oracle"


def judge_dir() -> Path:
    """The adversarially robust classifier that judges counterfactuals; it never guides them."""
    return checkpoints_dir() / "judge"


def strong_judge_dir() -> Path:
    """The second, stronger robust judge (radius 3): it only scores, never guides."""
    return checkpoints_dir() / "strong-judge"


def guide_dir() -> Path:
    """The adversarially robust classifier whose gradient keeps guidance semantic: a part of
    the generator."""
    return generator_dir() / "guide"


def generator_dir() -> Path:
    return checkpoints_dir() / "generator"


def variants_dir() -> Path:
    """One folder per compressed variant, named after its method."""
    return checkpoints_dir() / "variants"


def assets_dir() -> Path:
    return project_root() / "assets"


def shown(path: Path) -> str:
    """A path as users may see it: relative to the project where it lies inside it, so that
    messages never reveal where the server keeps its files."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(project_root().resolve()))
    except ValueError:
        return path.name


def writable_file(path: str | os.PathLike) -> Path:
    """``path`` if a file can be written there (its folder exists or can be made, and is
    writable), else a ValueError saying why: checked before a long run, not after it."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"cannot write {path}: it is a folder; give a file name")
    _check_creatable(path.parent, path)
    return path


def writable_folder(path: str | os.PathLike) -> Path:
    """``path`` if it is, or can be made, a writable folder, else a ValueError saying why."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"cannot write into {path}: it is a file, not a folder")
    _check_creatable(path, path)
    return path


def _check_creatable(folder: Path, target: Path) -> None:
    existing = folder
    while not existing.exists() and existing != existing.parent:  # the nearest folder that exists
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"cannot write {target}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {target}: {existing} is not writable")


DEFAULT_CACHE = Path(".cache")  # decoded images and resumable state, under the working directory
