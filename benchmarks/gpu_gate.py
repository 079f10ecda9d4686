"""fp16 on CUDA against the quality gate every CPU backend passes.

    python -m benchmarks --only gpu_gate                  (a machine with CUDA: both sides)
    python -m benchmarks.gpu_gate --dump DIR              (the GPU machine: its embeddings)
    DUPLENS_GPU_DUMP=DIR python -m benchmarks --only gpu_gate   (anywhere: judge a dump)

On CUDA, Duplens encodes in fp16 (`engine.encoding.model_spec.load_model` halves the model).
The candidate is that encoder exactly as the product builds it (`SentenceEncoder` at the
product's batch size); the reference is torch's float32 on the CPU, the reference of every
CPU backend's gate (`benchmarks/quality_gate.py`, rules in `engine.encoding.gate_rules`):
STSb within 0.5, pair AP within 0.3 on Quora validation and the sample pairs, the cut's pair
F1 at least 0.98 over 20,000 Quora questions, the partner in the top 5 within 0.5 points.

The two sides may run on different machines: `--dump` writes the candidate's embeddings of
every text the gate encodes (float32 as the encoder returns them, in files of at most 10,000
rows), with the GPU, the versions and a SHA-256 of the fp16 weights as they sat on the GPU.
The judge encodes the reference, rebuilds the same texts (their SHA-256 must match the
dump's) and checks that the bundled model halved here gives the same weight digest, so a
dump made from a copy of the weights is known to be the product's fp16 model bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import quality_gate

CHUNK_ROWS = 10_000          # 10,000 x 384 float32 = 15.4 MB a file
BATCH = 64                   # the product's encoder batch


def gate_texts(data: quality_gate.GateData) -> list[str]:
    """Every text the gate encodes, once each, in a fixed order."""
    pairs = [t for p in [*data.quora, *data.sample] for t in (p.text_a, p.text_b)]
    return list(dict.fromkeys([*data.sts_a, *data.sts_b, *pairs, *data.questions]))


def texts_digest(texts: list[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def weights_digest(model) -> str:
    """SHA-256 of every tensor of `model` (names, dtypes and bytes), wherever it sits."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)}".encode())
        digest.update(data.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def dump(out: Path, device: str = "cuda", data: quality_gate.GateData | None = None) -> dict:
    """The candidate side: the product's `device` encoder's embeddings of every gate text
    (`data`: the benchmark's gate data by default)."""
    import torch

    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import load_model, resolve_model

    data = data or quality_gate.load_data(with_threshold=False)
    texts = gate_texts(data)
    spec = resolve_model(None)
    model = load_model(spec, device)
    encoder = SentenceEncoder(model, spec, device, BATCH)
    encoder.encode(texts[:512])                      # warm-up: CUDA context, kernels
    started = time.perf_counter()
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for i, at in enumerate(range(0, len(texts), CHUNK_ROWS)):
        name = f"gate_vectors_{i}.npy"
        np.save(out / name, vectors[at:at + CHUNK_ROWS])
        files.append(name)
    meta = {"device": device, "dtype": str(next(model.parameters()).dtype),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else None,
            "weights_sha256": weights_digest(model), "texts": len(texts),
            "texts_sha256": texts_digest(texts), "files": files, "batch": BATCH,
            "encode_seconds": round(seconds, 2)}
    (out / "gate_meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def load_dump(where: Path, texts: list[str]) -> tuple[dict, dict[str, np.ndarray]]:
    """The dump's metadata and text -> vector, refused if it holds other texts."""
    meta = json.loads((where / "gate_meta.json").read_text(encoding="utf-8"))
    if meta["texts_sha256"] != texts_digest(texts):
        raise SystemExit(f"{where}: the dump encoded other texts than this gate's "
                         f"({meta['texts']} against {len(texts)})")
    vectors = np.concatenate([np.load(where / name) for name in meta["files"]])
    return meta, dict(zip(texts, vectors, strict=True))


def judge(where: Path, data: quality_gate.GateData | None = None) -> dict:
    """The gate for a dump: torch float32 here as the reference, the same rules (`data`:
    the benchmark's gate data by default, with the bundled model's threshold)."""
    from benchmarks.backends import _load
    from engine.encoding.backends import BACKENDS
    from engine.encoding.model_spec import load_model, resolve_model

    data = data or quality_gate.load_data()
    meta, by_text = load_dump(where, gate_texts(data))
    spec = resolve_model(None)
    halved = load_model(spec, "cpu").half()
    expected = weights_digest(halved)
    del halved
    cache = Path(os.environ.get("DUPLENS_CACHE_DIR", where / "cache"))
    encoder, _ = _load(spec, BACKENDS["torch"], cache)
    reference = quality_gate.measure(encoder.encode, data)
    del encoder

    def lookup(texts):
        return np.stack([by_text[t] for t in texts])

    found = quality_gate.measure(lookup, data)
    found.update(quality_gate.compare(found, reference, data))
    row = {k: round(v, 4) for k, v in found.items() if not k.startswith("_")}
    for key in ("stsb_spearman", "quora_ap", "sample_pairs_ap", "partner_top5"):
        row[f"{key}_loss"] = round(reference[key] - found[key], 4)
    return {"candidate": meta, "weights_match": meta["weights_sha256"] == expected,
            "reference": "torch float32 on the CPU (the bundled model as shipped)",
            "data": data.describe(),
            "torch": {k: round(v, 4) for k, v in reference.items() if not k.startswith("_")},
            "cuda_fp16": row, "gate": quality_gate.verdict(found, reference)}


def run(quick: bool) -> dict:
    """The suite's entry point: judge `DUPLENS_GPU_DUMP`, or dump and judge on CUDA here."""
    given = os.environ.get("DUPLENS_GPU_DUMP")
    if given:
        return judge(Path(given))
    from benchmarks.gpu_import import cuda_problem

    problem = cuda_problem()
    if problem:
        return {"skipped": problem}
    import tempfile

    with tempfile.TemporaryDirectory(prefix="duplens-gpu-gate-") as tmp:
        dump(Path(tmp))
        return judge(Path(tmp))


def present(result: dict, results: dict | None = None) -> dict:
    fp16, torch, gate = result["cuda_fp16"], result["torch"], result["gate"]
    meta = result["candidate"]
    figures = [("STSb Spearman x100", "stsb_spearman", "≤ 0.5 lower"),
               ("Quora validation AP", "quora_ap", "≤ 0.3 lower"),
               ("sample pairs AP", "sample_pairs_ap", "≤ 0.3 lower"),
               ("partner in the top 5 (%)", "partner_top5", "≤ 0.5 points lower")]
    rows = [[label, f"{torch[k]:.2f}", f"{fp16[k]:.2f}", f"{fp16[k + '_loss']:+.2f}", bar]
            for label, k, bar in figures]
    rows.append(["the cut: pair F1 against torch's", "1.0000", f"{fp16['cut_f1']:.4f}", "",
                 "≥ 0.98"])
    rows += [[label, "", f"{fp16[k]:.4f}", "", "reported"]
             for label, k in (("recall@10, product search", "recall_at_10"),
                              ("recall@10, exact search", "exact_recall_at_10"),
                              ("top-1 agreement", "top1_agreement"))]
    where = f"{meta['gpu']} (torch {meta['torch']}, CUDA {meta['cuda']})"
    notes = [f"Candidate: Duplens' CUDA encoder as `load_model` builds it ({meta['dtype']}, "
             f"batch {meta['batch']}) on {where}, {meta['texts']:,} texts in "
             f"{meta['encode_seconds']} s. Reference: {result['reference']}.",
             "The fp16 weights on the GPU " + (
                 "are the bundled model's own halved weights, bit for bit (SHA-256 of every "
                 "tensor checked against the model halved on the judging machine)."
                 if result["weights_match"] else
                 "differ from the bundled model's halved weights: this is not the product's "
                 "model."),
             "Failed: " + "; ".join(gate["failed"]) if gate["failed"] else
             "Every gate figure is within its bar."]
    return {"headline": [{"figure": "fp16 on CUDA: the quality gate",
                          "duplens": "passed" if gate["passed"] else "failed",
                          "baseline": "torch float32",
                          "baseline_is": "torch float32 on the CPU, same texts",
                          "ratio": "", "goal": "every gate figure within its bar",
                          "met": gate["passed"] and result["weights_match"]}],
            "tables": [{"title": f"fp16 on {meta['gpu']} against torch float32 "
                                 f"({result['data']['cut_questions']:,} questions for the "
                                 f"cut)",
                        "columns": ["figure", "torch fp32", "CUDA fp16", "loss", "bar"],
                        "rows": rows}],
            "notes": notes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=Path, required=True,
                    help="write the CUDA encoder's embeddings of the gate's texts here")
    ap.add_argument("--device", default="cuda", help="where to encode (default: cuda)")
    args = ap.parse_args()
    print(json.dumps(dump(args.dump, args.device), indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
