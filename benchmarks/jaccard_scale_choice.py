"""Where a Jaccard of 5-word runs sits on the similarity scale, chosen on validation data.

The one similarity of two long texts is the larger of what their windows share and their
MinHash Jaccard put on the similarity scale (`engine.documents.minhash.on_similarity_scale`:
J ** JACCARD_POWER). Each rule here names the Jaccard that reads as 0.75, the documents'
default threshold; Jaccard 0.75 reading as 0.75 is the Jaccard itself, the rule before
schema v13 (power 1).

Run by `benchmarks.documents` and `benchmarks.document_revisions` on the project their
Duplens arm imported, so the windows, the signatures and the threshold are the product's
own. For each rule, a copy of that project has its stored graphs dropped, the graph is built
as the product builds it (windows, signatures, MinHash LSH candidates at Jaccard 0.5) with
the rule's power in force, and it is cut at the project's threshold; the clusters' pairs are
scored on the validation half only (the product's run is what the test half reports). The
choice reads both benchmarks' validation halves (`choice_table`): the rules of the best mean
pair F1, and which of them the product uses.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# The Jaccard that reads as 0.75 under each rule; 0.75: the Jaccard itself (power 1).
GRID: tuple[float, ...] = (0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4)
AT = 0.75
SIDES = {"documents": "constructed documents", "document_revisions": "Django's pages"}
DECOYS = ("decoy", "reworded_decoy")


def rule_name(reads_as: float) -> str:
    return ("the Jaccard itself" if reads_as == AT
            else f"Jaccard {reads_as:g} reads as {AT:g}")


def power_of(reads_as: float) -> float:
    return math.log(AT) / math.log(reads_as)


def product_reads_as() -> float:
    """The Jaccard that reads as 0.75 under the product's power now."""
    from engine.documents.minhash import JACCARD_POWER

    return round(AT ** (1.0 / JACCARD_POWER), 4)


def project_side(project_path: str, threshold: float,
                 scored: Callable[[set[frozenset]], dict]) -> dict:
    """Every rule of GRID on copies of the project at `threshold`; `scored(pairs)` scores
    found pairs of external ids on the validation half."""
    from benchmarks.shingle_choice import copied, cut_pairs

    out: dict = {"threshold": threshold, "rules": {}}
    source = Path(project_path)
    for reads_as in GRID:
        with tempfile.TemporaryDirectory(prefix="duplens-jaccard-scale-") as tmp:
            copy = copied(source, Path(tmp))
            _drop_graphs(copy)
            with _power(power_of(reads_as)):
                found, _, _ = cut_pairs(copy, threshold)
        out["rules"][rule_name(reads_as)] = {"reads_as": reads_as, **scored(found)}
    out["product_reads_as"] = product_reads_as()
    return out


def best_rules(sides: dict[str, dict]) -> tuple[list[str], dict[str, float]]:
    """The rules of the best mean validation pair F1 over the sides given ({name: the
    `project_side` result}), and every rule's mean."""
    names = [rule_name(r) for r in GRID]
    mean = {n: sum(s["rules"][n]["all"]["f1"] for s in sides.values()) / len(sides)
            for n in names if all(n in s["rules"] for s in sides.values())}
    top = max(mean.values())
    return [n for n in names if n in mean and mean[n] == top], mean


def choice_table(results: dict, pct) -> dict | None:
    """Both benchmarks' validation sweeps side by side, from their results files
    (`results`: every results file by name); None until both hold one."""
    sides = {}
    for name in SIDES:
        arm = ((results.get(name) or {}).get("result", {}).get("arms", {})
               .get("duplens", {}))
        if arm.get("jaccard_scale_choice"):
            sides[name] = arm["jaccard_scale_choice"]
    if len(sides) < len(SIDES):
        return None
    best, mean = best_rules(sides)
    used = {round(s["product_reads_as"], 2) for s in sides.values()}
    product = rule_name(used.pop()) if len(used) == 1 else None
    rows = []
    for reads_as in GRID:
        n = rule_name(reads_as)
        if n not in mean:
            continue
        marks = [w for w, on in (("best", n in best), ("the product's", n == product)) if on]
        rows.append([n + (f" ({', '.join(marks)})" if marks else ""),
                     f"{power_of(reads_as):.3f}",
                     *[f"{pct(s['rules'][n]['all']['precision'])} / "
                       f"{pct(s['rules'][n]['all']['recall'])} / "
                       f"**{100 * s['rules'][n]['all']['f1']:.1f}%**"
                       for s in sides.values()],
                     ", ".join(f"{k} {pct(sides['documents']['rules'][n][k])}"
                               for k in DECOYS),
                     f"{100 * mean[n]:.2f}%"])
    return {"title": "Where a Jaccard of 5-word runs sits on the similarity scale: each rule's "
                     "graph built and cut at the threshold 0.75 on a copy of each benchmark's "
                     "project, pair precision / recall / F1 on the validation halves (the "
                     "products' runs above are the tests)",
            "columns": ["rule", "power", *[f"{label} (validation)" for label in
                                           SIDES.values()],
                        "constructed decoys flagged", "mean F1"],
            "rows": rows}


def _drop_graphs(project: Path) -> None:
    from engine.store.database import Store
    from engine.store.schema import blobs

    store = Store.open(project)
    try:
        with store.write() as conn:
            conn.execute(blobs.delete().where(blobs.c.name.startswith("knn/")))
    finally:
        store.close()


@contextmanager
def _power(value: float) -> Iterator[None]:
    """The product's JACCARD_POWER set to `value` for the block (what-if runs only)."""
    from engine.documents import minhash

    before = minhash.JACCARD_POWER
    minhash.JACCARD_POWER = value
    try:
        yield
    finally:
        minhash.JACCARD_POWER = before
