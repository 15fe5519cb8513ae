#!/usr/bin/env bash
# The registered placement run (assets/results/benchmark-placement.json; issue 54), resumable: run it
# again in a later session and it goes on from the parts kept in assets/results/benchmark-placement-parts
# (commit them before a session ends). Each launch logs its start for the wall time (recourse run-segments).
# Its command is scripts/docs/results/placement_benchmark.py's RUN_COMMAND, which the benchmark page shows.
# The run spans sessions while main moves on, so every part is made by one code: the commit CODE_COMMIT,
# checked out in a worktree beside the repository whose parts folder and out/ are this checkout's.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
read -r commit command < <(python -c "
from scripts.docs.results.placement_benchmark import CODE_COMMIT, RUN_COMMAND
print(CODE_COMMIT, RUN_COMMAND)")
code="$repo/../placement-code-${commit:0:7}"
if [ ! -d "$code" ]; then
    git worktree add --detach "$code" "$commit"
fi
parts=$(python -c "from scripts.docs.results.placement_benchmark import PARTS; print(PARTS)")
rm -rf "$code/$parts" "$code/out"
mkdir -p "$repo/out"
ln -s "$repo/$parts" "$code/$parts"
ln -s "$repo/out" "$code/out"
echo "segment start $(date -u +%Y-%m-%dT%H:%M:%S+00:00)" >> assets/results/benchmark-placement-segments.log
cd "$code"
eval "$command"
