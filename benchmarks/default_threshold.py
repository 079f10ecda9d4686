"""The bundled model's default threshold, chosen on Quora's validation pairs by best F1, and
what it finds on the test pairs and on the sample questions' answer key.

    python -m benchmarks --only default_threshold [--quick]

Quora's labelled pairs are split three ways as the fine-tuning benchmarks split them
(`benchmarks.finetune_quora.quora_splits`, seed 0, by question groups; quick: a seeded
sample of 500 pairs of validation and of test). Each pair's similarity is the bundled
model's through torch (`load_encoder(backend="torch")`: the model itself; the quantised
backends move a score by about 0.01). Then, in the same run:

- **the choice**, on the validation part only: the threshold of best F1
  (`engine.pair_metrics.threshold_curve`), rounded to two decimals as the window's slider
  holds it. This is the figure `devtools/record_model_threshold.py` records with the model
  (`duplens_data/model_thresholds.json`), and a test checks the two agree;
- **the test part, measured once**: precision, recall and F1 at the chosen threshold and at
  the old default, 0.80;
- **the sample questions** (`duplens_data/sample_questions.csv`, 2,254 rows) imported into a
  project as an analyst would (`Project.rows.import_table`, then encoded by the same torch
  model) and cut into clusters at each threshold (`project.clusters.cut`, what the export
  shows): two rows sharing a cluster are a found pair, scored against the answer key
  (`sample_questions_groups.csv`: rows of one group are duplicates of each other, every
  other pair is not);
- **MRPC's test pairs** (Microsoft Research Paraphrase Corpus, 1,725 news sentence pairs),
  when its files are found (`$DUPLENS_MRPC`, else `shared/data/mrpc/`; they are not
  redistributed): precision, recall and F1 at each threshold, paraphrase as duplicate. A
  corpus of another kind than the one the threshold was chosen on, so it shows how far the
  choice carries.
"""

from __future__ import annotations

import csv
import itertools
import os
import tempfile
from pathlib import Path

import numpy as np

OLD_DEFAULT = 0.80
QUICK_PAIRS = 500
SEED = 0


def run(quick: bool) -> dict:
    from benchmarks.finetune_quora import quora_splits
    from engine.encoding.loading import load_encoder
    from engine.pair_metrics import threshold_curve

    data = quora_splits(SEED, QUICK_PAIRS if quick else None)
    encoder = load_encoder(None, device="cpu", backend="torch", batch_size=64)
    val_scores, val_labels = _scores(encoder, data.validation)
    curve = threshold_curve(val_scores, val_labels)
    chosen = round(float(curve.best_threshold), 2)
    test_scores, test_labels = _scores(encoder, data.test)
    return {
        "split": f"seed {SEED}; chosen on validation, reported on test",
        "model": encoder.spec.name, "fingerprint": encoder.spec.fingerprint,
        "validation_pairs": len(val_labels), "test_pairs": len(test_labels),
        "chosen": chosen,
        "validation": {"best_threshold": float(curve.best_threshold),
                       "at_chosen": _at(val_scores, val_labels, chosen),
                       "at_old_default": _at(val_scores, val_labels, OLD_DEFAULT)},
        "test": {"at_chosen": _at(test_scores, test_labels, chosen),
                 "at_old_default": _at(test_scores, test_labels, OLD_DEFAULT)},
        "sample": _sample(encoder, (chosen, OLD_DEFAULT)),
        "mrpc": _mrpc(encoder, (chosen, OLD_DEFAULT)),
        "old_default": OLD_DEFAULT,
    }


def _scores(encoder, pairs: list) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarity of each pair (the encoder normalises) and its label."""
    texts = sorted({t for p in pairs for t in (p.text_a, p.text_b)})
    at = {t: i for i, t in enumerate(texts)}
    vectors = encoder.encode(texts)
    a = vectors[[at[p.text_a] for p in pairs]]
    b = vectors[[at[p.text_b] for p in pairs]]
    return np.einsum("ij,ij->i", a, b), np.asarray([p.is_duplicate for p in pairs], bool)


def _at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict:
    """Precision, recall and F1 of calling every pair at or above `threshold` a duplicate."""
    called = scores >= threshold
    tp = int((called & labels).sum())
    return _prf(tp, int(called.sum()), int(labels.sum()))


def _prf(found_right: int, found: int, truth: int) -> dict:
    precision = found_right / found if found else 0.0
    recall = found_right / truth if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "found": found,
            "found_right": found_right, "truth": truth}


def _sample(encoder, thresholds: tuple[float, ...]) -> dict:
    """The sample questions cut into clusters at each threshold, scored by the answer key."""
    import duplens_data
    from engine.project import Project

    questions = duplens_data.path("sample_questions.csv")
    with duplens_data.path("sample_questions_groups.csv").open(encoding="utf-8") as fh:
        group_of = {r["id"]: r["group"] for r in csv.DictReader(fh)}
    members: dict[str, list[str]] = {}
    for row_id, group in group_of.items():
        members.setdefault(group, []).append(row_id)
    truth = {frozenset(p) for ids in members.values() for p in itertools.combinations(ids, 2)}
    out = {"rows": None, "answer_key_pairs": len(truth), "at": {}}
    with tempfile.TemporaryDirectory(prefix="duplens-default-threshold-") as tmp, \
            Project.open(Path(tmp) / "sample.duplens", create=True) as project:
        project.model.attach(encoder, is_default=True)
        report = project.rows.import_table(str(questions), ["question"], id_column="id")
        project.vectors.encode()
        out["rows"] = report.rows_imported
        for threshold in thresholds:
            clusters = project.clusters.cut(threshold, verdicts=False)
            found = {frozenset(p) for c in clusters
                     for p in itertools.combinations([m.id for m in c.members], 2)}
            scores = _prf(len(found & truth), len(found), len(truth))
            scores["clusters"] = len(clusters)
            out["at"][f"{threshold:.2f}"] = scores
    return out


def _mrpc(encoder, thresholds: tuple[float, ...]) -> dict | None:
    """MRPC's test pairs at each threshold, None when its files are not here."""
    from benchmarks.data import SHARED
    from engine.training.pairs import LabelledPair

    folder = Path(os.environ.get("DUPLENS_MRPC", SHARED / "data" / "mrpc"))
    path = folder / "msr_paraphrase_test.txt"
    if not path.exists():
        return None
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    pairs = [LabelledPair(r[3], r[4], float(r[0])) for r in rows]
    scores, labels = _scores(encoder, pairs)
    return {"pairs": len(pairs), "paraphrases": int(labels.sum()),
            "at": {f"{t:.2f}": _at(scores, labels, t) for t in thresholds}}


def present(result: dict, results: dict | None = None) -> dict:
    chosen, old = result["chosen"], result["old_default"]
    test, sample = result["test"], result["sample"]
    new_s, old_s = sample["at"][f"{chosen:.2f}"], sample["at"][f"{old:.2f}"]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    headline = [
        {"figure": f"Quora test F1 at the default threshold ({result['split']})",
         "duplens": f"{pct(test['at_chosen']['f1'])} at {chosen:.2f}",
         "baseline": f"{pct(test['at_old_default']['f1'])} at {old:.2f}",
         "baseline_is": "the old default threshold, same run, same pairs",
         "ratio": f"{test['at_chosen']['f1'] / test['at_old_default']['f1']:.2f}×",
         "goal": "chosen on validation", "met": None},
        {"figure": "Sample questions: duplicate pairs the clusters find (answer key)",
         "duplens": f"recall {pct(new_s['recall'])}, precision {pct(new_s['precision'])}",
         "baseline": f"recall {pct(old_s['recall'])}, precision {pct(old_s['precision'])}",
         "baseline_is": f"clusters cut at {old:.2f}, same run",
         "ratio": f"{new_s['recall'] / old_s['recall']:.2f}× recall" if old_s["recall"]
         else "–", "goal": "–", "met": None}]

    def row(name: str, m: dict) -> list:
        return [name, pct(m["precision"]), pct(m["recall"]), pct(m["f1"]),
                f"{m['found_right']:,} of {m['found']:,}"]

    columns = ["threshold", "precision", "recall", "F1", "right of called duplicate"]
    tables = [
        {"title": f"Quora validation ({result['validation_pairs']:,} pairs): where the "
                  f"threshold was chosen (best F1 at "
                  f"{result['validation']['best_threshold']:.4f}, rounded to {chosen:.2f})",
         "columns": columns,
         "rows": [row(f"{chosen:.2f} (chosen)", result["validation"]["at_chosen"]),
                  row(f"{old:.2f} (old default)", result["validation"]["at_old_default"])]},
        {"title": f"Quora test ({result['test_pairs']:,} pairs), measured once",
         "columns": columns,
         "rows": [row(f"{chosen:.2f} (chosen)", test["at_chosen"]),
                  row(f"{old:.2f} (old default)", test["at_old_default"])]},
        {"title": f"Sample questions ({sample['rows']:,} rows, {sample['answer_key_pairs']:,} "
                  f"duplicate pairs in the answer key): pairs sharing a cluster",
         "columns": [*columns, "clusters"],
         "rows": [[*row(f"{chosen:.2f} (new default)", new_s), f"{new_s['clusters']:,}"],
                  [*row(f"{old:.2f} (old default)", old_s), f"{old_s['clusters']:,}"]]},
    ]
    mrpc = result.get("mrpc")
    if mrpc is not None:
        tables.append({
            "title": f"MRPC test ({mrpc['pairs']:,} news sentence pairs, "
                     f"{mrpc['paraphrases']:,} paraphrases): another kind of text than the "
                     f"threshold was chosen on",
            "columns": columns,
            "rows": [row(f"{chosen:.2f} (new default)", mrpc["at"][f"{chosen:.2f}"]),
                     row(f"{old:.2f} (old default)", mrpc["at"][f"{old:.2f}"])]})
    notes = [f"Recorded with the model as its default threshold: {chosen:.2f} "
             f"(`duplens_data/model_thresholds.json`, weights {result['fingerprint']}). "
             "A project uses it until the analyst's verdicts calibrate another or one is set "
             "by hand."]
    return {"headline": headline, "tables": tables, "notes": notes}
