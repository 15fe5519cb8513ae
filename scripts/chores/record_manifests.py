"""Record the content manifest (``manifest.json``: SHA-256 of every file) of checkpoint folders.

    python -m scripts.chores.record_manifests                 # every committed checkpoint
    python -m scripts.chores.record_manifests FOLDER [...]    # these folders only

Checkpoints written by this project's code record their manifest when they are made; run
this for a folder made otherwise (the generator's diffusers parts, a checkpoint made before
manifests existed) and only for content you trust: loading checks every file against it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from recourse.checkpoints import CONFIG_FILE, write_manifest
from recourse.locations import checkpoints_dir, shown


def committed_folders(root: Path) -> list[Path]:
    """Every folder of ``root`` that is a checkpoint of its own: those with a ``config.json``
    read by this project's loader, and the generator as a whole (diffusers reads its parts)."""
    folders = sorted(path.parent for path in root.rglob(CONFIG_FILE)
                     if not path.parent.is_relative_to(root / "generator") or path.parent.name == "guide")
    if (root / "generator").is_dir():
        folders.append(root / "generator")
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="checkpoint folders (default: every committed one)")
    args = parser.parse_args()
    for folder in args.folders or committed_folders(checkpoints_dir()):
        print(f"recorded {shown(write_manifest(folder))}")


if __name__ == "__main__":
    main()
