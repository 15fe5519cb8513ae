"""A run's per-task columns, saved beside its record: every statistic of the record can then be
recomputed without the models, the faces or the cache (:mod:`recourse.benchmark.recompute`).

One compressed ``.npz`` (``np.savez_compressed``) of plain arrays, read with
``allow_pickle=False``: never a pickle, so a file from elsewhere cannot run code. It holds
each task's id and attribute, the student rows' names in the table's order, and every field of
:class:`recourse.audit.paired.RecourseColumns` stacked over the rows (``(rows, tasks)``, the partial
edits ``(rows, tasks, α)``), and the judges' readings of each row's own recourse and of the
teacher's (:class:`recourse.benchmark.semantic.SemanticColumns`, as ``semantic_<field>``;
a file without them reads back without them; ``semantic_face_seen``, whether the judge already
sees each face on its target's side, is written where every row's records kept it, and a file
without it reads back with None there). The record names the file and its SHA-256.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from recourse.audit.paired import RecourseColumns
from recourse.benchmark.semantic import OPTIONAL_SEMANTIC_FIELDS, SEMANTIC_FIELDS, SemanticColumns, semantic_columns
from recourse.benchmark.tasks import record_columns

COLUMNS_FILE = "benchmark-columns.npz"
FORMAT = 1
_FIELDS = tuple(f.name for f in fields(RecourseColumns))
_DTYPES = {"target": np.int64, "teacher_valid": np.bool_, "student_accepts_teacher": np.bool_,
           "student_valid": np.bool_, "semantic_judged": np.bool_, "semantic_teacher_seen": np.bool_,
           "semantic_student_seen": np.bool_}  # the rest float64
_SEMANTIC = tuple(f"semantic_{name}" for name in SEMANTIC_FIELDS)
_OPTIONAL = tuple(f"semantic_{name}" for name in OPTIONAL_SEMANTIC_FIELDS)  # written where every row has it


@dataclass(frozen=True)
class SavedColumns:
    """What a run saved: the tasks (id, attribute) and each student row's columns, in order."""

    tasks: tuple[int, ...]
    attributes: tuple[str, ...]
    rows: dict[str, RecourseColumns]
    semantic: dict[str, SemanticColumns] = field(default_factory=dict)  # {} in a file without them


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def columns_of_records(records: list[dict], names: list[str]) -> SavedColumns:
    """The columns of the student rows ``names`` from a run's task records."""
    records = sorted(records, key=lambda r: r["task"])
    return SavedColumns(tuple(int(r["task"]) for r in records), tuple(str(r["attribute"]) for r in records),
                        {name: record_columns(records, name) for name in names},
                        {name: semantic_columns(records, name) for name in names})


def write_columns(path: Path, saved: SavedColumns) -> dict:
    """Write ``saved`` to ``path``; returns what the record says of it: its file name (beside
    the record) and SHA-256."""
    names = list(saved.rows)
    arrays = {"format": np.array(FORMAT, dtype=np.int64), "tasks": np.array(saved.tasks, dtype=np.int64),
              "attributes": np.array(saved.attributes, dtype=np.str_), "rows": np.array(names, dtype=np.str_)}
    for name in _FIELDS:
        stacked = [getattr(saved.rows[row], name).numpy() for row in names]
        arrays[name] = np.stack(stacked).astype(_DTYPES.get(name, np.float64)) if stacked else np.zeros((0, 0))
    if saved.semantic:
        for name, key in zip(SEMANTIC_FIELDS, _SEMANTIC):
            stacked = [getattr(saved.semantic[row], name).numpy() for row in names]
            arrays[key] = np.stack(stacked).astype(_DTYPES.get(key, np.float64)) if stacked else np.zeros((0, 0))
        for name, key in zip(OPTIONAL_SEMANTIC_FIELDS, _OPTIONAL):
            stacked = [getattr(saved.semantic[row], name) for row in names]
            if stacked and all(column is not None for column in stacked):
                arrays[key] = np.stack([column.numpy() for column in stacked]).astype(np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(temporary, **arrays)
    temporary.replace(path)
    return {"file": path.name, "sha256": file_sha256(path)}


def read_columns(path: Path) -> SavedColumns:
    """Read a columns file (never unpickling), or raise ValueError saying what is wrong with it."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a columns file ({error})") from None
    missing = [key for key in ("format", "tasks", "attributes", "rows", *_FIELDS) if key not in arrays]
    if missing or int(arrays["format"]) != FORMAT:
        raise ValueError(f"{path}: not a columns file of format {FORMAT} (missing: {', '.join(missing) or 'none'})")
    names, tasks = [str(n) for n in arrays["rows"]], len(arrays["tasks"])
    present = [key for key in _SEMANTIC if key in arrays]
    if present and len(present) != len(_SEMANTIC):
        raise ValueError(f"{path}: the judges' readings are incomplete (missing: "
                         f"{', '.join(k for k in _SEMANTIC if k not in arrays)})")
    optional = [key for key in _OPTIONAL if key in arrays and present]
    for name in (*_FIELDS, *present, *optional):
        if arrays[name].shape[:2] != (len(names), tasks):
            raise ValueError(f"{path}: {name} has shape {arrays[name].shape}, not ({len(names)}, {tasks}, ...)")
    rows = {row: RecourseColumns(**{name: torch.from_numpy(np.ascontiguousarray(arrays[name][k]))
                                    for name in _FIELDS}) for k, row in enumerate(names)}
    semantic = {row: SemanticColumns(**{name: torch.from_numpy(np.ascontiguousarray(arrays[key][k]))
                                        for name, key in zip((*SEMANTIC_FIELDS, *OPTIONAL_SEMANTIC_FIELDS),
                                                             (*_SEMANTIC, *_OPTIONAL)) if key in arrays})
                for k, row in enumerate(names)} if present else {}
    return SavedColumns(tuple(int(t) for t in arrays["tasks"]), tuple(str(a) for a in arrays["attributes"]), rows,
                        semantic)
