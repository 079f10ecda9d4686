"""Fast CPU path: ONNX Runtime and OpenVINO (fp32, optimised, int8) against plain torch.

    python -m benchmarks.backends [--quick]      (or: python -m benchmarks --only backends)

Every backend runs the bundled all-MiniLM-L6-v2 as Duplens loads it (`load_model(spec,
"cpu", backend)`: sentence-transformers' tokenizer, pooling and `encode`, the transformer
exported to the backend), in one process, side by side with plain sentence-transformers
(torch) on the same texts in the same order, batch size 64, with the same thread count:

- bulk: sentences/s encoding distinct Quora questions, in chunks of 500; the backends take
  turns chunk by chunk, several rounds, and each keeps its fastest time per chunk, so a
  noisy neighbour on the machine hurts all of them alike;
- single query: one question at a time (what a keystroke costs), p50/p95 in ms;
- quality: STS benchmark test split (1,379 pairs), Spearman x100 of cosine similarity, and
  how far each backend's embeddings are from torch's (lowest and mean cosine);
- the one-off export time (into a fresh cache folder).

`--quick` measures the five backends the settings offer; the full run adds optimum's other
CPU levels (O1, O3, no optimisation) and the avx2 flavour of dynamic int8.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.data import STSB_TEST, quora_questions

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 64
CHUNK = 500          # texts per timed call (see `run`)
GOAL_RATIO = 2.0
GOAL_SPEARMAN_LOSS = 0.5


def variants(quick: bool) -> list:
    """The user-facing backends, plus (full run) the other export choices worth knowing."""
    from engine.encoding.backends import BACKENDS, Backend

    chosen = list(BACKENDS.values())
    if not quick:
        onnx = ("onnxruntime", "onnx")
        chosen += [
            Backend("onnx-o0", "onnx", "ONNX Runtime, no optimiser", modules=onnx),
            Backend("onnx-o1", "onnx", "ONNX Runtime, O1", optimization=1, modules=onnx),
            Backend("onnx-o3", "onnx", "ONNX Runtime, O3 (GELU approximated)",
                    exact=False, optimization=3, modules=onnx),
            Backend("onnx-int8-o0", "onnx", "ONNX Runtime int8 of the unoptimised graph",
                    exact=False, quantization="dynamic", modules=onnx),
            Backend("onnx-int8-avx2", "onnx", "ONNX Runtime int8, avx2 config (uint8)",
                    exact=False, optimization=2, quantization="dynamic", modules=onnx),
        ]
    return chosen


def cpu_summary() -> dict:
    from engine.encoding.conversion import cpu_flags, cpu_isa

    flags = cpu_flags()
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16",
              "amx_bf16", "amx_int8")
    return {"flags": [f for f in wanted if f in flags], "int8_isa": cpu_isa()}


def _read_sts() -> tuple[list[str], list[str], np.ndarray]:
    import csv

    s1, s2, gold = [], [], []
    with STSB_TEST.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            s1.append(row["sentence1"])
            s2.append(row["sentence2"])
            gold.append(float(row["score"]))
    return s1, s2, np.asarray(gold)


def _encode(model, texts: list[str]) -> np.ndarray:
    return model.encode(texts, batch_size=BATCH, convert_to_numpy=True,
                        normalize_embeddings=True, show_progress_bar=False)


def _load(spec, backend, cache: Path) -> tuple[object, float]:
    """The model with `backend`, exported into `cache`; (model, seconds to export + load)."""
    from engine.encoding.model_spec import load_model

    os.environ["DUPLENS_CACHE_DIR"] = str(cache)
    t0 = time.perf_counter()
    if backend.runtime == "torch":
        model = load_model(spec, "cpu")
    else:
        from engine.encoding.runtime import calibration_texts, exported_file, use_exported

        model = load_model(spec, "cpu")
        texts = calibration_texts() if backend.quantization == "static" else None
        use_exported(model, backend, exported_file(model, spec.fingerprint, backend,
                                                   calibration_texts=texts))
    return model, time.perf_counter() - t0


def run(quick: bool) -> dict:
    """Measure every available backend; the dict the suite runner saves (see run.py)."""
    from scipy.stats import spearmanr

    from engine.encoding.backends import missing_modules
    from engine.encoding.model_spec import resolve_model

    if not STSB_TEST.exists():
        raise SystemExit(f"benchmark data not found: {STSB_TEST} (set DUPLENS_SHARED)")
    n_texts, rounds, n_queries = (1000, 3, 100) if quick else (5000, 3, 500)
    load_before = os.getloadavg()[0]
    texts = quora_questions(n_texts + n_queries)
    bulk, queries = texts[:n_texts], texts[n_texts:n_texts + n_queries]
    s1, s2, gold = _read_sts()
    spec = resolve_model(None)

    import torch

    threads = torch.get_num_threads()
    rows: dict[str, dict] = {}
    models: dict[str, object] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="duplens-backends-") as cache:
        for backend in variants(quick):
            missing = missing_modules(backend)
            if missing:
                skipped[backend.name] = f"not installed: {', '.join(missing)}"
                continue
            _say(f"  {backend.name}: export and load…")
            model, seconds = _load(spec, backend, Path(cache))
            _encode(model, bulk[:BATCH])  # warm-up (graph compilation, allocations)
            models[backend.name] = model
            rows[backend.name] = {"label": backend.label, "exact": backend.exact,
                                  "export_and_load_s": round(seconds, 1)}

        # Bulk throughput. The texts are cut into chunks; each round encodes every chunk
        # with every backend in turn, and each backend keeps its fastest time per chunk,
        # so a burst of load from elsewhere on the machine costs all of them alike.
        reference = _encode(models["torch"], bulk)
        chunks = [bulk[i:i + CHUNK] for i in range(0, len(bulk), CHUNK)]
        fastest = {name: [float("inf")] * len(chunks) for name in models}
        for r in range(rounds):
            for c, chunk in enumerate(chunks):
                for name, model in models.items():
                    t0 = time.perf_counter()
                    _encode(model, chunk)
                    fastest[name][c] = min(fastest[name][c], time.perf_counter() - t0)
            _say(f"  round {r + 1}/{rounds}: " + ", ".join(
                f"{n} {len(bulk) / sum(fastest[n]):.0f}/s" for n in models))
        for name, model in models.items():
            rows[name]["sentences_per_s"] = round(len(bulk) / sum(fastest[name]), 1)
            cos = np.sum(_encode(model, bulk) * reference, axis=1)
            rows[name]["min_cosine_to_torch"] = round(float(cos.min()), 6)
            rows[name]["mean_cosine_to_torch"] = round(float(cos.mean()), 6)

        # Single-query latency, interleaved query by query.
        lat = {name: [] for name in models}
        for q in queries:
            for name, model in models.items():
                t0 = time.perf_counter()
                model.encode([q], batch_size=1, normalize_embeddings=True,
                             show_progress_bar=False)
                lat[name].append(1000 * (time.perf_counter() - t0))

        # Quality.
        for name, model in models.items():
            a, b = _encode(model, s1), _encode(model, s2)
            rows[name]["stsb_spearman"] = round(
                100 * float(spearmanr(np.sum(a * b, axis=1), gold).statistic), 2)
            rows[name]["query_p50_ms"] = round(float(np.percentile(lat[name], 50)), 2)
            rows[name]["query_p95_ms"] = round(float(np.percentile(lat[name], 95)), 2)
    base = rows["torch"]
    for row in rows.values():
        row["ratio_to_torch"] = round(row["sentences_per_s"] / base["sentences_per_s"], 2)
        row["query_speedup"] = round(base["query_p50_ms"] / row["query_p50_ms"], 2)
        row["spearman_delta"] = round(row["stsb_spearman"] - base["stsb_spearman"], 2)
    return {"mode": "quick" if quick else "full", "cpu": cpu_summary(), "threads": threads,
            "texts": n_texts, "rounds": rounds, "queries": n_queries, "batch_size": BATCH,
            "backend_versions": _backend_versions(), "backends": rows, "skipped": skipped,
            "cores": os.cpu_count(),
            "load_average": round(max(load_before, os.getloadavg()[0]), 2)}


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, table and notes from the backends measured (benchmarks/report.py)."""
    rows, cpu = result["backends"], result["cpu"]
    met = {n: r for n, r in rows.items() if n != "torch" and r["ratio_to_torch"] >= GOAL_RATIO
           and r["spearman_delta"] >= -GOAL_SPEARMAN_LOSS}
    best = max((n for n in rows if n != "torch"), key=lambda n: rows[n]["ratio_to_torch"],
               default=None)
    columns = ["backend", "sentences/s", "× torch", "query p50 ms", "query p95 ms",
               "STSb Spearman", "Δ vs torch", "min cos to torch", "export s"]
    table = [[n, r["sentences_per_s"], r["ratio_to_torch"], r["query_p50_ms"],
              r["query_p95_ms"], r["stsb_spearman"], r["spearman_delta"],
              r["min_cosine_to_torch"], r["export_and_load_s"]] for n, r in rows.items()]
    headline = []
    if best is not None:
        b = rows[best]
        headline.append({
            "figure": f"bulk encoding, fastest CPU backend ({best})",
            "duplens": f"{b['sentences_per_s']:.0f} sentences/s, STSb {b['stsb_spearman']:.2f}",
            "baseline": f"{rows['torch']['sentences_per_s']:.0f} sentences/s, STSb "
                        f"{rows['torch']['stsb_spearman']:.2f}",
            "baseline_is": "plain sentence-transformers (torch) on the same texts, chunks "
                           "interleaved with the backends', same run",
            "ratio": f"{b['ratio_to_torch']:.2f}×",
            "goal": f"≥ {GOAL_RATIO:g}× with ≤ {GOAL_SPEARMAN_LOSS} Spearman lost",
            "met": best in met,
        })
    notes = [
        f"{result['texts']:,} distinct Quora questions in chunks of {CHUNK}, batch "
        f"{result['batch_size']}, {result['threads']} threads for every backend, each chunk's "
        f"fastest of {result['rounds']} interleaved rounds; single query: "
        f"{result['queries']} other questions one at a time, interleaved; CPU flags: "
        f"{', '.join(cpu['flags']) or 'none found'}.",
        "sentence-transformers' own backend='onnx'/'openvino' need optimum-onnx or "
        "optimum-intel, which cap transformers below 4.58 / 5.6 (Duplens pins 5.23); the "
        "same exports are made with torch.onnx, onnxruntime's optimiser and quantiser, "
        "OpenVINO and NNCF directly.",
        "openvino-int8 is calibrated on the 300 first shipped sample questions.",
    ]
    if not ({"avx512_bf16", "amx_bf16"} & set(cpu["flags"])):
        notes.append("torch bf16 on the CPU is not tried: this CPU has neither avx512_bf16 "
                     "nor AMX, so bf16 matmuls would be emulated.")
    notes += [f"{name}: skipped, {why}" for name, why in result.get("skipped", {}).items()]
    load = result.get("load_average", 0)
    if load > 1.5:
        notes.append(
            f"Measured with other work on the machine (load average up to {load:.1f} on "
            f"{result.get('cores', 2)} cores): torch slows "
            "down far more than ONNX Runtime and OpenVINO under load, so these ratios "
            "overstate the gain on a quiet machine.")
    return {"headline": headline,
            "tables": [{"title": "Backends on this CPU (ratios against torch, same run)",
                        "columns": columns, "rows": table}],
            "notes": notes}


def _backend_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("onnxruntime", "onnx", "openvino", "nncf"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the five offered backends, fewer "
                    "texts (a few minutes)")
    args = ap.parse_args(argv)
    from benchmarks.run import hardware, versions

    date = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    result = run(args.quick)
    found = {**versions(), **{k: v for k, v in result["backend_versions"].items() if v}}
    record = {"benchmark": "backends", "title": "Fast CPU path (ONNX, OpenVINO)",
              "mode": "quick" if args.quick else "full",
              "command": "python -m benchmarks.backends" + (" --quick" if args.quick else ""),
              "date": date, "wall_seconds": round(time.perf_counter() - t0, 1),
              "hardware": {**hardware(), "cpu_flags": result["cpu"]["flags"]},
              "versions": found, "result": result}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "backends.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    table = present(result)["tables"][0]
    for row in [table["columns"], *table["rows"]]:
        print(" | ".join(str(c) for c in row))
    _say(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
