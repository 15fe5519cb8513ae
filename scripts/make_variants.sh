#!/usr/bin/env bash
# Rebuild the committed compressed variants from the committed classifier, one after
# another (each records its own command and wall-clock in checkpoints/variants/<id>/config.json).
#   bash scripts/make_variants.sh ../shared/data/celeba-hq-64 [METHOD ...]
set -euo pipefail
data=${1:?usage: scripts/make_variants.sh DATA [METHOD ...]}
shift
methods=("$@")
# default: every registered method (recourse.compression.METHODS)
[ ${#methods[@]} -gt 0 ] || read -r -a methods <<< "$(python -c 'from recourse.compression import METHODS; print(*METHODS)')"
for method in "${methods[@]}"; do
    python -m recourse quantize --method "$method" --data "$data"
done
