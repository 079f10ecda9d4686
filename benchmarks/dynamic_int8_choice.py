"""openvino-int8-dynamic's recipe, chosen on the quality gate's choice data with the kernels
capped to the int8 class (AVX512-VNNI, no bf16).

    python -m benchmarks --only dynamic_int8_choice

OpenVINO's dynamic quantisation runs the products of int8 weights (NNCF's
`compress_weights`, asymmetric, per output channel, no calibration) on activations
quantised to int8 as they run, a scale per group of values of each token
(`DYNAMIC_QUANTIZATION_GROUP_SIZE`). With every product in int8 and groups of 32, the cut
at the default threshold came out just under the gate's bar (`cpu_classes`, pair F1 0.9799
against 0.98). The levers tried here, each through the full gate (`quality_gate.measure`
and `compare` on the choice data: STSb dev, Quora validation pairs, the sample pairs, the
cut over 20,000 questions of Quora's training and validation parts), in one process capped
like `cpu_classes`' int8 class:

- smaller groups (16: finer scales, slower), and larger ones (64, 128) with the feed-forward
  outputs in float32;
- products kept in float32 (NNCF's ignored scope, `Backend.float32_layers`): each layer's
  feed-forward output (the product that hurt most in `int8_recipes`), the first layer, the
  last layer.

Speed: sentences per second on 2,000 of the cut's questions (the benchmark's own
tokenise-run-pool loop of `int8_recipes`, batch 64, best of three rounds that each time
every recipe in turn), beside exact OpenVINO in
the same process, and windows per second on texts that fill the model's 256-piece window
(a long document's windows). The recipe the backend ships (`BACKENDS["openvino-int8-dynamic"]`) is
marked; whether it becomes a class's default is `cpu_classes`' verdict, and only that
verdict is measured on the test data.

The backend is also the default of Intel's bf16 class (AVX512-BF16 without AMX), which runs
it with nothing capped. On such a CPU a second process times every recipe as the CPU is
(no gate: the kernels change the speed, not what is computed to the gate's precision), and
the rule of docs/benchmarks.md (`rule_pick`) is applied to each set of speeds.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import quality_gate
from benchmarks.quality_gate import MIN_CUT_F1
from engine.encoding.cpu_features import cpu_class

TIMED = 2000
FEED_FORWARD_OUT = r".*/layer\.\d+/output/dense/MatMul"
# name: (what it changes, group size, float32 patterns)
RECIPES: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "dynamic 32": ("every product in int8, groups of 32", 32, ()),
    "dynamic 16": ("every product in int8, groups of 16", 16, ()),
    "dynamic 32, feed-forward out in float32": (
        "each layer's feed-forward output product keeps float32", 32, (FEED_FORWARD_OUT,)),
    "dynamic 32, last layer in float32": (
        "the sixth (last) layer keeps float32", 32, (r".*/layer\.5/.*",)),
    "dynamic 32, first layer in float32": (
        "the first layer keeps float32", 32, (r".*/layer\.0/.*",)),
    # Coarser scales with the shipped recipe's float32 products: on the windows of long
    # documents (256 pieces) the products dominate, and larger groups quantise less often.
    "dynamic 64, feed-forward out in float32": (
        "groups of 64, each layer's feed-forward output product keeps float32", 64,
        (FEED_FORWARD_OUT,)),
    "dynamic 128, feed-forward out in float32": (
        "groups of 128, each layer's feed-forward output product keeps float32", 128,
        (FEED_FORWARD_OUT,)),
}
# The rule for replacing the shipped recipe (docs/benchmarks.md, written before the first
# run that timed windows): the gate passed with a cut F1 at least this far over its bar
# (twice the largest difference seen between two measurements of one recipe), and faster
# than the shipped recipe on both questions and windows; among such, the fastest on windows.
RULE_MARGIN = 0.0016
# Long documents are read as windows of the model's whole length: their speed is measured
# apart, on this many texts that fill a window (questions joined until they do).
WINDOWS = 96
# Rounds of timing, each visiting every recipe in turn (`interleaved_speeds`).
ROUNDS = 3


def window_texts(questions: list[str], count: int, words: int = 400) -> list[str]:
    """`count` texts of at least `words` words (more than a 256-piece window holds, so each
    is cut to exactly one window), made of consecutive questions, none used twice."""
    texts: list[str] = []
    parts: list[str] = []
    for question in questions:
        parts.append(question)
        if sum(len(p.split()) for p in parts) >= words:
            texts.append(" ".join(parts))
            parts = []
            if len(texts) == count:
                break
    return texts


def run(quick: bool) -> dict:
    """One child process with the kernels capped to the int8 class."""
    from benchmarks.cpu_classes import CLASSES

    env = {**os.environ, **CLASSES["int8"]["env"], "PYTHONPATH": str(Path(__file__).parents[1])}
    with tempfile.TemporaryDirectory(prefix="duplens-dynamic-int8-") as folder:
        out = Path(folder) / "result.json"
        questions = 5_000 if quick else quality_gate.CUT_QUESTIONS
        done = subprocess.run([sys.executable, "-m", "benchmarks.dynamic_int8_choice",
                               "--child", "--out", str(out), "--questions", str(questions)],
                              env=env, check=False)
        if done.returncode:
            raise RuntimeError(f"the capped process failed ({done.returncode})")
        result = json.loads(out.read_text(encoding="utf-8"))
        result["cap"] = CLASSES["int8"]["env"]
        here = cpu_class()
        if here in ("bf16", "amx"):
            done = subprocess.run([sys.executable, "-m", "benchmarks.dynamic_int8_choice",
                                   "--child", "--speeds-only", "--out", str(out),
                                   "--questions", str(questions)],
                                  env={**os.environ, "PYTHONPATH": env["PYTHONPATH"]},
                                  check=False)
            if done.returncode:
                raise RuntimeError(f"the uncapped process failed ({done.returncode})")
            result["uncapped"] = {"cpu_class": here,
                                  **json.loads(out.read_text(encoding="utf-8"))}
    return result


def shipped_name(result: dict) -> str | None:
    """The row of the recipe the backend shipped when the run was made."""
    shipped = result["shipped"]
    return next((name for name, r in result["rows"].items() if name != "exact"
                 and r["group"] == shipped["group"]
                 and r["float32_layers"] == shipped["float32_layers"]), None)


def interleaved_speeds(encoders: dict, questions: list[str], windows: list[str],
                       rounds: int = ROUNDS) -> dict[str, dict[str, float]]:
    """Each encoder's best rate on `questions` and on `windows` over `rounds` rounds that
    time every encoder in turn. Timing one recipe after another let the machine's drift
    decide their order: on a shared 2-core VM one run's rates rose steadily down the table
    (exact OpenVINO 33 windows a second first, the last recipe 60), so each round now
    visits them all, and a slow stretch costs every recipe a round."""
    for encode in encoders.values():       # compiled and warm before any clock runs
        encode(questions[:len(questions) // 10])
        encode(windows[:len(windows) // 10])
    best = {name: {"questions": float("inf"), "windows": float("inf")} for name in encoders}
    for _ in range(rounds):
        for name, encode in encoders.items():
            for kind, texts in (("questions", questions), ("windows", windows)):
                started = time.perf_counter()
                encode(texts)
                best[name][kind] = min(best[name][kind], time.perf_counter() - started)
    return {name: {"sentences_per_s": round(len(questions) / b["questions"], 1),
                   "windows_per_s": round(len(windows) / b["windows"], 1)}
            for name, b in best.items()}


def rule_pick(result: dict, speeds: dict | None = None) -> str | None:
    """The recipe the rule puts in the shipped one's place, or None where it stays.
    The gate's figures are the capped process's rows; the speeds are theirs too, or
    `speeds` where given (the uncapped process's rows, same names)."""
    rows = result["rows"]
    speeds = speeds or rows
    shipped = shipped_name(result)
    if shipped is None or "windows_per_s" not in speeds.get(shipped, {}):
        return None
    base = speeds[shipped]
    eligible = [
        name for name, r in rows.items()
        if name not in ("exact", shipped) and r["gate"]["passed"]
        and r["cut_f1"] >= MIN_CUT_F1 + RULE_MARGIN
        and speeds[name]["sentences_per_s"] > base["sentences_per_s"]
        and speeds[name]["windows_per_s"] > base["windows_per_s"]]
    return max(eligible, key=lambda n: speeds[n]["windows_per_s"], default=None)


def child(out: Path, questions: int, speeds_only: bool = False) -> None:
    """Every recipe through the gate and timed, in this process as its environment caps
    it; with `speeds_only`, timed only (the same texts, no gate)."""
    import openvino as ov

    from benchmarks.int8_recipes import _openvino_encoder
    from engine.encoding.backends import BACKENDS
    from engine.encoding.conversion import compress_int8_weights, convert
    from engine.encoding.model_spec import load_model, resolve_model

    data = quality_gate.load_data(questions, part=quality_gate.CHOICE)
    model = load_model(resolve_model(None), "cpu")

    def torch_encode(texts):
        return model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    reference = None if speeds_only else quality_gate.measure(torch_encode, data)
    timed = data.questions[:TIMED]

    windows = window_texts(data.questions, WINDOWS)

    core = ov.Core()
    rows: dict[str, dict] = {}
    encoders: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        plain = convert(model, BACKENDS["openvino"], Path(tmp) / "openvino")
        exact = _openvino_encoder(core, core.read_model(str(plain)), model,
                                  config={"INFERENCE_PRECISION_HINT": "f32"})
        rows["exact"] = {"what": "exact OpenVINO, float32"}
        encoders["exact"] = exact
        for name, (what, group, float32) in RECIPES.items():
            with contextlib.redirect_stdout(sys.stderr):
                graph = compress_int8_weights(core.read_model(str(plain)), float32)
            encode = _openvino_encoder(core, graph, model, config={
                "INFERENCE_PRECISION_HINT": "f32",
                "DYNAMIC_QUANTIZATION_GROUP_SIZE": str(group)})
            encoders[name] = encode
            if speeds_only:
                rows[name] = {}
                continue
            found = quality_gate.measure(encode, data)
            found.update(quality_gate.compare(found, reference, data))
            figures = {k: round(v, 4) for k, v in found.items() if not k.startswith("_")}
            for key in ("stsb_spearman", "quora_ap", "sample_pairs_ap", "partner_top5"):
                figures[f"{key}_loss"] = round(reference[key] - found[key], 4)
            rows[name] = {"what": what, "group": group, "float32_layers": list(float32),
                          **figures,
                          "gate": quality_gate.verdict(found, reference)}
            print(f"  {name}: cut F1 {figures['cut_f1']}", file=sys.stderr, flush=True)
        for name, figures in interleaved_speeds(encoders, timed, windows).items():
            rows[name].update(figures)
    if speeds_only:
        out.write_text(json.dumps({"rows": rows, "load_average": [
            round(x, 2) for x in os.getloadavg()]}, indent=1), encoding="utf-8")
        return
    result = {"rows": rows, "data": data.describe(), "timed_texts": len(timed),
              "timed_windows": len(windows), "timing_rounds": ROUNDS,
              "reference": {k: round(v, 4) for k, v in reference.items()
                            if not k.startswith("_")},
              "shipped": {"group": BACKENDS["openvino-int8-dynamic"].dynamic_group,
                          "float32_layers": list(
                              BACKENDS["openvino-int8-dynamic"].float32_layers)},
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


def present(result: dict, results: dict | None = None) -> dict:
    """The recipes' table, the shipped one marked (benchmarks/report.py)."""
    rows = result["rows"]
    exact = rows["exact"]["sentences_per_s"]
    # Runs before window speeds were measured have none.
    exact_windows = rows["exact"].get("windows_per_s")

    def windows(r: dict) -> list:
        if exact_windows is None:
            return []
        return [r["windows_per_s"], f"{r['windows_per_s'] / exact_windows:.2f}×"]

    shipped_row = shipped_name(result)
    table_rows = []
    for name, r in rows.items():
        if name == "exact":
            table_rows.append([name, "exact OpenVINO, float32 (the speeds' reference)",
                               r["sentences_per_s"], "1.00×", *windows(r), "1.0000",
                               "–", "–", "–", "–", "reference speed", ""])
            continue
        ships = name == shipped_row
        table_rows.append([
            name, r["what"], r["sentences_per_s"], f"{r['sentences_per_s'] / exact:.2f}×",
            *windows(r), f"{r['cut_f1']:.4f}", f"{-r['stsb_spearman_loss']:+.2f}",
            f"{-r['quora_ap_loss']:+.2f}", f"{-r['sample_pairs_ap_loss']:+.2f}",
            f"{-r['partner_top5_loss']:+.2f}",
            "passes" if r["gate"]["passed"] else "fails: " + "; ".join(r["gate"]["failed"]),
            "ships" if ships else ""])
    tables = [{
            "title": "Dynamic int8 recipes on the gate's choice data, kernels capped to "
                     "AVX512-VNNI (the int8 class)",
            "columns": ["recipe", "what it changes", "sentences/s", "× exact",
                        *(["windows/s", "× exact"] if exact_windows is not None else []),
                        "cut F1",
                        "STSb Δ", "Quora AP Δ", "sample AP Δ", "partner top 5 Δ", "gate",
                        ""],
            "rows": table_rows}]
    notes = []
    if exact_windows is not None:
        notes.append(_rule_note("on the capped speeds (the int8 class)", rule_pick(result)))
    uncapped = result.get("uncapped")
    if uncapped:
        speeds = uncapped["rows"]
        free_exact = speeds["exact"]
        tables.append({
            "title": f"The same recipes timed on this CPU as it is (its {uncapped['cpu_class']}"
                     " class), no cap, no gate",
            "columns": ["recipe", "sentences/s", "× exact", "windows/s", "× exact",
                        "× shipped on windows", ""],
            "rows": [[name, r["sentences_per_s"],
                      f"{r['sentences_per_s'] / free_exact['sentences_per_s']:.2f}×",
                      r["windows_per_s"],
                      f"{r['windows_per_s'] / free_exact['windows_per_s']:.2f}×",
                      f"{r['windows_per_s'] / speeds[shipped_row]['windows_per_s']:.2f}×"
                      if shipped_row else "–",
                      "ships" if name == shipped_row else ""]
                     for name, r in speeds.items()]})
        notes.append(_rule_note(f"on this CPU's own speeds (the {uncapped['cpu_class']} "
                                "class), with the capped gate's figures",
                                rule_pick(result, speeds)))
        notes.append(f"Load average at the end of the uncapped process: "
                     f"{uncapped['load_average']}.")
    return {
        "headline": [],
        "tables": tables,
        "notes": [
            f"Gate data, the choice part: {result['data']['stsb_pairs']:,} STSb pairs, "
            f"{result['data']['quora_pairs']:,} Quora pairs, "
            f"{result['data']['sample_pairs']:,} sample pairs, the cut over "
            f"{result['data']['cut_questions']:,} questions at "
            f"{result['data']['threshold']}; Δ against torch's float32 figures, made in "
            "the same process.",
            f"Speed: {result['timed_texts']:,} questions, batch 64, "
            + (f"best of {result['timing_rounds']} rounds, each timing every recipe in turn"
               if "timing_rounds" in result else "best of two, one recipe after another")
            + ", the benchmark's own loop (comparable between rows, not with served figures)"
            + (f"; windows: {result['timed_windows']} texts of consecutive questions "
               "filling the model's 256-piece window, as a long document's windows do."
               if exact_windows is not None else "."),
            f"Load average at the end: {result['load_average']}.",
            *notes,
        ],
    }


def _rule_note(judged: str, pick: str | None) -> str:
    """One line: what the replacement rule (docs/benchmarks.md) says, judged as named."""
    if pick is None:
        return f"The rule, {judged}: the shipped recipe stays."
    return f"The rule, {judged}: \"{pick}\" would replace the shipped recipe."


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--questions", type=int, default=quality_gate.CUT_QUESTIONS)
    parser.add_argument("--speeds-only", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args.out, args.questions, args.speeds_only)
        return
    print(json.dumps(run(False), indent=1))


if __name__ == "__main__":
    main()
