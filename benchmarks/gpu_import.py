"""The import benchmark on a CUDA GPU: Duplens fp32 and fp16 against plain sentence-transformers.

    python -m benchmarks --only gpu_import [--quick]

Same texts (distinct Quora questions; 20,000 with --quick, all 43,944 without), same GPU,
one process, one after the other:
- baseline: `SentenceTransformer(...).encode(texts)` with its defaults (fp32, batch 32; it
  sorts by length itself), normalised;
- Duplens import (CSV parse + store + encode + index, `project.rows.import_table` +
  `project.vectors.encode`, length-sorted batches) with the model in fp32, and with fp16 as
  `engine.encoding.model_spec.load_model` loads it on CUDA, at the product's batch size (64) and
  at 256;
- bare fp16 `encode` at 256, to show what the pipeline costs on a GPU.
Each row is labelled with the dtype its model really has, read from its weights. The GPU
model, driver and CUDA version come from `nvidia-smi` and torch. Without CUDA the benchmark
records that it was skipped and why; no figure is invented. `measure(texts, "cpu")` runs the
same code on a CPU, which is how the tests check its logic (those figures are not results).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.data import write_questions_csv

GOAL_RATIO = 2.0
ROWS_QUICK = 20_000


def cuda_problem() -> str | None:
    """Why the GPU benchmark cannot run here, or None when torch sees a CUDA device."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return "torch is not installed"
    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        return (f"no CUDA device: torch {torch.__version__} ({build}) sees none; "
                f"not measured: no GPU was lent in this session")
    return None


def run(quick: bool) -> dict:
    problem = cuda_problem()
    if problem:
        return {"skipped": problem}
    import torch

    from benchmarks.data import quora_questions

    texts = quora_questions(ROWS_QUICK if quick else None)
    result = measure(texts, "cuda", warm_up=2048)
    result["gpu"] = {"nvidia_smi": _nvidia_smi(), "torch_device": torch.cuda.get_device_name(),
                     "cuda": torch.version.cuda}

    return result


def measure(texts: list[str], device: str, warm_up: int = 2048) -> dict:
    """Every configuration on `device`, in one process; labels name each model's real dtype.

    The product's load (`load_model`) decides the precision; on a CPU it stays fp32, which is
    how the tests exercise this code without a GPU.
    """
    from sentence_transformers import SentenceTransformer

    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import default_model_path, load_model, resolve_model

    spec = resolve_model(None)
    plain = SentenceTransformer(str(default_model_path()), device=device)
    plain.encode(texts[:warm_up])  # warm-up: CUDA context, kernels
    baseline_s = _timed(lambda: plain.encode(texts, normalize_embeddings=True), device)

    runs = []
    product = load_model(spec, device)
    dtype = _dtype(product)
    product.encode(texts[:warm_up], batch_size=256)
    runs.append({"name": f"bare encode, {dtype} (as Duplens loads it), batch 256",
                 "dtype": dtype,
                 "seconds": _timed(lambda: product.encode(texts, batch_size=256,
                                                          normalize_embeddings=True), device)})
    for batch in (64, 256):
        runs.append({"name": f"Duplens import, {dtype} (as Duplens loads it), batch {batch}",
                     "dtype": dtype,
                     "seconds": _import(SentenceEncoder(product, spec, device, batch), texts,
                                        device)})
    full = SentenceTransformer(str(default_model_path()), device=device)
    for batch in (64, 256):
        runs.append({"name": f"Duplens import, {_dtype(full)}, batch {batch}",
                     "dtype": _dtype(full),
                     "seconds": _import(SentenceEncoder(full, spec, device, batch), texts,
                                        device)})
    baseline_rate = len(texts) / baseline_s
    for r in runs:
        r["rows_per_s"] = round(len(texts) / r["seconds"], 1)
        r["ratio"] = round(r["rows_per_s"] / baseline_rate, 3)
        r["seconds"] = round(r["seconds"], 2)
    return {"rows": len(texts), "device": device,
            "baseline": {"name": f"plain sentence-transformers encode, defaults "
                                 f"({_dtype(plain)}, batch 32)",
                         "seconds": round(baseline_s, 2), "rows_per_s": round(baseline_rate, 1)},
            "runs": runs}


def _dtype(model) -> str:
    return str(next(model.parameters()).dtype).replace("torch.float", "fp")


def _timed(fn, device: str) -> float:
    import torch

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def _import(encoder, texts: list[str], device: str) -> float:
    from engine.project import Project

    with tempfile.TemporaryDirectory(prefix="duplens-gpu-") as tmp:
        src = Path(tmp) / "questions.csv"
        write_questions_csv(src, texts)

        def work() -> None:
            with Project.open(Path(tmp) / "gpu.duplens", create=True) as project:
                project.model.attach(encoder, is_default=True)
                project.rows.import_table(src, ["question"])
                project.vectors.encode()

        return _timed(work, device)


def _nvidia_smi() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    return out.stdout.strip() or out.stderr.strip()


def present(result: dict, results: dict | None = None) -> dict:
    base = result["baseline"]
    best = max((r for r in result["runs"] if r["name"].startswith("Duplens")),
               key=lambda r: r["rows_per_s"])
    return {
        "headline": [{"figure": f"GPU import, {result['rows']:,} rows ({best['name']})",
                      "duplens": f"{best['rows_per_s']:,.0f} rows/s",
                      "baseline": f"{base['rows_per_s']:,.0f} rows/s",
                      "baseline_is": "plain sentence-transformers encode on the same GPU, "
                                     "same run",
                      "ratio": f"{best['ratio']:.2f}×", "goal": f"≥ {GOAL_RATIO:g}×",
                      "met": best["ratio"] >= GOAL_RATIO}],
        "tables": [{"title": f"{result['rows']:,} distinct Quora questions on "
                             f"{_where(result)}",
                    "columns": ["pipeline", "seconds", "rows/s", "ratio"],
                    "rows": [[base["name"], base["seconds"], base["rows_per_s"], "1.00"]]
                    + [[r["name"], r["seconds"], r["rows_per_s"], f"**{r['ratio']:.2f}**"]
                       for r in result["runs"]]}],
    }


def _where(result: dict) -> str:
    gpu = result.get("gpu")
    return f"{gpu['nvidia_smi']} (CUDA {gpu['cuda']})" if gpu else result["device"]


if __name__ == "__main__":
    print(cuda_problem() or "CUDA available", file=sys.stderr)
