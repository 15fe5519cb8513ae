#!/usr/bin/env bash
# One call on a lent GPU machine: the face denoiser over EDM's full noise range (σ 0.002–80,
# log-normal) and the classifier's reference seeds 2 and 3, side by side on one GPU.
#
# Run from the repository root. It reads the CelebA-HQ folder from .gpu/celeba-hq-64.tar.gz and the
# wheels of diffusers and importlib_metadata from .whl (both ignored by git; docs/guide.md,
# "Training on a lent GPU", says how to fill them), and writes seven files to $OUT: the
# GPU's name, three logs and three tarballs (the denoiser's EMA weights with its curve, and
# each seed's checkpoint folder).
set -u
OUT=${OUT:-out/gpu}
DEVICE=${DEVICE:-cuda}
DATA=/tmp/celeba-hq-64
mkdir -p "$OUT"
tar -C /tmp -xzf .gpu/celeba-hq-64.tar.gz || { echo "could not unpack .gpu/celeba-hq-64.tar.gz" >&2; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "could not install the carried wheels" >&2; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, diffusers; print('torch', torch.__version__, 'diffusers', diffusers.__version__)" >> "$OUT/gpu.txt" 2>&1

# The first run's settings; the second (continuing today's committed denoiser over its own
# range, alone on the GPU) was DENOISER_ARGS="--init-from checkpoints/generator/face-denoiser
# --batch-size 256 --learning-rate 2e-4" DENOISER_MINUTES=4.5 SEEDS="" THREADS=12.
DENOISER_ARGS=${DENOISER_ARGS:---sigma-min 0.002 --sigma-max 80 --sigma-sampling lognormal --batch-size 256 --learning-rate 4e-4}
python3 -m recourse train-denoiser --data "$DATA" --state-dir /tmp/face-denoiser $DENOISER_ARGS \
    --device "$DEVICE" --threads "${THREADS:-4}" --max-minutes "${DENOISER_MINUTES:-5.5}" > "$OUT/denoiser.log" 2>&1 &
SEEDS=${SEEDS-2 3}
for seed in $SEEDS; do
    python3 -m recourse train-classifier --data "$DATA" --preset classifier --seed $seed \
        --out /tmp/classifier-seed$seed --state /tmp/classifier-seed$seed.pt --device "$DEVICE" --threads 4 \
        > "$OUT/seed$seed.log" 2>&1 &
done
wait
tar -C /tmp -cf "$OUT/face-denoiser.tar" face-denoiser/ema face-denoiser/curve.jsonl face-denoiser/train_config.json
for seed in $SEEDS; do tar -C /tmp -cf "$OUT/classifier-seed$seed.tar" classifier-seed$seed; done
ls -la "$OUT"
