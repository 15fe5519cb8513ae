"""The benchmark: ``run_benchmark(BenchmarkConfig(...)) -> BenchmarkResult``.

``settings`` (what changes the numbers) → ``tasks`` (the recourse tasks in resumable chunks, on
the paired core) of each model in ``compared_models`` → ``rows`` (the table, intervals, paired
differences) → ``run`` (loading, caching keys, processes, files).
The markdown and plots are drawn by :mod:`recourse.render.benchmark`.
"""

from recourse.benchmark.bootstrap import bootstrap_intervals
from recourse.benchmark.rows import BenchmarkRow
from recourse.benchmark.run import BenchmarkConfig, BenchmarkResult, run_benchmark
from recourse.benchmark.settings import BenchmarkSettings

__all__ = ["BenchmarkConfig", "BenchmarkResult", "BenchmarkRow", "BenchmarkSettings", "bootstrap_intervals",
           "run_benchmark"]
