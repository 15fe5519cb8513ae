"""The your-own-models page: the worked example's model cards as benchmark rows beside native variants."""

from __future__ import annotations

from recourse.render.benchmark import latency_table
from scripts.docs.results import files
from scripts.docs.results.benchmark import benchmark_tables

FOREIGN = "benchmark-foreign.json"


def foreign_section() -> list[str]:
    """Your own models (docs/foreign-models.md): the worked example's cards as benchmark rows
    next to native variants, and the int8 latency against float in the same run."""
    record = files.load(FOREIGN)
    if record is None:
        return []
    lines = ["## Your own models: the worked example's cards in the benchmark", "",
             "The project's classifier exported to ONNX and `torch.export`, quantized by ONNX Runtime's static "
             "quantizer and torchao's pt2e flow (`docs/foreign-models.md`), each given by its model card "
             "(`--models`) and benchmarked against the full-precision classifier next to native variants. "
             "A black box (ONNX Runtime) guides its own recourse with gradients estimated from forward passes in "
             "the generator's face basis; the float ONNX row shows what that estimate alone costs.", "",
             *benchmark_tables("Rows", FOREIGN, record)[1:]]
    if record.get("latency"):
        lines += ["Latency of each int8 model against its float original, timed in the same run:", "",
                  latency_table(record["latency"]), ""]
    return lines


def page() -> list[str]:
    return foreign_section() or ["_The worked example's benchmark: not measured yet._ `docs/foreign-models.md` "
                                 "gives its commands.", ""]


def headline() -> str:
    """The first timed int8 model's DirSim against the full-precision classifier, and its speed-up."""
    record = files.load(FOREIGN)
    if record is None:
        return "not measured yet"
    timed = next(iter(record.get("latency", [])), None)
    row = next((row for row in record["rows"] if timed and row["method"] == timed["model"]), None)
    if row is None or row.get("dirsim") is None:
        return f"{len(record['rows'])} rows on N = {record['n']} tasks"
    return (f"`{row['method']}` ({timed['runtime']}): DirSim {row['dirsim']:.1f}% on N = {record['n']} tasks, "
            f"{timed['speedup']:.2f}× the speed of its float original")
