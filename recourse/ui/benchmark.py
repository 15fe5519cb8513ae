"""The Benchmark tab: one committed benchmark run at a time, its table and its accuracy plot."""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from recourse.benchmark import BenchmarkResult
from recourse.locations import assets_dir
from recourse.render.benchmark import accuracy_plot, display_rows
from recourse.ui.errors import Refusal, without_paths
from recourse.ui.serve.inputs import OneOf

BENCHMARKS = {"test split, registered run (region edit)": "results/benchmark-primary-run/benchmark.json",
              "validation margin sweep, region edit": "results/val-sweep-primary/benchmark.json",
              "test split, denoised generator": "benchmark-denoised.json",
              "validation margin sweep, denoised generator": "results/val-sweep-denoised.json",
              "test split, cone walk (superseded)": "archive/benchmark.json",
              "test split, cone walk, second run on other faces": "archive/benchmark-second.json",
              "validation margin sweep, cone walk": "archive/benchmark-val-sweep.json"}


def first_benchmark_run() -> str:
    """The first run whose file is committed (the denoised run while it is still running: the next)."""
    return next((run for run, name in BENCHMARKS.items() if (assets_dir() / name).is_file()), next(iter(BENCHMARKS)))


def benchmark_view(run: str | None = None):
    """One benchmark run: its caption, its table and accuracy plotted against VD, CRG and DirSim."""
    run = first_benchmark_run() if run is None else run
    name = BENCHMARKS.get(run)
    if name is None:
        raise Refusal(f"unknown benchmark run; choose one of: {', '.join(BENCHMARKS)}")
    path = assets_dir() / name
    if not path.is_file():
        return (f"**No {run} benchmark yet.** Run `python -m recourse benchmark --data PATH --split test --tasks 180 "
                f"--out DIR` and copy its `benchmark.json` to `assets/{name}`.", None, None)
    try:
        result = BenchmarkResult.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, ValueError) as error:
        return f"**assets/{name} is not a benchmark file** ({without_paths(error)}).", None, None
    import pandas as pd

    headers, cells = display_rows(result)
    caption = (f"**{run}**: `{result.command}` on {result.date}, N = {result.n} recourse tasks "
               f"({', '.join(result.attributes)}). Lower VD and CRG and higher DirSim mean the compressed model "
               "keeps the full-precision recourse. Definitions: docs/metrics.md; intervals and paired differences: "
               f"assets/{name.replace('.json', '.md')}.")
    return caption, pd.DataFrame(cells, columns=headers), accuracy_plot(result)


@dataclass(frozen=True, eq=False)
class BenchmarkTab:
    """The Benchmark tab's components (build_benchmark_tab)."""

    run: OneOf
    caption: gr.Markdown
    table: gr.Dataframe
    plot: gr.Plot


def build_benchmark_tab() -> BenchmarkTab:
    """The tab's contents, opened on the first committed run."""
    run = OneOf(list(BENCHMARKS), value=first_benchmark_run(), label="Run")
    caption, table, plot = benchmark_view()
    return BenchmarkTab(run, gr.Markdown(caption, label="Benchmark run"),
                        gr.Dataframe(table, interactive=False, label="Benchmark table", wrap=True,
                                     elem_id="benchmark-table"),
                        gr.Plot(plot, label="Accuracy against recourse metrics"))
