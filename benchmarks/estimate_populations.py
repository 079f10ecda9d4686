"""Complete pair populations for the estimate benchmark: every pair of a set of texts, the
truth from groups of duplicates, the neighbour graph built over those texts alone, as a
project of them would build it.

- **C, imbalanced** (`population_c`): 3,400 Quora questions, every pair of them (about 5.8
  million). The groups are the transitive closure of Quora's duplicate labels; whole groups
  are taken at random (seed 0) until 2,300 questions are in, then 1,100 questions that no
  duplicate label touches. So about 0.02% of the pairs are duplicates, as imbalanced as a
  file of 3,393 news sentences with 1,147 duplicate pairs (0.02%).
- **S, the sample questions** (`population_sample`): the 2,254 rows of
  `duplens_data/sample_questions.csv`, one text per distinct normalised question, duplicates
  by their answer key (`sample_questions_groups.csv`: rows of one group are duplicates; a row
  not in it has none).

A pair is a candidate when the graph (`build_knn_graph`, 10 neighbours, completed above
0.75, over the population's own vectors) holds it; the others are outside the graph.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "duplens_data" / "sample_questions.csv"
SAMPLE_GROUPS = ROOT / "duplens_data" / "sample_questions_groups.csv"
C_GROUPED_TEXTS = 2_300
C_SINGLE_TEXTS = 1_100
SEED = 0
STS_DUPLICATE = 4.0


def graph_edges(vectors: np.ndarray) -> np.ndarray:
    """The neighbour graph's pairs over these vectors, as keys min * n + max."""
    from engine.dedup.graph import build_knn_graph
    from engine.index.hnsw import HnswIndex

    n = len(vectors)
    index = HnswIndex(vectors.shape[1], capacity=n)
    index.add(np.arange(n, dtype=np.int64), vectors)
    graph = build_knn_graph(index, 10, vectors=lambda t: vectors[np.asarray(t)])
    rows = graph.ids[graph.row_of_entries().astype(np.int64)].astype(np.int64)
    cols = graph.ids[graph.indices.astype(np.int64)].astype(np.int64)
    return np.unique(np.minimum(rows, cols) * n + np.maximum(rows, cols))


def complete(vectors: np.ndarray, group: np.ndarray) -> dict:
    """Every pair i < j of the texts: similarity, duplicate (same group, group >= 0),
    candidate (the graph holds it), and the texts' positions."""
    n = len(vectors)
    a, b = np.triu_indices(n, k=1)
    score = np.empty(len(a), dtype=np.float64)
    step = 1_000_000
    v = np.asarray(vectors, dtype=np.float32)
    for start in range(0, len(a), step):
        x, y = a[start:start + step], b[start:start + step]
        score[start:start + step] = np.einsum("ij,ij->i", v[x], v[y])
    g = np.asarray(group)
    dup = (g[a] == g[b]) & (g[a] >= 0)
    key = a.astype(np.int64) * n + b
    candidate = np.isin(key, graph_edges(v), assume_unique=False)
    return {"score": score, "dup": dup, "candidate": candidate, "a": a, "b": b, "n": n}


def closure_groups(n: int, a: np.ndarray, b: np.ndarray, dup: np.ndarray) -> np.ndarray:
    """Each text's group under the transitive closure of the duplicate labels (-1: no
    duplicate label touches it)."""
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a[dup].tolist(), b[dup].tolist(), strict=True):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[rx] = ry
    roots = np.array([find(i) for i in range(n)])
    sizes = np.bincount(roots, minlength=n)
    return np.where(sizes[roots] > 1, roots, -1)


def population_c(quora: dict, *, seed: int = SEED, exclude: np.ndarray | None = None
                 ) -> tuple[dict, dict]:
    """Population C from the Quora pairs (`estimate._quora()`), and what it is made of.
    `seed` and `exclude` (question positions no text of it may be, nor share a group with)
    make the validation population of the same recipe (`benchmarks/estimate_choice.py`)."""
    groups = closure_groups(quora["n"], quora["a"], quora["b"], quora["dup"])
    rng = np.random.default_rng(seed)
    banned = np.zeros(quora["n"], dtype=bool)
    if exclude is not None:
        banned[np.asarray(exclude)] = True
        taken = np.unique(groups[np.asarray(exclude)])
        banned |= np.isin(groups, taken[taken >= 0])
    grouped = np.flatnonzero((groups >= 0) & ~banned)
    order = grouped[np.argsort(groups[grouped], kind="stable")]
    roots, starts = np.unique(groups[order], return_index=True)
    ends = np.r_[starts[1:], len(order)]
    chosen: list[int] = []
    for i in rng.permutation(len(roots)):
        m = order[starts[i]:ends[i]]
        if len(chosen) + len(m) > C_GROUPED_TEXTS:
            continue
        chosen.extend(m.tolist())
        if len(chosen) == C_GROUPED_TEXTS:
            break
    labelled = np.zeros(quora["n"], dtype=bool)
    labelled[quora["a"]] = labelled[quora["b"]] = True
    singles = np.flatnonzero(labelled & (groups < 0) & ~banned)
    chosen.extend(rng.choice(singles, C_SINGLE_TEXTS, replace=False).tolist())
    chosen_arr = np.asarray(chosen)
    pop = complete(quora["vectors"][chosen_arr], groups[chosen_arr])
    pop.update(positions=chosen_arr, group=groups[chosen_arr])
    return pop, {"texts": len(chosen_arr), "grouped_texts": C_GROUPED_TEXTS,
                 "single_texts": C_SINGLE_TEXTS, "seed": seed}


def sample_texts() -> tuple[list[str], np.ndarray, dict]:
    """The sample's distinct normalised questions (first row's text kept), each one's group
    by the answer key (-1: none), and counts."""
    from engine.text import normalise

    with SAMPLE_GROUPS.open(encoding="utf-8") as fh:
        group_of_row = {r["id"]: int(r["group"]) for r in csv.DictReader(fh)}
    texts: list[str] = []
    group: list[int] = []
    seen: dict[str, int] = {}
    rows = 0
    with SAMPLE.open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            rows += 1
            key = normalise(r["question"])
            g = group_of_row.get(r["id"], -1)
            if key in seen:
                i = seen[key]
                if group[i] < 0:
                    group[i] = g
                continue
            seen[key] = len(texts)
            texts.append(r["question"])
            group.append(g)
    return texts, np.asarray(group), {"rows": rows, "texts": len(texts)}


def population_sample() -> tuple[dict, dict]:
    """Population S: every pair of the sample questions' distinct texts."""
    from benchmarks import corpus

    texts, group, counts = sample_texts()
    return complete(corpus.embed(texts), group), counts


def population_sts() -> tuple[dict, dict]:
    """The STS benchmark's training pairs as a labelled pair population (as A is of Quora's):
    a pair is a duplicate when its gold similarity is at least `STS_DUPLICATE` (4: "mostly
    equivalent"). A candidate when the graph over the distinct sentences of those pairs holds
    it, or both sentences are the same. Only `benchmarks/estimate_choice.py` uses it: the
    reported populations never are its data."""
    from benchmarks import corpus
    from benchmarks.data import STSB_TRAIN

    first, second, gold = [], [], []
    with STSB_TRAIN.open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            score, s1, s2 = line.rstrip("\n").split("\t")
            first.append(s1)
            second.append(s2)
            gold.append(float(score))
    texts = sorted(set(first) | set(second))
    position = {t: i for i, t in enumerate(texts)}
    vectors = corpus.embed(texts)
    a = np.asarray([position[t] for t in first])
    b = np.asarray([position[t] for t in second])
    n = len(texts)
    score = np.einsum("ij,ij->i", vectors[a], vectors[b]).astype(np.float64)
    key = np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b)
    candidate = np.isin(key, graph_edges(vectors)) | (a == b)
    dup = np.asarray(gold) >= STS_DUPLICATE
    return ({"score": score, "dup": dup, "candidate": candidate},
            {"texts": n, "duplicate_at_gold": STS_DUPLICATE})
