"""Measure what a small hostile model file costs to load: seconds and peak memory, each in a fresh process.

    python -m scripts.measurements.model_archive_bombs [--json PATH] [--repo PATH] [--only TEXT ...]
                                                       [--timeout S]

Builds each probe (a model card and the file it names) and loads it with
``recourse.foreign.loaders.load_foreign``, the public path, in a new Python process, after a
warm-up load of a valid model of the same format in that process (so that the runtime's own
first-use costs are not counted). Per probe it reports the outcome (refused, with the message,
or accepted), the wall seconds of the load and the resident memory it added: ``VmHWM`` after
the load minus ``VmRSS`` before it, from ``/proc/self/status``, with the high-water mark reset
(``/proc/self/clear_refs``) just before. The target: each hostile file refused or bounded in
under 2 s and under 300 MB.

* ``pt2-overlap-40`` / ``-80``: a 10 MB ``torch.export`` archive (a real one, plus a block of
  raw bytes) whose 40 (80) extra weight entries share that block: each entry's local header
  lies inside the previous entry's data, so every entry reads to the block's end.
* ``pt2-same-offset``: two central-directory entries pointing at one local header.
* ``onnx-constant-of-shape``: ``ConstantOfShape`` of a constant shape of 750 million floats
  (3 GB), a few hundred bytes of file. ``onnx-shape-ops``: the same size from the input's own
  dimensions through ``Shape``/``Gather``/``Mul``/``Expand``. ``onnx-sparse``: a sparse constant
  of 2 GB dense (ONNX Runtime itself refuses 3 GB). ``onnx-input-valued``: a size computed from
  the input's values, which no static check sees. ``onnx-text``: a one-character string doubled
  by ``StringConcat`` to 64 MB.
* ``safetensors-metadata-88mb``: a valid state with 88 MB of ``__metadata__`` (a million short
  notes); ``safetensors-header-padded``: a valid state whose header is padded to 12 MB.
* ``*-valid``: the same small model, unmodified, in each format.

``--repo`` measures another checkout (``git worktree add /tmp/before <commit>``) with the same
files; ``--only`` keeps the probes whose name contains any of the texts.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TARGET_SECONDS, TARGET_MB = 2.0, 300.0

# --- building files -----------------------------------------------------------------

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")


def stored_zip(parts: list[tuple[str, bytes]], chain: list[str] = (), block: bytes = b"",
               same_offset: tuple[str, str] | None = None) -> bytes:
    """A zip of ``parts`` stored one after another; then the entries ``chain``, whose local
    headers follow each other and whose data each run to the end of ``block`` (so that every
    one of them reads the block); ``same_offset`` names an entry of ``parts`` and a second name
    that the central directory points at the same local header."""
    out, central = bytearray(), []
    for name, content in parts:
        offset, encoded = len(out), name.encode()
        out += _LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(content), len(content), len(content),
                           len(encoded), 0) + encoded + content
        central.append((encoded, offset, zlib.crc32(content), len(content)))
        if same_offset and name == same_offset[0]:
            central.append((same_offset[1].encode(), offset, zlib.crc32(content), len(content)))
    starts = []
    for name in chain:
        encoded = name.encode()
        starts.append((encoded, len(out)))
        out += _LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(encoded), 0) + encoded
    out += block
    for encoded, offset in starts:  # the reader takes sizes and CRCs from the central directory
        content = bytes(out[offset + _LOCAL.size + len(encoded):])
        central.append((encoded, offset, zlib.crc32(content), len(content)))
    directory = len(out)
    for encoded, offset, crc, size in central:
        out += _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, size, size, len(encoded), 0, 0, 0, 0, 0,
                             offset) + encoded
    out += _END.pack(b"PK\x05\x06", 0, 0, len(central), len(central), len(out) - directory, directory, 0)
    return bytes(out)


def overlapping_program(program: bytes, entries: int, size: int) -> bytes:
    """The ``torch.export`` archive ``program`` plus ``entries`` weight entries that all read
    one block of raw bytes, the whole file ``size`` bytes."""
    source = zipfile.ZipFile(io.BytesIO(program))
    parts = [(info.filename, source.read(info)) for info in source.infolist()]
    root = parts[0][0].split("/", 1)[0]
    chain = [f"{root}/data/weights/weight_{1000 + k}" for k in range(entries)]
    head = len(stored_zip(parts, chain))
    return stored_zip(parts, chain, bytes(max(0, size - head)))


def same_offset_program(program: bytes) -> bytes:
    """``program`` with a second weight entry pointing at its first entry's local header."""
    source = zipfile.ZipFile(io.BytesIO(program))
    parts = [(info.filename, source.read(info)) for info in source.infolist()]
    root = parts[0][0].split("/", 1)[0]
    return stored_zip(parts, same_offset=(parts[0][0], f"{root}/data/weights/weight_1000"))


def onnx_probe(kind: str, elements: int) -> bytes:
    """A model taking (N, 3, 96, 96) images to (N, 3) outputs: the images' channel means plus
    one number computed from a tensor of ``elements`` floats made as ``kind`` says."""
    from onnx import TensorProto, helper, numpy_helper

    def i64(name: str, value) -> TensorProto:
        return numpy_helper.from_array(np.array(value, np.int64), name)

    def f32(name: str, value) -> TensorProto:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    node = helper.make_node
    total = [node("ReduceSum", ["big"], ["extra"], keepdims=0)]
    if kind == "constant-of-shape":
        nodes, constants = [node("ConstantOfShape", ["shape"], ["big"], value=one)], [i64("shape", [elements])]
    elif kind == "shape-ops":  # (H·a, W·b) from the input's own 96×96
        side = int(round((elements / 96 ** 2) ** 0.5))
        nodes = [node("Shape", ["x"], ["dims"]), node("Gather", ["dims", "hw"], ["sides"]),
                 node("Mul", ["sides", "scale"], ["size"]), node("Expand", ["unit", "size"], ["big"])]
        constants = [i64("hw", [2, 3]), i64("scale", [side, side]), f32("unit", [1.0])]
    elif kind == "sparse":
        indices = helper.make_tensor("at", TensorProto.INT64, [1], [0])
        nodes, constants = [node("Constant", [], ["big"], sparse_value=helper.make_sparse_tensor(one, indices,
                                                                                                  [elements]))], []
    elif kind == "input-valued":  # elements + the sum of the input: zero for a blank image
        nodes = [node("ReduceSum", ["x"], ["sum"], keepdims=0), node("Reshape", ["sum", "flat"], ["sum1"]),
                 node("Add", ["sum1", "base"], ["count"]), node("Cast", ["count"], ["shape"], to=TensorProto.INT64),
                 node("ConstantOfShape", ["shape"], ["big"], value=one)]
        constants = [i64("flat", [1]), f32("base", [float(elements)])]
    elif kind == "text":  # "0" doubled log2(elements) times, read back as a number
        doublings = max(1, int(np.log2(elements)))
        nodes = [node("ReduceSum", ["x"], ["sum"], keepdims=0), node("Cast", ["sum"], ["text0"], to=TensorProto.STRING)]
        nodes += [node("StringConcat", [f"text{k}", f"text{k}"], [f"text{k + 1}"]) for k in range(doublings)]
        nodes += [node("Cast", [f"text{doublings}"], ["zero"], to=TensorProto.FLOAT),
                  node("Reshape", ["zero", "flat"], ["big"])]
        constants = [i64("flat", [1])]
    else:
        raise ValueError(f"unknown ONNX probe {kind!r}")
    nodes += total + [node("ReduceMean", ["x", "axes"], ["mean"], keepdims=0), node("Add", ["mean", "extra"], ["y"])]
    graph = helper.make_graph(nodes, "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 96, 96])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                              constants + [i64("axes", [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model.SerializeToString()


def safetensors_probe(state: dict, metadata_bytes: int = 0, header_bytes: int = 0) -> bytes:
    """``state`` as safetensors with ``metadata_bytes`` of ``__metadata__`` and its header padded
    with spaces (which the format allows) to at least ``header_bytes``."""
    from safetensors.torch import save

    notes = {f"note{k:08d}": "x" * 64 for k in range(metadata_bytes // 82)}  # 82 bytes of JSON each
    data = save(state, metadata=notes or None)
    (length,) = struct.unpack("<Q", data[:8])
    header, rest = data[8:8 + length], data[8 + length:]
    header += b" " * max(0, header_bytes - len(header))
    return struct.pack("<Q", len(header)) + header + rest


def small_model():
    """The tests' deliberately different model (tests/foreign_models.py): PlainConvNet, 96×96, three outputs."""
    import torch

    from recourse.foreign.architectures import PlainConvNet

    torch.manual_seed(0)
    return PlainConvNet((6, 12, 12), 3, "silu", "sigmoid").eval()


def card(fmt: str, weights: str) -> dict:
    value = {"card_version": 1, "name": "probe", "format": fmt, "weights": weights,
             "input": {"size": [96, 96], "channel_order": "RGB", "layout": "NCHW", "value_range": [0, 1],
                       "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "framing": "celeba-hq"},
             "output": {"kind": "probabilities", "attributes": ["Young", "Smiling", "Male"]}}
    if fmt == "safetensors":
        value["architecture"] = {"name": "PlainConvNet", "config": {"widths": [6, 12, 12], "outputs": 3,
                                                                   "activation": "silu", "head": "sigmoid"}}
    return value


def write_probe(folder: Path, fmt: str, data: bytes) -> Path:
    weights = {"torch-export": "model.pt2", "onnx": "model.onnx", "safetensors": "model.safetensors"}[fmt]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / weights).write_bytes(data)
    (folder / "recourse-card.json").write_text(json.dumps(card(fmt, weights)))
    return folder


def build(folder: Path) -> dict[str, tuple[str, Path]]:
    """Every probe: name → (format, folder holding its card and file)."""
    import torch

    from recourse.foreign.export import export_onnx, save_program

    model = small_model()
    example = torch.rand(2, 3, 96, 96)
    save_program(model, example, folder / "source.pt2")
    export_onnx(model, example, folder / "source.onnx")
    program, plain_onnx = (folder / "source.pt2").read_bytes(), (folder / "source.onnx").read_bytes()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    big = 750_000_000  # 3 GB of float32, as in the measured ConstantOfShape model
    makers: dict[str, tuple[str, Callable[[], bytes]]] = {
        "pt2-valid": ("torch-export", lambda: program),
        "pt2-overlap-40": ("torch-export", lambda: overlapping_program(program, 40, 10 * 2**20)),
        "pt2-overlap-80": ("torch-export", lambda: overlapping_program(program, 80, 10 * 2**20)),
        "pt2-same-offset": ("torch-export", lambda: same_offset_program(program)),
        "onnx-valid": ("onnx", lambda: plain_onnx),
        "onnx-constant-of-shape": ("onnx", lambda: onnx_probe("constant-of-shape", big)),
        "onnx-shape-ops": ("onnx", lambda: onnx_probe("shape-ops", big)),
        "onnx-sparse": ("onnx", lambda: onnx_probe("sparse", 500_000_000)),  # ONNX Runtime refuses 3 GB itself
        "onnx-input-valued": ("onnx", lambda: onnx_probe("input-valued", big)),
        "onnx-text": ("onnx", lambda: onnx_probe("text", 2**26)),
        "safetensors-valid": ("safetensors", lambda: safetensors_probe(state)),
        "safetensors-metadata-88mb": ("safetensors", lambda: safetensors_probe(state, metadata_bytes=88 * 10**6)),
        "safetensors-header-padded": ("safetensors", lambda: safetensors_probe(state, header_bytes=12 * 2**20)),
    }
    return {name: (fmt, write_probe(folder / name, fmt, make())) for name, (fmt, make) in makers.items()}


# --- measuring ----------------------------------------------------------------------

# Runs inside the measured process: prints one JSON line.
PROBE = r"""
import gc, json, sys, time
from recourse.foreign.loaders import ForeignModelError, load_foreign

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # MiB
warm_up, folder = sys.argv[1], sys.argv[2]
load_foreign(warm_up)  # the runtime's first-use costs, and a check that valid files still load
gc.collect()
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # VmHWM starts again from VmRSS
before = status("VmRSS")
started = time.perf_counter()
try:
    loaded = load_foreign(folder)
    outcome, message = "accepted", f"loaded ({loaded.runtime})"
except ForeignModelError as error:
    outcome, message = "refused", str(error).replace(folder, "<probe>")
seconds = time.perf_counter() - started
print(json.dumps({"outcome": outcome, "message": message, "seconds": round(seconds, 3),
                  "rss_growth_mb": round(status("VmHWM") - before, 1)}))
"""


def measure(repo: Path, warm_up: Path, folder: Path, timeout: float) -> dict:
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, str(warm_up), str(folder)], cwd=repo, capture_output=True,
                              text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(repo)})
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "message": f"still loading after {timeout:.0f} s", "seconds": timeout,
                "rss_growth_mb": None}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"outcome": "crashed", "message": (done.stderr.strip().splitlines() or ["?"])[-1][:300],
                "seconds": None, "rss_growth_mb": None}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--only", nargs="*", default=None, help="keep probes whose name contains any of these")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a load is stopped")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.repo, capture_output=True,
                            text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="model-bombs-") as tmp:
        probes = build(Path(tmp))
        valid = {fmt: folder for name, (fmt, folder) in probes.items() if name.endswith("-valid")}
        for name, (fmt, folder) in probes.items():
            if args.only and not any(text in name for text in args.only):
                continue
            file = next(path for path in folder.iterdir() if path.name != "recourse-card.json")
            row = {"probe": name, "format": fmt, "file_bytes": file.stat().st_size,
                   **measure(args.repo.resolve(), valid[fmt], folder, args.timeout)}
            hostile = not name.endswith("-valid")
            row["within_target"] = (not hostile or row["outcome"] == "refused") and row["seconds"] is not None and \
                row["seconds"] < TARGET_SECONDS and row["rss_growth_mb"] is not None and \
                row["rss_growth_mb"] < TARGET_MB
            rows.append(row)
            growth = "?" if row["rss_growth_mb"] is None else f"{row['rss_growth_mb']:.0f}"
            seconds = "?" if row["seconds"] is None else f"{row['seconds']:.2f}"
            print(f"{name:27s} {row['file_bytes']:>11,d} B  {row['outcome']:8s} {seconds:>7s} s {growth:>7s} MB  "
                  f"{row['message'][:110]}", flush=True)
    report = {"command": "python -m scripts.measurements.model_archive_bombs " + " ".join(sys.argv[1:] if argv is None
                                                                                         else argv),
              "commit": commit, "python": sys.version.split()[0],
              "target": {"seconds": TARGET_SECONDS, "rss_growth_mb": TARGET_MB,
                         "hostile": "refused (or bounded) within both; valid: accepted within both"},
              "probes": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
