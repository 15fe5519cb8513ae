#!/usr/bin/env bash
# The registered placement run (assets/results/benchmark-placement.json; issue 54), resumable: run it
# again in a later session and it goes on from the parts kept in assets/results/benchmark-placement-parts
# (commit them before a session ends). Each launch logs its start for the wall time (recourse run-segments).
# Its command is scripts/docs/results/placement_benchmark.py's RUN_COMMAND, which the benchmark page shows.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "segment start $(date -u +%Y-%m-%dT%H:%M:%S+00:00)" >> assets/results/benchmark-placement-segments.log
command=$(python -c "from scripts.docs.results.placement_benchmark import RUN_COMMAND; print(RUN_COMMAND)")
eval "$command"
