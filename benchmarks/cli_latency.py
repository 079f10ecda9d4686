"""Command-line latency: how long one `duplens` command takes, start to exit, as a script
calls it, against a one-off search script with plain sentence-transformers measured in the
same run.

    python -m benchmarks --only cli_latency [--quick]

The project is the shipped sample (`sample_questions.csv`, 2,254 questions; --quick, a
smoke run: its first 100), imported with `duplens import … --column question --id-column
id` into a temporary folder, with its own cache folder (so the model's ONNX export is made and
checked by that import, as on a user's computer after their first import) and log folder.
Then every command below runs as a fresh process (`python -m desktop_app.launcher`, what the
`duplens` console script runs) once untimed, so the files are in the page cache ("warm file
cache"), then in turns, round after round (5; --quick: 1, with no untimed round), so that
other work on the machine slows every command alike; the figure is each command's median
wall time.

The baseline is what an analyst without Duplens would run for the same answer: a script that
loads the bundled model with sentence-transformers, reads the project's texts and their
embeddings saved beside them (a CSV and a NumPy file, made by sentence-transformers before
the timing), encodes the query and prints the ten nearest by exact cosine
(`_PLAIN_SEARCH`). `python -c "import sentence_transformers"` and `python -c "pass"` are
timed too, for reference. `search (torch)` is the same search with DUPLENS_FAST_QUERIES=0,
which loads torch as every search did before the torch-free path: what a search costs
without it. Each command's
imports are also checked once (torch, transformers, sentence-transformers, scikit-learn
must stay out of --help, info and search), and one search is profiled with -X importtime.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.console import timed_python

ROOT = Path(__file__).resolve().parents[1]


def _sample() -> Path:
    """The shipped sample questions: from the `duplens_data` package where there is one,
    else from the checkout's resources folder."""
    try:
        import duplens_data
    except ImportError:
        return ROOT / "resources" / "sample_questions.csv"
    return duplens_data.sample_questions()


SAMPLE = _sample()
QUERY = "how do I learn python quickly"
GOALS = {"search": 1.0, "info": 0.3}      # seconds, on the 2-core test machine
PLAIN = "plain sentence-transformers search script"
_PLAIN_SEARCH = """
import csv, sys
import numpy as np
from sentence_transformers import SentenceTransformer
model_path, texts_csv, vectors_npy, query = sys.argv[1:5]
model = SentenceTransformer(model_path, device="cpu")
with open(texts_csv, encoding="utf-8", newline="") as fh:
    texts = [row[0] for row in csv.reader(fh)]
vectors = np.load(vectors_npy)
q = model.encode([query], normalize_embeddings=True)[0]
for i in np.argsort(-(vectors @ q))[:10]:
    print(f"{float(vectors[i] @ q):.3f} {texts[i]}")
"""
HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn")
_CHILD = """
import json, runpy, sys
out = sys.argv.pop(1)
try:
    runpy.run_module("desktop_app.launcher", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
with open(out, "w") as fh:
    json.dump(sorted({m.split(".")[0] for m in sys.modules}), fh)
"""


def run(quick: bool) -> dict:
    rows = 100 if quick else None
    rounds = 1 if quick else 5
    with tempfile.TemporaryDirectory(prefix="duplens-cli-latency-") as tmp:
        folder = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               "DUPLENS_CACHE_DIR": str(folder / "cache"),
               "DUPLENS_LOG_DIR": str(folder / "logs"),
               "DUPLENS_CONFIG_DIR": str(folder / "config")}
        env.pop("DUPLENS_FAST_QUERIES", None)
        project, tiny, ids = _project(folder, env, rows)
        labelled = folder / "labelled.duplens"
        commands = {
            "--help": ["--help"],
            "info": ["info", str(project)],
            "search": ["search", str(project), QUERY],
            "match (10 rows)": ["match", str(project), str(tiny), "--column", "question"],
            "label": ["label", str(labelled), ids[0], ids[1], "dup"],
            "search (torch)": ["search", str(project), QUERY],
        }
        baselines = {
            PLAIN: ["-c", _PLAIN_SEARCH, *_plain_files(folder, rows), QUERY],
            'python -c "import sentence_transformers"': ["-c", "import sentence_transformers"],
            'python -c "pass"': ["-c", "pass"],
        }
        runs: dict[str, list[float]] = {name: [] for name in [*commands, *baselines]}
        warm_up = 0 if quick else 1     # round 0 warms the page cache, untimed
        for round_ in range(1 - warm_up, rounds + 1):
            shutil.copy(project, labelled)
            for name, args in commands.items():
                seconds = timed_python(["-m", "desktop_app.launcher", *args],
                                 _torch_only(env) if name == "search (torch)" else env)
                if round_:
                    runs[name].append(seconds)
            for name, args in baselines.items():
                seconds = timed_python(args, env)
                if round_:
                    runs[name].append(seconds)
            _say(f"  round {round_}/{rounds} done")
        shutil.copy(project, labelled)
        imported = {name: _imported(args, env, folder)
                    for name, args in commands.items() if name != "search (torch)"}
        profile = _import_profile(commands["search"], env)
    medians = {name: statistics.median(times) for name, times in runs.items()}
    result = {
        "project": {"rows": rows or _count(SAMPLE), "source": SAMPLE.name},
        "rounds": rounds,
        "seconds": {name: {"median": round(m, 3), "runs": [round(t, 3) for t in runs[name]]}
                    for name, m in medians.items()},
        "heavy_imports": {name: sorted(set(mods) & set(HEAVY))
                          for name, mods in imported.items()},
        "search_import_profile": profile,
    }
    return result


def present(result: dict, results: dict | None = None) -> dict:
    """Headline rows, tables and notes derived from the measured runs when the report
    renders (benchmarks/report.py)."""
    medians = {name: times["median"] for name, times in result["seconds"].items()}
    if PLAIN in medians:
        return _presentation(result, medians, PLAIN)
    return _presentation(result, medians, 'python -c "import sentence_transformers"')


def _plain_files(folder: Path, rows: int | None) -> list[str]:
    """The bundled model's folder, and the sample's texts (CSV) and their normalised
    sentence-transformers embeddings (.npy) that the plain search script reads."""
    import numpy as np

    from engine.encoding.model_spec import load_model, resolve_model

    spec = resolve_model(None)
    with SAMPLE.open(encoding="utf-8", newline="") as fh:
        texts = [r["question"] for r in csv.DictReader(fh)]
    texts = texts[:rows] if rows is not None else texts
    model = load_model(spec, "cpu")
    vectors = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    texts_csv, vectors_npy = folder / "plain_texts.csv", folder / "plain_vectors.npy"
    with texts_csv.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([t] for t in texts)
    np.save(vectors_npy, vectors.astype(np.float32))
    return [str(spec.location), str(texts_csv), str(vectors_npy)]


def _project(folder: Path, env: dict, rows: int | None) -> tuple[Path, Path, list[str]]:
    """The sample project (imported by `duplens import`), a 10-row file to match and two
    of the project's ids to label."""
    with SAMPLE.open(encoding="utf-8", newline="") as fh:
        records = list(csv.DictReader(fh))
    if rows is not None:
        records = records[:rows]
    source = folder / "sample_questions.csv"
    _write(source, records)
    tiny = folder / "tiny.csv"
    _write(tiny, [{"id": f"n{i}", "question": r["question"].lower(), "topic": r["topic"]}
                  for i, r in enumerate(records[:10])])
    project = folder / "sample.duplens"
    _say(f"  importing {len(records):,} questions (and making the ONNX export)…")
    done = subprocess.run([sys.executable, "-m", "desktop_app.launcher", "import",
                           str(project), str(source), "--column", "question", "--id-column",
                           "id"], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the import failed: {done.stderr[-2000:]}")
    return project, tiny, [records[0]["id"], records[1]["id"]]


def _write(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["id", "question", "topic"])
        writer.writeheader()
        writer.writerows({k: r[k] for k in ("id", "question", "topic")} for r in records)


def _count(path: Path) -> int:
    with path.open(encoding="utf-8", newline="") as fh:
        return sum(1 for _ in csv.DictReader(fh))


def _torch_only(env: dict) -> dict:
    return {**env, "DUPLENS_FAST_QUERIES": "0"}




def _imported(args: list[str], env: dict, folder: Path) -> list[str]:
    """The top-level packages `duplens ARGS` imports (one untimed run)."""
    out = folder / "modules.json"
    subprocess.run([sys.executable, "-c", _CHILD, str(out), *args], env=env,
                   capture_output=True, check=False)
    return json.loads(out.read_text()) if out.exists() else ["?"]


def _import_profile(args: list[str], env: dict, top: int = 12) -> list[dict]:
    """The modules whose import took longest in one search (`-X importtime`, cumulative):
    those no other module imported, i.e. what the interpreter, the launcher and the command's
    functions imported, each with everything it brought in."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "desktop_app.launcher",
                           *args], env=env, capture_output=True, text=True, check=False)
    found = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, named = line[len("import time:"):].split("|")
        name = named.strip()
        depth = (len(named) - len(named.lstrip()) - 1) // 2
        if cumulative.strip().isdigit() and depth == 0:   # imported by no other module
            found.append({"module": name, "ms": round(int(cumulative) / 1000, 1)})
    return sorted(found, key=lambda m: -m["ms"])[:top]


def _presentation(result: dict, medians: dict, baseline_name: str) -> dict:
    """Headline rows, tables and notes for the report (benchmarks/report.py)."""
    baseline = medians[baseline_name]
    said = ("a one-off search script with plain sentence-transformers (load the model, read "
            "the texts and their saved embeddings, encode the query, exact top 10), in turns "
            "with the commands, same run" if baseline_name == PLAIN else
            "python -c 'import sentence_transformers', in turns with the commands, same run")
    headline = []
    for name in ("search", "info", "--help", "match (10 rows)", "label"):
        goal = GOALS.get(name)
        headline.append({
            "figure": f"duplens {name} wall time, {result['project']['rows']:,}-row sample "
                      f"project, warm file cache (median of {result['rounds']})",
            "duplens": f"{medians[name]:.2f} s",
            "baseline": f"{baseline:.2f} s",
            "baseline_is": said,
            "ratio": f"{baseline / medians[name]:.1f}× faster",
            "goal": f"≤ {goal} s" if goal else "–",
            "met": (medians[name] <= goal) if goal else None,
        })
    rows = [[name, f"{medians[name]:.2f}", " ".join(f"{t:.2f}" for t in
                                                     result["seconds"][name]["runs"]),
             ", ".join(result["heavy_imports"].get(name, [])) or
             ("–" if name in result["heavy_imports"] else "(not checked)")]
            for name in medians]
    return {
        "headline": headline,
        "tables": [
            {"title": "Each command as a fresh process (seconds)",
             "columns": ["command", "median", "runs", "torch / transformers / "
                         "sentence-transformers / scikit-learn imported"],
             "rows": rows},
            {"title": "Where one search's imports go (-X importtime, cumulative, top level)",
             "columns": ["module", "ms"],
             "rows": [[m["module"], f"{m['ms']:.0f}"] for m in
                      result["search_import_profile"]]},
        ],
        "notes": [
            "search and match encode with the model's ONNX export through onnxruntime and "
            "tokenizers (engine/encoding/torch_free_encoder.py), checked against torch by the "
            "import; `search (torch)` is the same search with DUPLENS_FAST_QUERIES=0, as "
            "every search ran before.",
            "Each round runs every command once, in turn, so load from other work slows them "
            "alike; the load average before the run is in the results file.",
        ],
    }


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=1))
