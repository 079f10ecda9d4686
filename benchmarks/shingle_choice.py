"""How MinHash takes its 5-word runs, chosen on validation data: over the whole text (the rule
before schema v11) against within each paragraph (`engine.documents.minhash`: no run spans a
blank line).

Run by `benchmarks.documents` on the project its Duplens arm imported, so the windows and
the threshold are the product's own. For each rule, a copy of that project has every
signature made again by the rule (`engine.store.migrations.remake_signatures`, as the schema
step does) and its stored graphs dropped; the graph is then built as the product builds it
(windows, the rule's signatures, its MinHash candidates) and cut at the project's threshold,
and the clusters' pairs are scored on the validation half only (the product's run is what
the test half reports). Also kept: the Jaccard, estimated from the rule's signatures, of
every validation duplicate pair of each kind, so the table can say where each rule leaves
a kind against the threshold.

The rule for the product was fixed before the run: the higher validation pair F1; a tie
keeps the rule that needs no schema step. That was runs across paragraphs until schema v11
made every signature within paragraphs (chosen by a higher F1: reordered pairs shared as
little as 72% of their runs across paragraphs, under the threshold then). Since schema v13
reads a Jaccard on the similarity scale (0.72 reads as 0.87), the two rules tie on the
validation half, and a tie keeps runs within paragraphs, the rule the product has: going
back would be another schema step, for nothing measured.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

RULES = {"runs across paragraphs": True, "runs within paragraphs": False}


def documents_side(project_path: str, threshold: float,
                   scored: Callable[[set[frozenset]], dict],
                   duplicates: dict[str, list[tuple[str, str]]]) -> dict:
    """Both rules on copies of the project at `threshold`; `scored(pairs)` scores found pairs
    of external ids on the validation half (`benchmarks.documents.score`); `duplicates`:
    {kind: validation duplicate pairs of external ids}."""
    out: dict = {"threshold": threshold}
    source = Path(project_path)
    for rule, across in RULES.items():
        with tempfile.TemporaryDirectory(prefix="duplens-shingle-choice-") as tmp:
            copy = copied(source, Path(tmp))
            seconds = _remake(copy, across)
            found, ext, signatures = cut_pairs(copy, threshold)
        out[rule] = {**scored(found), "remake_seconds": round(seconds, 2),
                     "jaccard_of_duplicates": _jaccards(duplicates, ext, signatures)}
    out["chosen"] = choose(out)
    out["product"] = product_rule()
    return out


def copied(project: Path, folder: Path) -> Path:
    """A copy of the project file and everything beside it that its name starts (the WAL,
    the index) in `folder`; the copy's path."""
    for part in project.parent.iterdir():
        if part.name.startswith(project.name):
            target = folder / part.name
            (shutil.copytree if part.is_dir() else shutil.copy2)(part, target)
    return folder / project.name


def choose(choice: dict) -> str:
    """The rule of the higher validation pair F1; a tie keeps runs within paragraphs, the
    rule every signature has been made by since schema v11 (no schema step)."""
    across, within = RULES
    return across if choice[across]["all"]["f1"] > choice[within]["all"]["f1"] else within


def product_rule() -> str:
    """Which rule the product's `minhash.shingles` follows now."""
    from engine.documents.minhash import shingles

    two = "a b c d e f\n\ng h i j k"
    for rule, across in RULES.items():
        if shingles(two) == shingles(two, across_paragraphs=across):
            return rule
    raise AssertionError("the product's shingles follow neither rule")


def _remake(project: Path, across: bool) -> float:
    """The project's signatures made again by the rule and its graphs dropped; seconds."""
    import time

    from engine.documents import minhash
    from engine.store.database import Store
    from engine.store.migrations import remake_signatures

    store = Store.open(project)
    try:
        t0 = time.perf_counter()
        with store.write() as conn:
            remake_signatures(conn, lambda body: minhash.to_bytes(
                minhash.signature(body, across_paragraphs=across)))
        return time.perf_counter() - t0
    finally:
        store.close()


def cut_pairs(project: Path, threshold: float
         ) -> tuple[set[frozenset], dict[int, str], dict[int, bytes]]:
    """The pairs of external ids that the product's cut puts together in the project, its
    {text id: external id} and its signatures."""
    from sqlalchemy import select

    from benchmarks.cut_choice import cluster_pairs
    from engine.dedup.cut import cut_clusters
    from engine.project import Project
    from engine.store.schema import items
    from engine.store.text_signatures import live_signatures

    with Project.open(project) as opened:
        graph = opened.clusters.graph()
        with opened.store.read() as conn:
            ext = {int(t): str(e) for e, t in conn.execute(
                select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
            signatures = live_signatures(conn)
    return cluster_pairs(graph, cut_clusters(graph, threshold), ext), ext, signatures


def _jaccards(duplicates: dict[str, list[tuple[str, str]]], ext: dict[int, str],
              signatures: dict[int, bytes]) -> dict[str, dict]:
    """Per kind, the lowest and median estimated Jaccard of its duplicate pairs where both
    documents have a signature."""
    from engine.documents import minhash

    by_ext = {e: minhash.from_bytes(signatures[t]) for t, e in ext.items()
              if t in signatures}
    out = {}
    for kind, pairs in duplicates.items():
        values = [minhash.jaccard(by_ext[a], by_ext[b]) for a, b in pairs
                  if a in by_ext and b in by_ext]
        if values:
            out[kind] = {"pairs": len(values), "lowest": round(min(values), 3),
                         "median": round(float(np.median(values)), 3)}
    return out


def table(choice: dict, pct, duplicate_kinds, decoy_kinds) -> dict:
    """The rules side by side, for `benchmarks.documents`' report."""
    rows = []
    chosen = choose(choice)     # from the recorded figures, by today's rule
    for rule in RULES:
        m = choice[rule]
        jac = m["jaccard_of_duplicates"]
        rows.append([rule + (" (chosen)" if rule == chosen else ""),
                     pct(m["all"]["precision"]), pct(m["all"]["recall"]),
                     pct(m["all"]["f1"]),
                     ", ".join(f"{k} {pct(m[k])}" for k in duplicate_kinds)
                     + "; flagged: " + ", ".join(f"{k} {pct(m[k])}" for k in decoy_kinds),
                     ", ".join(f"{k} {v['lowest']:.2f}" for k, v in jac.items()),
                     f"{m['remake_seconds']:.1f} s"])
    return {"title": f"How MinHash takes its 5-word runs: over the whole text, or within each "
                     f"paragraph; each rule's signatures made for a copy of the project, its "
                     f"graph built and cut at the threshold {choice['threshold']:g}; chosen "
                     "on the validation half (the product's run above is the test)",
            "columns": ["rule", "precision", "recall", "F1", "F1 per kind; share of decoys "
                        "flagged", "lowest Jaccard of a duplicate pair, per kind",
                        "signatures made in"],
            "rows": rows}
