"""The default backend of each CPU class, measured: the quality gate and the whole import
command against plain sentence-transformers, on this CPU as it is and capped to the classes
below it.

    python -m benchmarks --only cpu_classes [--quick]
    DUPLENS_BENCH_CPU_CLASSES=avx2 python -m benchmarks --only cpu_classes   # one class

Analysts' laptops mostly lack the bfloat16 units of server CPUs, so the backend a new project
gets is chosen per class (`engine.encoding.cpu_features.cpu_class`,
`backends.CPU_CLASS_DEFAULTS`):

- **amx**: AMX bfloat16 tiles (Sapphire Rapids and later Xeons): this CPU as it is, where
  it has them;
- **bf16**: AVX512-BF16 units without AMX (Zen 4 and 5, Cooper Lake, a Xeon whose AMX is
  not enabled): this CPU as it is where it has no AMX, else capped to `AVX512_CORE_BF16`
  (oneMKL to `AVX512_E3`). The same bf16 model ran at 2.18x plain sentence-transformers on
  AMX and slower than torch on an Intel Xeon without it, so they are two classes;
- **int8**: int8 dot-product units (AVX512-VNNI), no bf16: the kernels capped to
  `AVX512_CORE_VNNI` (Cascade Lake and Ice Lake Xeons, Zen 4 without its bf16 path);
- **avx2**: neither: the kernels capped to `AVX2` (Haswell to Zen 3, most laptops before
  2021).

A class is forced by capping every library's kernels in a child process, and the cap is
checked there, not assumed: `ONEDNN_MAX_CPU_ISA` and `OV_CPU_MAX_ISA` (OpenVINO's CPU plugin:
its optimisation capabilities and the kernels its fully connected layers were compiled to,
read from the runtime model after a batch), `ATEN_CPU_CAPABILITY` (torch's own kernels:
`torch.backends.cpu.get_cpu_capability()`) and `MKL_ENABLE_INSTRUCTIONS` (the matrix products
of torch's linear layers: oneMKL's verbose line names the instruction set it ran). MLAS,
in OpenVINO and in ONNX Runtime, reads none of these: the AVX2 class loads copies of both
whose MLAS is kept off AVX-512 (`mlas_cap`), keeps glibc's and numpy's own AVX-512 paths
off, and records how much of each encode still ran AVX-512 (`avx512_use`, the kernel's
own record); a timing that did is never chosen. ONNX Runtime's backends are measured in
that class only; in the others it would run what the CPU has, and the backends table
beside this one measures it on this CPU.

In each class's process, for each backend the class runs (OpenVINO's; ONNX Runtime's too in
the AVX2 class, where its copy keeps it to the class):

- the quality gate (`benchmarks.quality_gate`, rules in `engine.encoding.gate_rules`)
  against torch's float32 embeddings (made once, on this CPU as it is);
- `duplens import --backend NAME` of `ROWS` distinct Quora questions as a whole command,
  against plain sentence-transformers encoding the same texts in the same process at its own
  best batch size, in three rounds, each timing the baseline and then every import (each
  round starting one backend later), each the best of its three. Each backend's export is
  made before the timed imports.

The verdict per class: the fastest backend by whole-command import that passes the gate and
imports at least `quality_gate.MIN_SPEEDUP` times as fast as Duplens' own import with torch
(the default it would replace); torch where none does. A backend that changes the vectors
must also beat the fastest such exact backend by more than its timings' spread (its rounds'
max / min; runs before the rounds: the baseline's three timings): a tie goes to the exact
one, whose vectors are torch's, so stored embeddings and trained versions need no
conversion. The gate it passes is judged on the
gate's choice data (STSb dev, Quora validation pairs, the cut over training and validation
questions); once the verdict is made, a second process of the class measures that one
backend on the gate's test data (STSb test, Quora test pairs, the cut over test questions),
reported once and never used to choose. The goals (≥ 2× plain
sentence-transformers, ≥ 2.5× with bf16 units) are judged against plain
sentence-transformers. Classes not measured here (arm64, x86-64 without AVX2) keep torch,
and the page says they were not measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks import avx512_use, mlas_cap, quality_gate

ROWS, QUICK_ROWS = 5000, 1000
QUICK_QUESTIONS = 5000       # the quick run's cut (not a verdict: the gate asks 20,000)
CANDIDATES = ("openvino", "openvino-bf16", "openvino-int8", "openvino-int8-dynamic",
              "openvino-int8-dynamic-g64")
# ONNX Runtime's backends, measured in a class only where its copy keeps MLAS to the class
# (`mlas_cap`; the AVX2 class): elsewhere it would run what the CPU has, whatever the cap.
ONNX_CANDIDATES = ("onnx", "onnx-int8")
CAPPED_ONNXRUNTIME = "DUPLENS_BENCH_ONNXRUNTIME_CAPPED"
COPIES = "libraries-avx2"    # the folder of the AVX2 class's copies
ROUNDS = 3    # timings of the baseline and of each import, interleaved (`_speed`)
# A comma-separated list of classes to measure, the rest left out (a repeat of one class
# takes a third of the run); the results record it, and the page says so.
ONLY_ENV = "DUPLENS_BENCH_CPU_CLASSES"
SHARE_TEXTS = 1000           # questions encoded per backend to read how much ran AVX-512
MAX_AVX512_SHARE = 0.05      # above it, a timing in a class without AVX-512 is not that class's
VENDOR_NAMES = {"amd": "AMD", "intel": "Intel"}   # `cpu_features.vendor_of`'s, in words


# The variables that force a class: oneDNN's and OpenVINO's instruction sets, torch's own
# kernels, oneMKL's (a run made under them measures the class, so `document_scale` records
# them too).
CAP_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "OV_CPU_MAX_ISA", "ATEN_CPU_CAPABILITY",
                 "MKL_ENABLE_INSTRUCTIONS")


def _cap(isa: str, aten: str, mkl: str) -> dict[str, str]:
    return dict(zip(CAP_VARIABLES, (isa, isa, aten, mkl), strict=True))


CLASSES: dict[str, dict] = {
    "amx": {"label": "AMX bf16 units: this CPU as it is", "env": {}},
    "bf16": {"label": "bf16 units: this CPU as it is", "env": {}},
    "int8": {"label": "int8 units, no bf16 (capped to AVX512-VNNI)",
             "env": _cap("AVX512_CORE_VNNI", "avx512", "AVX512_E1")},
    "avx2": {"label": "AVX2 only (capped to AVX2)", "env": _cap("AVX2", "avx2", "AVX2"),
             "no_avx512": True},
}
# On a CPU with AMX, the bf16 class without it: oneDNN and OpenVINO kept to AVX512-BF16,
# oneMKL to its bfloat16 path without AMX (AVX512_E3).
BF16_BELOW_AMX = {"label": "AVX512-BF16 units, no AMX (capped to AVX512-BF16)",
                  "env": _cap("AVX512_CORE_BF16", "avx512", "AVX512_E3")}


def classes_here(flags: list[str] | tuple[str, ...]) -> dict[str, dict]:
    """The classes a run on a CPU with `flags` measures: this CPU as it is, as "amx" where
    it has AMX (and then the bf16 class too, capped below AMX) or else as "bf16"; then the
    int8 and AVX2 classes, capped."""
    if "amx_bf16" in flags:
        return {"amx": CLASSES["amx"], "bf16": BF16_BELOW_AMX,
                **{k: CLASSES[k] for k in ("int8", "avx2")}}
    return {k: CLASSES[k] for k in ("bf16", "int8", "avx2")}


def recorded_classes(result: dict) -> dict[str, dict]:
    """A recorded run's classes under today's names: runs made before AMX was a class of its
    own measured an AMX CPU as it is under "bf16", which is the "amx" class (its label
    said so: "bf16 units (AMX, AVX512-BF16)")."""
    classes = result["classes"]
    if "amx_bf16" in result["cpu"]["flags"] and "amx" not in classes:
        return {("amx" if k == "bf16" else k): m for k, m in classes.items()}
    return dict(classes)


def _without_avx512() -> dict[str, str]:
    """What else a process of a class without AVX-512 needs so that no AVX-512 runs in it
    (checked, not assumed: `avx512_use`): glibc's string functions and numpy's dispatched
    loops and numpy's OpenBLAS pick AVX-512 from CPUID unless told not to. An AVX2 CPU has
    none of these choices."""
    try:   # numpy 2's own list of the targets it dispatches to at run time
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:
        __cpu_dispatch__ = []
    wide = [f for f in __cpu_dispatch__ if "AVX512" in f or f == "X86_V4"]
    # numpy's OpenBLAS picks its kernels from CPUID too (SkylakeX's on an AVX-512 Intel
    # CPU; its threads then hold AVX-512 state through every later encode): Haswell's.
    return {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,"
                              "-AVX512CD", "OPENBLAS_CORETYPE": "Haswell",
            **({"NPY_DISABLE_CPU_FEATURES": " ".join(wide)} if wide else {})}


def class_label(klass: str, flags: list[str] | tuple[str, ...]) -> str:
    """The class's label, naming the bf16 units this CPU has (from its recorded flags): AMX
    (Sapphire Rapids and later Xeons) and AVX512-BF16 alone (Zen 4 and 5, Cooper Lake)
    run bfloat16 on different units, so a verdict on one is not a verdict on the other."""
    if klass == "amx":
        return CLASSES["amx"]["label"]
    if klass != "bf16":
        return CLASSES[klass]["label"]
    if "amx_bf16" in flags:
        return BF16_BELOW_AMX["label"]
    return "bf16 units (AVX512-BF16, no AMX): this CPU as it is"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- in the class's own process ----------------------------------------------------------------

def check_cap(cache: Path) -> dict:
    """What the kernels of this process really use: OpenVINO's capabilities and its fully
    connected layers' kernels (shipped int8 model, and the float32 export), torch's own
    capability, and oneMKL's instruction set for a linear layer."""
    import numpy as np
    import openvino as ov
    import torch

    import duplens_data
    from engine.encoding import cpu_features

    core = ov.Core()

    def kernels(xml: Path, hint: str) -> dict[str, int]:
        compiled = core.compile_model(core.read_model(xml), "CPU",
                                      {"INFERENCE_PRECISION_HINT": hint})
        compiled.create_infer_request().infer(
            {i.get_any_name(): np.ones((2, 16), dtype=np.int64) for i in compiled.inputs})
        found: Counter = Counter()
        for op in compiled.get_runtime_model().get_ops():
            info = op.get_rt_info()
            if "layerType" in info and info["layerType"].astype(str) == "FullyConnected":
                found[info["primitiveType"].astype(str)] += 1
        return dict(found)

    shipped = next((duplens_data.path("models") / "all-MiniLM-L6-v2-openvino-int8").glob("*.xml"))
    fp32 = sorted(cache.rglob("openvino_model.xml"))
    fp32 = [p for p in fp32 if "int8" not in str(p)]
    mkl = subprocess.run([sys.executable, "-c", "import torch; torch.nn.Linear(384, 384)("
                          "torch.randn(8, 384))"], env={**os.environ, "MKL_VERBOSE": "1"},
                         capture_output=True, text=True, check=False).stdout
    mkl_isa = next((line.split("architecture", 1)[-1].split(",")[0].strip()
                    for line in mkl.splitlines() if "oneMKL" in line or "Intel(R) MKL" in line),
                   "not said")
    return {"openvino_capabilities": [str(c) for c in core.get_property(
                "CPU", "OPTIMIZATION_CAPABILITIES")],
            "openvino_int8_kernels": kernels(shipped, "f32"),
            "openvino_fp32_kernels": kernels(fp32[0], "f32") if fp32 else None,
            "torch_capability": torch.backends.cpu.get_cpu_capability(),
            "mkl_isa": mkl_isa, "duplens_class": cpu_features.cpu_class(),
            "env": {k: os.environ.get(k) for k in _cap("", "", "")}}


def _gate(names: list[str], data, reference: dict, cache: Path) -> dict:
    from benchmarks.backends import _load
    from engine.encoding.backends import BACKENDS
    from engine.encoding.model_spec import resolve_model

    spec = resolve_model(None)
    rows = {}
    for name in names:
        _say(f"  gate: {name}")
        encoder, _ = _load(spec, BACKENDS[name], cache)
        found = quality_gate.measure(encoder.encode, data)
        found.update(quality_gate.compare(found, reference, data))
        del encoder
        rows[name] = {k: round(v, 4) for k, v in found.items() if not k.startswith("_")}
        for key in ("stsb_spearman", "quora_ap", "sample_pairs_ap", "partner_top5"):
            rows[name][f"{key}_loss"] = round(reference[key] - found[key], 4)
        rows[name]["gate"] = quality_gate.verdict(found, reference)
    return rows


def _speed(names: list[str], n: int, cache: Path, work: Path) -> dict:
    """Plain sentence-transformers and `duplens import --backend` for each backend, same
    texts, same process, in `ROUNDS` interleaved rounds, each the best of its timings.
    (Runs before 2026-12-02 timed each import once, the baseline three times, median.)"""
    from benchmarks.console import run_cli
    from benchmarks.data import quora_questions, write_questions_csv
    from benchmarks.plain_encode import best_encode
    from engine.encoding.model_spec import load_model, resolve_model

    texts = quora_questions(n)
    csv = write_questions_csv(work / "questions.csv", texts)
    warm = write_questions_csv(work / "warm.csv", texts[:256])
    # The class's PYTHONPATH goes with each import: it may hold OpenVINO's capped copy.
    env = {"DUPLENS_CACHE_DIR": str(cache), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    for name in names:   # exports made (and a first import paid) before any timing
        run_cli(["import", str(work / f"warm-{name}.duplens"), str(warm), "--column",
                 "question", "--backend", name], env)
    model = load_model(resolve_model(None), "cpu")
    model.encode(texts[:256])
    baselines, batch = [], None
    commands: dict[str, list[float]] = {}
    order = ["torch", *names]
    # Every round times the baseline and then every import, each round starting one
    # backend later, and each takes its best: on a shared VM whose speed drifts over
    # minutes, one timing per backend in a fixed order ranked them by when they ran
    # (the AVX2 class's baseline went from 22.2 s to 18.3 s within one run).
    for round_ in range(ROUNDS):
        seconds, chosen = best_encode(model, texts) if batch is None else _at(model, texts,
                                                                              batch)
        batch = batch or chosen
        baselines.append(seconds)
        _say(f"  plain sentence-transformers: {seconds:.1f} s (batch {batch})")
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            commands.setdefault(name, []).append(
                _import(run_cli, work / f"round-{round_}", csv, name, env))
    baseline = min(baselines)
    return {"rows": n, "rounds": ROUNDS, "baseline_s": [round(b, 2) for b in baselines],
            "baseline_best_s": round(baseline, 2), "baseline_batch": batch,
            "imports": {name: {"seconds": round(min(s), 2), "ratio": round(baseline / min(s), 3),
                               "rounds_s": [round(x, 2) for x in s]}
                        for name, s in commands.items()}}


def _at(model, texts: list[str], batch: int) -> tuple[float, int]:
    started = time.perf_counter()
    model.encode(list(texts), batch_size=batch, normalize_embeddings=True,
                 convert_to_numpy=True)
    return time.perf_counter() - started, batch


def _baseline_s(speed: dict) -> float:
    """The baseline's seconds as its run recorded them: the best of the interleaved rounds,
    or in runs before them the median of three timings."""
    return speed.get("baseline_best_s", speed.get("baseline_median_s"))


def _rounds_words(classes: dict) -> str:
    """How the recorded run timed its imports, in words."""
    speeds = [m["speed"] for m in classes.values()]
    if all("rounds" in s for s in speeds):
        rounds = speeds[0]["rounds"]
        return (f"{rounds} rounds, each timing the baseline and then every import (each "
                f"round starting one backend later); each figure is the best of its {rounds}.")
    return "each import timed once, interleaved with the baseline's three timings (median)."


def _import(run_cli, work: Path, csv: Path, name: str, env: dict) -> float:
    """One whole `duplens import` of `csv` into a new project under `work` (a folder per
    round: an import into a project that already holds the rows has nothing to encode)."""
    work.mkdir(parents=True, exist_ok=True)
    seconds = run_cli(["import", str(work / f"import-{name}.duplens"), str(csv), "--column",
                       "question", "--backend", name], env)
    _say(f"  duplens import --backend {name}: {seconds:.1f} s")
    return seconds


def avx512_shares(names: list[str], cache: Path) -> dict[str, float | None]:
    """How much of an encode of `SHARE_TEXTS` questions ran AVX-512 (`avx512_use`), for
    plain sentence-transformers and each backend, in this class's process: whether the cap
    held for what the timings measured. None where the kernel keeps no record."""
    from benchmarks.data import quora_questions
    from engine.encoding.loading import load_encoder
    from engine.encoding.model_spec import load_model, resolve_model

    os.environ["DUPLENS_CACHE_DIR"] = str(cache)
    texts = quora_questions(SHARE_TEXTS)
    model = load_model(resolve_model(None), "cpu")
    model.encode(texts[:64])
    shares = {"plain sentence-transformers": avx512_use.share_in_use(
        lambda: model.encode(texts, batch_size=32))}
    for name in ["torch", *names]:
        encoder = load_encoder(None, device="cpu", backend=name, batch_size=64)
        encoder.encode(texts[:64])
        shares[name] = avx512_use.share_in_use(lambda e=encoder: e.encode(texts))
        del encoder
    return {k: None if v is None else round(v, 3) for k, v in shares.items()}


def _reference(data, out: Path, cache: Path) -> dict:
    """torch's float32 gate figures on `data` (and its embeddings of the questions), made
    once per part of the gate's data by the first class's process, the CPU as it is, and
    read back by the others."""
    import numpy as np

    from engine.encoding.backends import BACKENDS

    stem = out / f"reference-{data.part}"
    if not stem.with_suffix(".npz").exists():
        from benchmarks.backends import _load
        from engine.encoding.model_spec import resolve_model

        _say(f"  gate: torch (the reference, {data.part} data)")
        encoder, _ = _load(resolve_model(None), BACKENDS["torch"], cache)
        reference = quality_gate.measure(encoder.encode, data)
        del encoder
        np.savez(stem.with_suffix(".npz"), questions=reference.pop("_questions"))
        stem.with_suffix(".json").write_text(json.dumps(reference), encoding="utf-8")
    reference = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
    reference["_questions"] = np.load(stem.with_suffix(".npz"))["questions"]
    return reference


def _rounded(figures: dict) -> dict:
    return {k: round(v, 4) for k, v in figures.items() if not k.startswith("_")}


def child(klass: str, out: Path, rows: int, questions: int) -> None:
    """One class's measurements on the gate's choice data, in a process whose kernels are
    capped by its environment."""
    from engine.encoding.backend_choice import default_backend
    from engine.encoding.backends import BACKENDS, unsupported_here

    cache = out / "cache"
    out.mkdir(parents=True, exist_ok=True)
    data = quality_gate.load_data(questions, part=quality_gate.CHOICE)
    reference = _reference(data, out, cache)
    names = CANDIDATES + (ONNX_CANDIDATES if os.environ.get(CAPPED_ONNXRUNTIME) else ())
    skipped = {n: unsupported_here(BACKENDS[n]) for n in names}
    runs = [n for n in names if skipped[n] is None]
    gate = _gate(runs, data, reference, cache)
    with tempfile.TemporaryDirectory(prefix="duplens-classes-") as work:
        speed = _speed(runs, rows, cache, Path(work))
    cap = check_cap(cache)
    if CLASSES[klass].get("no_avx512"):
        cap["no_avx512"] = True
        cap["mlas"] = os.environ.get("DUPLENS_BENCH_MLAS_CAP", "not capped")
        for package in ("openvino", "onnxruntime"):
            found = importlib.util.find_spec(package)
            cap[f"{package}_copy"] = bool(found and found.origin
                                          and COPIES in Path(found.origin).parts)
    cap["avx512_share"] = avx512_shares(runs, cache)
    result = {"class": klass, "cap": cap, "duplens_default": default_backend("cpu"),
              "gate": gate, "speed": speed, "data": data.describe(),
              "reference": _rounded(reference),
              "skipped": {n: why for n, why in skipped.items() if why}}
    (out / f"{klass}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")


def child_test(klass: str, out: Path, backend: str, questions: int) -> None:
    """The class's chosen default on the gate's test data, reported once after the choice
    (which never sees them), in the class's capped process; torch is the reference itself."""
    cache = out / "cache"
    out.mkdir(parents=True, exist_ok=True)
    data = quality_gate.load_data(questions, part=quality_gate.TEST)
    reference = _reference(data, out, cache)
    gate = _gate([backend], data, reference, cache)[backend] if backend != "torch" else None
    result = {"class": klass, "backend": backend, "data": data.describe(),
              "reference": _rounded(reference), "gate": gate}
    (out / f"{klass}-test.json").write_text(json.dumps(result, indent=1), encoding="utf-8")


# -- the parent: one process per class -----------------------------------------------------

def leaked(measured: dict) -> dict[str, float]:
    """In a class without AVX-512, what ran AVX-512 through more than `MAX_AVX512_SHARE` of
    an encode anyway (the cap did not hold for it), with its share; empty for other classes
    and for runs recorded before the share was read."""
    cap = measured.get("cap", {})
    if not cap.get("no_avx512"):
        return {}
    return {name: share for name, share in cap.get("avx512_share", {}).items()
            if share is not None and share > MAX_AVX512_SHARE}


def repeat_spread(speed: dict, name: str) -> float:
    """How far a run's repeated timings of one import spread, relative to its best
    (max / min − 1): its own rounds where they were recorded, else the baseline's three
    timings, the only repeats runs before the rounds made."""
    rounds = speed["imports"][name].get("rounds_s") or []
    timings = rounds if len(rounds) > 1 else speed["baseline_s"]
    return max(timings) / min(timings) - 1


def within_noise(imports: dict, speed: dict, fast: list[str]) -> dict[str, str]:
    """The backends in `fast` that change the vectors and do not beat the fastest exact one
    in `fast` by more than their timings' spread, with why: a tie goes to the exact backend,
    which keeps torch's vectors, so a project's stored embeddings and trained versions are
    served without converting them and the cut is float32's. Empty where no exact backend
    is fast enough to be the default."""
    from engine.encoding.backends import BACKENDS

    exact = [n for n in fast if BACKENDS[n].exact]
    if not exact:
        return {}
    bar_name = min(exact, key=lambda n: imports[n]["seconds"])
    bar = imports[bar_name]["seconds"]
    out = {}
    for name in fast:
        if BACKENDS[name].exact:
            continue
        spread = repeat_spread(speed, name)
        if imports[name]["seconds"] * (1 + spread) >= bar:
            out[name] = (f"{name} ({imports[name]['seconds']:.2f} s) changes the vectors and "
                         f"did not beat exact {bar_name} ({bar:.2f} s) by more than its "
                         f"timings' spread ({spread:.0%})")
    return out


def decide(measured: dict) -> tuple[str, str]:
    """The class's default: the fastest backend that passed the gate and whose whole import
    ran at least `MIN_SPEEDUP` times as fast as Duplens' own import with torch (what it
    would replace), else torch; and why. A backend that changes the vectors must also beat
    the fastest such exact backend by more than its timings' spread (`within_noise`). A
    backend whose timing ran AVX-512 in a class without it (`leaked`) is not that class's
    timing, so it cannot be chosen."""
    speed = measured["speed"]
    imports = speed["imports"]
    torch = imports["torch"]["seconds"]
    escaped = leaked(measured)
    if "torch" in escaped:
        raise ValueError(f"the {measured['class']} class's torch import ran AVX-512 "
                         f"({escaped['torch']:.0%} of an encode): no bar to judge against")
    passed = [n for n, g in measured["gate"].items() if g["gate"]["passed"]
              and n not in escaped]
    unmeasured = "; ".join(f"{n} not judged: it ran AVX-512 through {s:.0%} of an encode"
                           for n, s in escaped.items() if n in imports)
    fast = [n for n in passed if torch / imports[n]["seconds"] >= quality_gate.MIN_SPEEDUP]
    failed = "; ".join(f"{n} fails: {', '.join(g['gate']['failed'])}"
                       for n, g in measured["gate"].items() if not g["gate"]["passed"])
    if not fast:
        slow = ", ".join(f"{n} {torch / imports[n]['seconds']:.2f}×" for n in passed)
        return "torch", (f"no backend that passed imported at {quality_gate.MIN_SPEEDUP:g}× "
                         f"Duplens' torch import or more" + (f" (passed: {slow})" if slow
                                                             else "")
                         + (f"; {failed}" if failed else "")
                         + (f"; {unmeasured}" if unmeasured else ""))
    tied = within_noise(imports, speed, fast)
    best = min((n for n in fast if n not in tied), key=lambda n: imports[n]["seconds"])
    beaten = [why for n, why in tied.items() if imports[n]["seconds"] < imports[best]["seconds"]]
    return best, (f"{best} passed the gate and its import was the fastest that did"
                  + (" beyond the spread of its timings" if beaten else "")
                  + f" ({torch / imports[best]['seconds']:.2f}× Duplens' torch import)"
                  + (f"; {'; '.join(beaten)}" if beaten else "")
                  + (f"; {failed}" if failed else "")
                  + (f"; {unmeasured}" if unmeasured else ""))


def run(quick: bool) -> dict:
    from benchmarks.backends import cpu_summary

    rows = QUICK_ROWS if quick else ROWS
    questions = QUICK_QUESTIONS if quick else quality_gate.CUT_QUESTIONS
    started = time.time()
    classes = {}
    here = classes_here(cpu_summary()["flags"])
    only = [k for k in os.environ.get(ONLY_ENV, "").split(",") if k]
    if set(only) - set(here):
        raise SystemExit(f"{ONLY_ENV}: {', '.join(sorted(set(only) - set(here)))} is not a "
                         f"class this CPU measures ({', '.join(here)})")
    with tempfile.TemporaryDirectory(prefix="duplens-cpu-classes-") as folder:
        out = Path(folder)
        for klass, spec in here.items():
            if only and klass not in only:
                continue
            _say(f"class {klass}: {class_label(klass, cpu_summary()['flags'])}")
            env = {**os.environ, **spec["env"], "PYTHONPATH": str(Path(__file__).parents[1])}
            if spec.get("no_avx512"):
                env.update(_without_avx512())
                env["DUPLENS_BENCH_MLAS_CAP"] = _mlas_capped(out / COPIES, env)
            command = [sys.executable, "-m", "benchmarks.cpu_classes", "--child", klass,
                       "--out", str(out), "--rows", str(rows), "--questions", str(questions)]
            done = subprocess.run(command, env=env, check=False)
            if done.returncode:
                raise RuntimeError(f"the {klass} class's process failed ({done.returncode})")
            measured = json.loads((out / f"{klass}.json").read_text(encoding="utf-8"))
            measured["label"] = class_label(klass, cpu_summary()['flags'])
            measured["verdict"], measured["why"] = decide(measured)
            # The verdict is made; only now is it measured on the test data, once.
            done = subprocess.run([*command, "--test", measured["verdict"]], env=env,
                                  check=False)
            if done.returncode:
                raise RuntimeError(f"the {klass} class's test process failed "
                                   f"({done.returncode})")
            measured["test"] = json.loads((out / f"{klass}-test.json").read_text(
                encoding="utf-8"))
            classes[klass] = measured
    return {"mode": "quick" if quick else "full", "cpu": cpu_summary(), "classes": classes,
            "min_speedup": quality_gate.MIN_SPEEDUP, "rows": rows,
            "tolerances": {"stsb_spearman_loss": quality_gate.STSB_LOSS,
                           "pair_ap_loss": quality_gate.PAIR_AP_LOSS,
                           "min_cut_f1": quality_gate.MIN_CUT_F1,
                           "partner_k": quality_gate.PARTNER_K,
                           "partner_loss": quality_gate.PARTNER_LOSS},
            "versions": _versions(), "seconds": round(time.time() - started, 1),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            **({"only_classes": only} if only else {})}


def _mlas_capped(folder: Path, env: dict[str, str]) -> str:
    """Put the copies of OpenVINO and ONNX Runtime with MLAS kept off AVX-512 first on
    `env`'s PYTHONPATH (`mlas_cap`), and mark ONNX Runtime's backends as measurable where
    its copy was made; what was done, or why not, in words for the record."""
    said = []
    for package in ("openvino", "onnxruntime"):
        try:
            mlas_cap.capped_copy(folder, package)
        except (ValueError, OSError, ImportError) as error:
            said.append(f"{package} not capped: {error}")
            continue
        said.append(f"{package} capped: a copy whose MLAS test for AVX-512 always fails")
        if package == "onnxruntime":
            env[CAPPED_ONNXRUNTIME] = "1"
    env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
    return "; ".join(said) + " (benchmarks/mlas_cap.py)"


def _versions() -> dict:
    from importlib.metadata import version

    return {p: version(p) for p in ("openvino", "nncf", "torch", "sentence-transformers")}


def newer_run(klass: str, vendor: str, date: str, results: dict[str, dict]) -> str | None:
    """The name of a results file newer than `date` that measured `klass` on a CPU of
    `vendor` (its verdict is the default now: tests/engine/encoding/test_default_backend.py),
    or None."""
    from engine.encoding.cpu_features import vendor_of

    newer = [(data.get("date", ""), name) for name, data in results.items()
             if name.split("@", 1)[0] == "cpu_classes" and data.get("date", "") > date
             and vendor_of(data.get("hardware", {}).get("cpu", "")) == vendor
             and klass in recorded_classes(data.get("result", {"cpu": {"flags": []},
                                                               "classes": {}}))]
    return max(newer)[1] if newer else None


def present(result: dict, results: dict | None = None, hardware: dict | None = None,
            file: dict | None = None) -> dict:
    """Headline, the class table and the gate table from the measured classes; `hardware`
    (the results file's) names the CPU, whose vendor picks the code's defaults compared;
    `file` (the whole results file) dates the run, so that a class a newer run measured on
    the same vendor's CPU is said to be decided there."""
    from engine.encoding.backends import (
        CPU_CLASS_DEFAULTS,
        VENDOR_CLASS_DEFAULTS,
        class_default_name,
    )
    from engine.encoding.cpu_features import vendor_of

    vendor = vendor_of((hardware or {}).get("cpu", ""))

    tol = result["tolerances"]
    classes = recorded_classes(result)
    headline, rows, gate_rows, test_rows = [], [], [], []
    retested: list[str] = []
    for m in classes.values():
        m["verdict"], m["why"] = decide(m)   # the rule of this code, on the recorded figures
    for klass, m in classes.items():
        verdict, speed = m["verdict"], m["speed"]
        ratio = speed["imports"].get(verdict, {}).get("ratio", 1.0)
        goal = 2.5 if klass in ("amx", "bf16") else 2.0
        headline.append({
            "figure": f"whole import, {class_label(klass, result['cpu']['flags'])}: the "
                      f"class's default ({verdict})",
            "duplens": f"{speed['rows'] / speed['imports'][verdict]['seconds']:.0f} rows/s"
                       if verdict in speed["imports"] else "torch",
            "baseline": f"{speed['rows'] / _baseline_s(speed):.0f} rows/s",
            "baseline_is": "plain sentence-transformers encoding the same questions at its "
                           "best batch size, same process ("
                           + ("best of three, interleaved with the imports)"
                              if "baseline_best_s" in speed else "median of three)"),
            "ratio": f"{ratio:.2f}×", "goal": f"≥ {goal:g}×", "met": ratio >= goal})
        for name, imp in speed["imports"].items():
            g = m["gate"].get(name)
            rows.append([klass, name, f"{imp['seconds']:.1f}", f"{imp['ratio']:.2f}",
                         "reference" if g is None else ("passes" if g["gate"]["passed"]
                                                        else "fails"),
                         "default" if name == verdict else ""])
        for name, why in m.get("skipped", {}).items():
            rows.append([klass, name, "–", "–", f"not run: {why}", ""])
        for name, g in m["gate"].items():
            gate_rows.append([klass, name, *_gate_cells(g)])
        tested = m.get("test")
        if tested:
            g = tested["gate"]
            test_rows.append([klass, tested["backend"], *(
                _gate_cells(g) if g else _reference_cells(tested["reference"]))])
            if tested["backend"] != verdict:
                retested.append(f"{klass}: the test data measured {tested['backend']}, the "
                                f"verdict when the run was made; the rule of this code "
                                f"chooses {verdict}, which this run did not measure on them")
    first = next(iter(classes.values()))
    ref, data = first["reference"], first["data"]
    test_data = first.get("test", {}).get("data")
    agree = {k: (m["verdict"], class_default_name(k, vendor))
             for k, m in classes.items()}
    notes = [
        f"Gate (against torch's float32 embeddings, made once on this CPU as it is): STSb "
        f"Spearman loss ≤ {tol['stsb_spearman_loss']}, pair AP loss ≤ {tol['pair_ap_loss']} "
        f"(held-out Quora and the sample pairs), the cut's pair F1 against float32's ≥ "
        f"{tol['min_cut_f1']}, labelled duplicates' partner in the top {tol['partner_k']} "
        f"within {tol['partner_loss']} points; recall@10 and top-1 agreement reported only. "
        f"torch: STSb {ref['stsb_spearman']:.2f}, Quora AP {ref['quora_ap']:.2f}, sample AP "
        f"{ref['sample_pairs_ap']:.2f}, partner in top {tol['partner_k']} "
        f"{ref['partner_top5']:.2f}%.",
        f"Gate data the defaults are chosen on: {quality_gate.data_words(data)}; the cut at "
        f"the bundled model's default threshold {data['threshold']} (exact 10-nearest "
        f"graphs, the product's cut); search recall over {data['search_queries']} queries "
        f"against {data['search_corpus']:,}.",
        (f"Test data, measured once per class for its chosen default only, after the "
         f"choice: {quality_gate.data_words(test_data)}." if test_data else
         "This run measured no test data: it was made before the gate's data were split "
         "into a part to choose on and a part to report on (its cut took questions of "
         "every part of Quora, and its STSb pairs were the test split's)."),
        "The verdict per class: " + "; ".join(
            f"{k}: {m['verdict']} ({m['why']})" for k, m in classes.items()) + "."
        + (" Since the run: " + "; ".join(retested) + "." if retested else ""),
        f"The code's defaults for {VENDOR_NAMES.get(vendor, 'this vendor')}'s CPUs "
        f"(`CPU_CLASS_DEFAULTS`"
        + (", `VENDOR_CLASS_DEFAULTS`" if vendor in VENDOR_CLASS_DEFAULTS else "") + "): "
        + ", ".join(
            f"{k} {code}" + ("" if v == code else _differs(k, v, vendor, file, results))
            for k, (v, code) in agree.items())
        + f"; arm64 {CPU_CLASS_DEFAULTS.get('arm64')} and older x86-64 "
          f"{CPU_CLASS_DEFAULTS.get('older')} are not measured (no such CPU here, and no cap "
          "makes one).",
        "How each class was forced, and what the kernels said: " + "; ".join(
            f"{k}: OpenVINO {', '.join(m['cap']['openvino_capabilities'])}, int8 layers "
            f"{', '.join(m['cap']['openvino_int8_kernels'])}, float32 layers "
            f"{', '.join(m['cap']['openvino_fp32_kernels'] or ['not read'])}; torch "
            f"{m['cap']['torch_capability']}, oneMKL {m['cap']['mkl_isa']}; Duplens reads "
            f"class {m['cap']['duplens_class']}{_avx512_words(m['cap'])}"
            for k, m in classes.items()) + ".",
        f"{result['rows']:,} distinct Quora questions per import; each backend's export made "
        "and a first 256-row import run before the timed ones; " + _rounds_words(classes)
        + " " + _onnx_words(result),
        f"Versions: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}; load "
        f"average at the end {result['load_average']}.",
    ]
    if result.get("only_classes"):
        notes.insert(0, f"This run measured only the {', '.join(result['only_classes'])} "
                        f"class ({ONLY_ENV}={','.join(result['only_classes'])}).")
    if result["mode"] == "quick":
        notes.insert(0, "A quick run: the cut is judged over fewer questions than the gate "
                        "asks, so these verdicts do not set the code's defaults.")
    return {"headline": headline, "tables": [
        {"title": "Whole import per CPU class (ratio against plain sentence-transformers, "
                  "same process)",
         "columns": ["class", "backend", "import s", "× plain", "gate", ""], "rows": rows},
        {"title": "The quality gate per class, against torch's float32 embeddings",
         "columns": ["class", "backend", "STSb", "Δ", "Quora AP", "Δ", "sample AP", "Δ",
                     "cut F1", "cut pairs (this / float32)", "partner top 5 %", "Δ",
                     "recall@10", "top-1", "gate"], "rows": gate_rows},
        *([{"title": "Each class's chosen default on the test data (reported once, after "
                     "the choice), against torch's float32 embeddings of the same texts",
            "columns": ["class", "default", "STSb", "Δ", "Quora AP", "Δ", "sample AP", "Δ",
                        "cut F1", "cut pairs (this / float32)", "partner top 5 %", "Δ",
                        "recall@10", "top-1", "gate on test"], "rows": test_rows}]
          if test_rows else [])],
        "notes": notes}


def _differs(klass: str, verdict: str, vendor: str, file: dict | None,
             results: dict | None) -> str:
    """Words for a code default that is not this run's verdict: decided by a newer run on
    the same vendor's CPU, or a disagreement."""
    newer = newer_run(klass, vendor, (file or {}).get("date", ""), results or {})
    if newer:
        return f" (this run's {verdict}; decided by the newer run, {newer})"
    return f" (DISAGREES with this run's {verdict})"


def _onnx_words(result: dict) -> str:
    """Where ONNX Runtime's backends were measured, in words."""
    measured = [k for k, m in result["classes"].items()
                if any(n in m["speed"]["imports"] for n in ONNX_CANDIDATES)]
    if not measured:
        return ("ONNX Runtime picks its kernels by CPUID and cannot be capped, so onnx "
                "backends are measured in the backends table only.")
    return (f"ONNX Runtime's backends are measured in the {', '.join(measured)} class "
            "through a copy whose MLAS is kept to it; elsewhere it picks its kernels by "
            "CPUID, whatever the cap, and the backends table measures it on the CPU as is.")


def _avx512_words(cap: dict) -> str:
    """What the kernel's record said of AVX-512 in the class's encodes, in words (nothing
    for runs recorded before it was read)."""
    shares = cap.get("avx512_share")
    if not shares:
        return ""
    said = ", ".join(f"{name} {'not recorded' if v is None else f'{v:.0%}'}"
                     for name, v in shares.items())
    mlas = f"; MLAS: {cap['mlas']}" if "mlas" in cap else ""
    return f"; AVX-512 in use through an encode (the kernel's record): {said}{mlas}"


def _gate_cells(g: dict) -> list[str]:
    """A gate row's figures, as the gate tables show them."""
    return [f"{g['stsb_spearman']:.2f}", _delta(g["stsb_spearman_loss"]),
            f"{g['quora_ap']:.2f}", _delta(g["quora_ap_loss"]), f"{g['sample_pairs_ap']:.2f}",
            _delta(g["sample_pairs_ap_loss"]), f"{g['cut_f1']:.4f}",
            f"{g['cut_pairs']:,} / {g['reference_cut_pairs']:,}", f"{g['partner_top5']:.2f}",
            _delta(g["partner_top5_loss"]), f"{g['recall_at_10']:.4f}",
            f"{g['top1_agreement']:.3f}",
            "passes" if g["gate"]["passed"] else "fails: " + "; ".join(g["gate"]["failed"])]


def _reference_cells(ref: dict) -> list[str]:
    """torch's own figures where torch is the default: the reference, nothing to compare."""
    return [f"{ref['stsb_spearman']:.2f}", "", f"{ref['quora_ap']:.2f}", "",
            f"{ref['sample_pairs_ap']:.2f}", "", "", "", f"{ref['partner_top5']:.2f}", "",
            "", "", "the reference"]


def _delta(loss: float) -> str:
    """A loss against float32 as the change it is, two decimals, no "-0.00"."""
    change = round(-loss, 2)
    return f"{change + 0.0:+.2f}"


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--questions", type=int, default=quality_gate.CUT_QUESTIONS)
    parser.add_argument("--test", metavar="BACKEND",
                        help="with --child: the class's chosen default on the test data")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.child and args.test:
        child_test(args.child, args.out, args.test, args.questions)
        return
    if args.child:
        child(args.child, args.out, args.rows, args.questions)
        return
    print(json.dumps(run(args.quick), indent=1))


if __name__ == "__main__":
    main()
