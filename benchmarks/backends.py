"""Fast CPU path: ONNX Runtime and OpenVINO (fp32, optimised, int8) against plain torch, and
the quality gate that decides which of them a new project encodes with by default.

    python -m benchmarks.backends [--quick]      (or: python -m benchmarks --only backends)
    python -m benchmarks.backends --gate-only [--backends NAME ...]   (the gate, no timing)

Every backend the settings offer runs the bundled all-MiniLM-L6-v2 as Duplens serves it
(`load_encoder(None, device="cpu", backend=...)`: sentence-transformers with the transformer
swapped for the backend's export, or for OpenVINO int8 the torch-free encoder with the
shipped export), in one process, side by side with plain sentence-transformers (torch) on
the same texts in the same order, batch size 64:

- bulk: sentences/s encoding distinct Quora questions, in chunks of 500; the backends take
  turns chunk by chunk, several rounds, and each keeps its fastest time per chunk, so a
  noisy neighbour on the machine hurts all of them alike;
- single query: one question at a time (what a keystroke costs), p50/p95 in ms;
- the quality gate (benchmarks/quality_gate.py): STSb Spearman, held-out Quora AP,
  sample-question pair AP, the cut at the default threshold and the partner in the top 5,
  each against torch's in the same run (recall@10 of search reported); the fastest backend
  that passes is this CPU class's default, and the page says whether the code's
  (`CPU_CLASS_DEFAULTS`) agrees. Each class's default is chosen by whole imports with the
  kernels capped to it (benchmarks/cpu_classes.py);
- the query path: queries encoded by the "onnx" backend (torch's embeddings, what the
  command line used before) against a corpus stored by openvino-int8, against all-int8;
- the first load of each backend (the export into a fresh cache folder, or the shipped one).

`--quick` is a smoke run: fewer texts timed, and the gate's data cut down (200 STSb pairs,
400 Quora pairs, 1,000 questions), too small for a verdict. The full run adds
optimum's other CPU levels (O1, O3, no optimisation) and the avx2 flavour of dynamic int8,
timed only.
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

from benchmarks import quality_gate
from benchmarks.data import quora_questions

RESULTS = Path(__file__).resolve().parent / "results"
GATE_RESULTS = RESULTS / "gate"
BATCH = 64
CHUNK = 500          # texts per timed call (see `run`)
GOAL_RATIO = 2.0
GOAL_SPEARMAN_LOSS = 0.5
QUICK_GATE_STS, QUICK_GATE_PAIRS, QUICK_GATE_QUESTIONS = 200, 400, 1_000   # a smoke run's gate


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
    from engine.encoding.cpu_features import cpu_flags, cpu_isa

    flags = cpu_flags()
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16",
              "amx_bf16", "amx_int8")
    return {"flags": [f for f in wanted if f in flags], "int8_isa": cpu_isa()}


def class_of(flags: list[str]) -> str:
    """The CPU class (`cpu_features.cpu_class`) of a recorded run's flags."""
    from engine.encoding.cpu_features import class_of_flags

    return class_of_flags(set(flags))


def _load(spec, backend, cache: Path, batch: int = BATCH):
    """`backend` as Duplens serves it (a `SentenceEncoder`), its exports made in `cache`;
    (encoder, seconds to export or find + load). Variants the settings do not offer are
    swapped into sentence-transformers the same way."""
    from engine.encoding.backends import BACKENDS
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.loading import load_encoder
    from engine.encoding.model_spec import load_model, with_backend

    os.environ["DUPLENS_CACHE_DIR"] = str(cache)
    t0 = time.perf_counter()
    if backend.name in BACKENDS:
        encoder = load_encoder(None, device="cpu", backend=backend.name, batch_size=batch)
    else:
        from engine.encoding.runtime import exported_file, use_exported

        model = load_model(spec, "cpu")
        use_exported(model, backend, exported_file(model, spec.fingerprint, backend))
        encoder = SentenceEncoder(model, with_backend(spec, "torch"), "cpu", batch)
    return encoder, time.perf_counter() - t0


def _threads(encoder) -> int:
    runner = getattr(encoder, "_runner", None)
    if runner is not None and hasattr(runner, "threads"):
        return runner.threads
    import torch

    return torch.get_num_threads()


def run(quick: bool) -> dict:
    """Measure every available backend; the dict the suite runner saves (see run.py)."""
    from engine.encoding.backends import missing_modules, unsupported_here
    from engine.encoding.model_spec import resolve_model

    n_texts, rounds, n_queries = (500, 1, 50) if quick else (5000, 3, 500)
    load_before = os.getloadavg()[0]
    texts = quora_questions(n_texts + n_queries)
    bulk, queries = texts[:n_texts], texts[n_texts:n_texts + n_queries]
    gate_data = (quality_gate.load_data(QUICK_GATE_QUESTIONS, quora_pairs=QUICK_GATE_PAIRS,
                                        sts_pairs=QUICK_GATE_STS) if quick
                 else quality_gate.load_data())
    spec = resolve_model(None)

    rows: dict[str, dict] = {}
    encoders: dict[str, object] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="duplens-backends-") as cache:
        for backend in variants(quick):
            missing = missing_modules(backend)
            if missing:
                skipped[backend.name] = f"not installed: {', '.join(missing)}"
                continue
            why = unsupported_here(backend)
            if why:   # bf16 on a CPU without the units: a row this CPU cannot run
                skipped[backend.name] = f"not run on this CPU: {why}"
                continue
            _say(f"  {backend.name}: export and load…")
            encoder, seconds = _load(spec, backend, Path(cache))
            encoder.encode(bulk[:BATCH])  # warm-up (graph compilation, allocations)
            encoders[backend.name] = encoder
            rows[backend.name] = {"label": backend.label, "exact": backend.exact,
                                  "served": "torch-free" if encoder.model is None
                                  else "sentence-transformers",
                                  "threads": _threads(encoder),
                                  "export_and_load_s": round(seconds, 1)}

        # Bulk throughput. The texts are cut into chunks; each round encodes every chunk
        # with every backend in turn, and each backend keeps its fastest time per chunk,
        # so a burst of load from elsewhere on the machine costs all of them alike.
        reference = encoders["torch"].encode(bulk)
        chunks = [bulk[i:i + CHUNK] for i in range(0, len(bulk), CHUNK)]
        fastest = {name: [float("inf")] * len(chunks) for name in encoders}
        for r in range(rounds):
            for c, chunk in enumerate(chunks):
                for name, encoder in encoders.items():
                    t0 = time.perf_counter()
                    encoder.encode(chunk)
                    fastest[name][c] = min(fastest[name][c], time.perf_counter() - t0)
            _say(f"  round {r + 1}/{rounds}: " + ", ".join(
                f"{n} {len(bulk) / sum(fastest[n]):.0f}/s" for n in encoders))
        for name, encoder in encoders.items():
            rows[name]["sentences_per_s"] = round(len(bulk) / sum(fastest[name]), 1)
            cos = np.sum(encoder.encode(bulk) * reference, axis=1)
            rows[name]["min_cosine_to_torch"] = round(float(cos.min()), 6)
            rows[name]["mean_cosine_to_torch"] = round(float(cos.mean()), 6)

        # Single-query latency, interleaved query by query.
        lat = {name: [] for name in encoders}
        for q in queries:
            for name, encoder in encoders.items():
                t0 = time.perf_counter()
                encoder.encode([q])
                lat[name].append(1000 * (time.perf_counter() - t0))
        for name in encoders:
            rows[name]["query_p50_ms"] = round(float(np.percentile(lat[name], 50)), 2)
            rows[name]["query_p95_ms"] = round(float(np.percentile(lat[name], 95)), 2)

        # The quality gate, for the backends the settings offer.
        figures = {}
        for name in [n for n in encoders if n in _offered()]:
            _say(f"  quality gate: {name}…")
            figures[name] = quality_gate.measure(encoders[name].encode, gate_data)
        for name, found in figures.items():
            found.update(quality_gate.compare(found, figures["torch"], gate_data))
            row = rows[name]
            row["stsb_spearman"] = round(found["stsb_spearman"], 2)
            row["quora_ap"] = round(found["quora_ap"], 2)
            row["sample_pairs_ap"] = round(found["sample_pairs_ap"], 2)
            row["cut_f1"] = round(found["cut_f1"], 4)
            row["partner_top5"] = round(found["partner_top5"], 2)
            row["recall_at_10"] = round(found["recall_at_10"], 4)
            row["exact_recall_at_10"] = round(found["exact_recall_at_10"], 4)
            row["top1_agreement"] = round(found["top1_agreement"], 4)
            row["gate"] = quality_gate.verdict(found, figures["torch"])
        mixing = _query_mixing(figures, gate_data)
    base = rows["torch"]
    for row in rows.values():
        row["ratio_to_torch"] = round(row["sentences_per_s"] / base["sentences_per_s"], 2)
        row["query_speedup"] = round(base["query_p50_ms"] / row["query_p50_ms"], 2)
        if "stsb_spearman" in row:
            row["spearman_delta"] = round(row["stsb_spearman"] - base["stsb_spearman"], 2)
            row["quora_ap_delta"] = round(row["quora_ap"] - base["quora_ap"], 2)
            row["sample_pairs_ap_delta"] = round(row["sample_pairs_ap"]
                                                 - base["sample_pairs_ap"], 2)
    # Backends not installed are "not_installed": a result's "skipped" means to the report
    # that the whole benchmark did not run.
    return {"mode": "quick" if quick else "full", "cpu": cpu_summary(),
            "threads": sorted({r["threads"] for r in rows.values()}),
            "texts": n_texts, "rounds": rounds, "queries": n_queries, "batch_size": BATCH,
            "backend_versions": _backend_versions(), "backends": rows,
            "not_installed": skipped, "cores": os.cpu_count(),
            "load_average": round(max(load_before, os.getloadavg()[0]), 2),
            "gate": {"data": gate_data.describe(), "tolerances": tolerances()},
            "query_mixing": mixing}


def run_gate(names: list[str] | None = None) -> dict:
    """The quality gate alone (no timing): each offered backend (or `names`; torch always
    runs, as the reference) encodes the gate's data, in one process, and gets its verdict
    against torch's figures from the same run. What `--gate-only` saves."""
    from engine.encoding.backends import BACKENDS, missing_modules, unsupported_here
    from engine.encoding.model_spec import resolve_model

    wanted = ["torch", *[n for n in (names or list(BACKENDS)) if n != "torch"]]
    unknown = [n for n in wanted if n not in BACKENDS]
    if unknown:
        raise SystemExit(f"unknown backend(s): {', '.join(unknown)}; use: {', '.join(BACKENDS)}")
    gate_data = quality_gate.load_data()
    spec = resolve_model(None)
    figures: dict[str, dict] = {}
    not_installed: dict[str, str] = {}
    served: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="duplens-gate-") as cache:
        for name in wanted:
            missing = missing_modules(BACKENDS[name])
            if missing:
                not_installed[name] = f"not installed: {', '.join(missing)}"
                continue
            why = unsupported_here(BACKENDS[name])
            if why:
                not_installed[name] = f"not run on this CPU: {why}"
                continue
            _say(f"  quality gate: {name}…")
            encoder, _ = _load(spec, BACKENDS[name], Path(cache))
            served[name] = "torch-free" if encoder.model is None else "sentence-transformers"
            figures[name] = quality_gate.measure(encoder.encode, gate_data)
            del encoder
    rows = {}
    for name, found in figures.items():
        found.update(quality_gate.compare(found, figures["torch"], gate_data))
        rows[name] = {"served": served[name],
                      **{k: round(v, 4) for k, v in found.items() if not k.startswith("_")}}
        if name != "torch":
            rows[name]["gate"] = quality_gate.verdict(found, figures["torch"])
            for key in ("stsb_spearman", "quora_ap", "sample_pairs_ap"):
                rows[name][f"{key}_loss"] = round(figures["torch"][key] - found[key], 4)
    return {"data": gate_data.describe(), "rows": rows, "not_installed": not_installed,
            "tolerances": tolerances(), "query_mixing": _query_mixing(figures, gate_data)}


def tolerances() -> dict:
    """The gate's rules as this run judged by them (the page prints the recorded ones)."""
    return {"stsb_spearman_loss": quality_gate.STSB_LOSS,
            "pair_ap_loss": quality_gate.PAIR_AP_LOSS, "min_cut_f1": quality_gate.MIN_CUT_F1,
            "partner_k": quality_gate.PARTNER_K, "partner_loss": quality_gate.PARTNER_LOSS}


def rules_in_words(tol: dict) -> str:
    """The recorded rules in words: a run before 2026-11-29 gated on recall@10."""
    words = [f"STSb loss ≤ {tol.get('stsb_spearman_loss', 0.3)}",
             f"pair AP loss ≤ {tol.get('pair_ap_loss', 0.5)}"]
    if "min_cut_f1" in tol:
        words += [f"cut F1 ≥ {tol['min_cut_f1']}",
                  f"partner in top {tol['partner_k']} loss ≤ {tol['partner_loss']}"]
    else:
        words.append(f"recall@10 ≥ {tol.get('min_recall_at_10', 0.98)}")
    return ", ".join(words)


def _offered() -> set[str]:
    from engine.encoding.backends import BACKENDS

    return set(BACKENDS)


def _query_mixing(figures: dict, data) -> dict | None:
    """Queries encoded by the "onnx" backend (fp32, torch's embeddings) searched against a
    corpus stored by openvino-int8, against int8 queries on the same corpus (exact search)."""
    if not {"onnx", "openvino-int8"} <= set(figures):
        return None
    corpus, queries = data.search_slices
    int8, fp32, torch = (figures[n]["_questions"] for n in ("openvino-int8", "onnx", "torch"))
    same = quality_gate.exact_top(int8[corpus], int8[queries])
    mixed = quality_gate.exact_top(int8[corpus], fp32[queries])
    torch_truth = quality_gate.exact_top(torch[corpus], torch[queries])
    return {"corpus": len(int8[corpus]), "queries": len(int8[queries]),
            "mixed_recall_at_10_vs_all_int8": round(quality_gate.recall(mixed, same), 4),
            "mixed_top1_agreement_vs_all_int8": round(
                quality_gate.top1_agreement(mixed, same), 4),
            "all_int8_recall_at_10_vs_torch": round(quality_gate.recall(same, torch_truth), 4),
            "mixed_recall_at_10_vs_torch": round(quality_gate.recall(mixed, torch_truth), 4),
            "all_int8_top1_vs_torch": round(quality_gate.top1_agreement(same, torch_truth), 4),
            "mixed_top1_vs_torch": round(quality_gate.top1_agreement(mixed, torch_truth), 4)}


def _gate_table(rows: dict, tol: dict) -> dict:
    columns = ["backend", "STSb Spearman", "Δ", "Quora AP", "Δ", "sample-pair AP", "Δ",
               "recall@10 (HNSW)", "recall@10 (exact)", "top-1 agreement", "gate"]
    table = [[n, r["stsb_spearman"], r["spearman_delta"], r["quora_ap"], r["quora_ap_delta"],
              r["sample_pairs_ap"], r["sample_pairs_ap_delta"], r["recall_at_10"],
              r["exact_recall_at_10"], r["top1_agreement"],
              "reference" if n == "torch" else ("passes" if r["gate"]["passed"] else
                                                "fails: " + "; ".join(r["gate"]["failed"]))]
             for n, r in rows.items()]
    return {"title": f"Quality gate (against torch, same run): {rules_in_words(tol)}",
            "columns": columns, "rows": table}


def _mixing_table(mixing: dict) -> dict:
    return {"title": f"Query path: queries by another backend than the stored embeddings "
                     f"({mixing['queries']} queries, {mixing['corpus']:,} stored texts, "
                     f"exact search)",
            "columns": ["queries", "stored", "recall@10 vs all-int8", "top-1 vs all-int8",
                        "recall@10 vs torch", "top-1 vs torch"],
            "rows": [["openvino-int8", "openvino-int8", 1.0, 1.0,
                      mixing["all_int8_recall_at_10_vs_torch"],
                      mixing["all_int8_top1_vs_torch"]],
                     ["onnx (fp32)", "openvino-int8",
                      mixing["mixed_recall_at_10_vs_all_int8"],
                      mixing["mixed_top1_agreement_vs_all_int8"],
                      mixing["mixed_recall_at_10_vs_torch"], mixing["mixed_top1_vs_torch"]]]}


def present(result: dict, results: dict | None = None, hardware: dict | None = None) -> dict:
    """Headline, tables and notes from the backends measured (benchmarks/report.py): the
    timing table, and where the run measured the quality gate, its table, the default it
    chooses (`quality_gate.choose_default`) and whether the code's default for this CPU's
    class and vendor (`class_default_name`; `hardware`: the results file's) is that one.
    Results from before the gate have no "gate" rows and show timing only."""
    from engine.encoding.backends import class_default_name
    from engine.encoding.cpu_features import vendor_of

    klass = class_of(result["cpu"]["flags"])
    code_default = class_default_name(klass, vendor_of((hardware or {}).get("cpu", "")))

    rows, cpu = result["backends"], result["cpu"]
    met = {n: r for n, r in rows.items() if n != "torch" and r["ratio_to_torch"] >= GOAL_RATIO
           and r.get("spearman_delta", -99) >= -GOAL_SPEARMAN_LOSS}
    # the full run's extra variants are timed only: no quality figures
    best = max((n for n in rows if n != "torch" and "stsb_spearman" in rows[n]),
               key=lambda n: rows[n]["ratio_to_torch"], default=None)
    threads = result["threads"] if isinstance(result["threads"], list) else [result["threads"]]
    served = any("served" in r for r in rows.values())   # measured since the gate came
    columns = ["backend", *(["served", "threads"] if served else []), "sentences/s",
               "× torch", "query p50 ms", "query p95 ms", "STSb Spearman", "Δ vs torch",
               "min cos to torch", "first load s" if served else "export s"]
    table = [[n, *([r["served"], r["threads"]] if served else []), r["sentences_per_s"],
              r["ratio_to_torch"], r["query_p50_ms"], r["query_p95_ms"],
              r.get("stsb_spearman", "–"), r.get("spearman_delta", "–"),
              r["min_cosine_to_torch"], r["export_and_load_s"]]
             for n, r in rows.items()]
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
    tables = [{"title": "Backends on this CPU (ratios against torch, same run)",
               "columns": columns, "rows": table}]
    notes = []
    gated = {n: r for n, r in rows.items() if "gate" in r}
    if gated:
        default, why = quality_gate.choose_default(gated)
        d, t = rows[default], rows["torch"]
        headline.insert(0, {
            "figure": "CPU default backend: the fastest that passes the quality gate",
            "duplens": f"{default}: {d['sentences_per_s']:.0f} sentences/s, STSb "
                       f"{d['stsb_spearman']:.2f}, Quora AP {d['quora_ap']:.2f}, "
                       f"recall@10 {d['recall_at_10']:.3f}",
            "baseline": f"{t['sentences_per_s']:.0f} sentences/s, STSb "
                        f"{t['stsb_spearman']:.2f}, Quora AP {t['quora_ap']:.2f}",
            "baseline_is": "plain sentence-transformers (torch), the gate's reference, on the "
                           "same texts in the same run",
            "ratio": f"{d['ratio_to_torch']:.2f}×",
            "goal": f"the code's default for this CPU's class, {klass} ({code_default}), "
                    "is this verdict",
            "met": default == code_default,
        })
        tables.append(_gate_table(gated, result["gate"].get("tolerances", {})))
        notes.append(f"Default: {why}. The code's default for this CPU's class ({klass}) is "
                     f"{code_default}"
                     + ("" if default == code_default else
                        f", which DISAGREES with this verdict ({default})") + ".")
        data = result["gate"]["data"]
        notes.append(
            f"Quality gate data: {quality_gate.data_words(data)}; the int8 calibration "
            f"rows are left out of the sample pairs; search: {data['search_queries']:,} questions "
            f"against {data['search_corpus']:,} others, recall@10 against torch's exact "
            f"neighbours.")
    if result.get("query_mixing"):
        tables.append(_mixing_table(result["query_mixing"]))
    notes += [
        f"{result['texts']:,} distinct Quora questions in chunks of {CHUNK}, batch "
        f"{result['batch_size']}, {'/'.join(map(str, threads))} threads"
        + (" (the \"threads\" column: torch's and OpenVINO's own counts)" if served else
           " for every backend")
        + f", each chunk's fastest of {result['rounds']} interleaved rounds; single query: "
        f"{result['queries']} other questions one at a time, interleaved; CPU flags: "
        f"{', '.join(cpu['flags']) or 'none found'}.",
        "sentence-transformers' own backend='onnx'/'openvino' need optimum-onnx or "
        "optimum-intel, which cap transformers below 4.58 / 5.6 (Duplens pins 5.23); the "
        "same exports are made with torch.onnx, onnxruntime's optimiser and quantiser, "
        "OpenVINO and NNCF directly.",
        "openvino-int8 is calibrated on the 300 first shipped sample questions.",
    ]
    if served:
        notes.append(
            "openvino-int8 ships with Duplens (duplens_data/models/, "
            "packaging/build_fast_model.py) and is served torch-free (\"served\"): "
            "`tokenizers`, OpenVINO with a batch in flight per stream, NumPy pooling, "
            "checked against sentence-transformers running the same file.")
    if not ({"avx512_bf16", "amx_bf16"} & set(cpu["flags"])):
        notes.append("torch bf16 on the CPU is not tried: this CPU has neither avx512_bf16 "
                     "nor AMX, so bf16 matmuls would be emulated.")
    notes += [f"{name}: skipped, {why}" for name, why in result.get("not_installed", {}).items()]
    load = result.get("load_average", 0)
    if load > 1.5:
        notes.append(
            f"Measured with other work on the machine (load average up to {load:.1f} on "
            f"{result.get('cores', 2)} cores): torch slows "
            "down far more than ONNX Runtime and OpenVINO under load, so these ratios "
            "overstate the gain on a quiet machine.")
    return {"headline": headline, "tables": tables, "notes": notes}


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
    ap.add_argument("--quick", action="store_true", help="a smoke run: the offered backends, "
                    "fewer texts timed, the gate's data cut down (no verdict); written to "
                    "results/quick/backends.json")
    ap.add_argument("--gate-only", action="store_true", help="only the quality gate's "
                    "figures, no timing; written to results/gate/backends_gate.json")
    ap.add_argument("--backends", nargs="+", metavar="NAME", help="with --gate-only: these "
                    "backends (torch always runs, as the reference); default every offered one")
    args = ap.parse_args(argv)
    from benchmarks.registry import BY_NAME
    from benchmarks.run import QUICK_RESULTS, hardware, versions

    date = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    if args.gate_only:
        gate = run_gate(args.backends)
        record = {"benchmark": "backends_gate", "title": "Quality gate (no timing)",
                  "command": "python -m benchmarks.backends --gate-only"
                  + (f" --backends {' '.join(args.backends)}" if args.backends else ""),
                  "date": date, "wall_seconds": round(time.perf_counter() - t0, 1),
                  "hardware": hardware(), "versions": {**versions(), **{
                      k: v for k, v in _backend_versions().items() if v}},
                  "result": gate}
        # A folder of its own: the report renders every file of results/ itself, and this
        # run's figures are the full run's gate (backends.json) without its timing.
        path = GATE_RESULTS / "backends_gate.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        print(json.dumps(gate["rows"], indent=1))
        _say(f"written to {path}")
        return 0
    result = run(args.quick)
    found = {**versions(), **{k: v for k, v in result["backend_versions"].items() if v}}
    record = {"benchmark": "backends", "title": BY_NAME["backends"].title,
              "mode": "quick" if args.quick else "full",
              "command": "python -m benchmarks.backends" + (" --quick" if args.quick else ""),
              "date": date, "wall_seconds": round(time.perf_counter() - t0, 1),
              "hardware": {**hardware(), "cpu_flags": result["cpu"]["flags"]},
              "versions": found, "result": result}
    folder = QUICK_RESULTS if args.quick else RESULTS   # a smoke run's, as benchmarks.run
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "backends.json"
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    table = present(result)["tables"][0]
    for row in [table["columns"], *table["rows"]]:
        print(" | ".join(str(c) for c in row))
    _say(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
