"""The quality gate a backend must pass before Duplens encodes with it by default: its
embeddings against torch's, on the same texts, in the same run.

    python -m benchmarks.backends [--quick]      (the gate runs inside the backends benchmark)
    python -m benchmarks.backends --gate-only    (the gate alone, no timing:
                                                  benchmarks/results/gate/backends_gate.json)

A candidate passes when, against torch's float32 embeddings of the same texts
(`engine.encoding.gate_rules`, which a fine-tuned version's fast form obeys too):

- STS benchmark pairs: Spearman x100 of cosine similarity at most `STSB_LOSS` lower;
- held-out Quora pairs (a seeded sample of `QUORA_PAIRS` from one part of
  benchmarks/finetune_quora.py's three-way split, whose questions are never trained on):
  average precision (engine/pair_metrics.py) at most `PAIR_AP_LOSS` points lower;
- MRPC-style paraphrase pairs built from the shipped sample questions (`sample_pairs`), the
  second labelled set: average precision at most `PAIR_AP_LOSS` points lower;
- the cut: over up to `CUT_QUESTIONS` distinct Quora questions, the pairs the product's
  clusters hold at the bundled model's default threshold (each side's exact
  10-nearest-neighbour graph, cut by `engine.dedup.cut`), pair F1 against torch's cut at
  least `MIN_CUT_F1`;
- Quora's labelled duplicates among those questions: the partner among the `PARTNER_K`
  nearest at most `PARTNER_LOSS` points less often than with torch.

The gate makes a choice (which backend a class of CPU gets), so its data come in two parts
(`load_data`'s `part`), split as every choice in Duplens is:

- "choice", what a default is chosen on: STSb's dev split (1,500 pairs), Quora validation
  pairs, and the cut over the first `CUT_QUESTIONS` distinct questions of Quora's training
  and validation parts (file order);
- "test", reported once for the backend chosen: STSb's test split (1,379 pairs), Quora test
  pairs, and the cut over the test part's questions (about 11,000). The split is by question
  groups, so no test question, nor any duplicate of one, is in the choice's cut.

The sample pairs have no split of their own and are the same in both parts.

Reported beside them, not gating: recall@10 of the product's search (an `HnswIndex` with its
default parameters, 500 of the questions against 10,000 others) and of exact search against
torch's exact neighbours, and top-1 agreement. Neighbours six to ten swapping places is not
what an analyst sees; a pair leaving the cut or a duplicate falling out of the top five is.

Losses only: a backend that scores higher than torch has lost nothing. The functions here
take embeddings, not models, so the gate itself is tested on a small set
(tests/benchmarks/test_quality_gate.py).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.encoding.conversion import CALIBRATION_SAMPLES
from engine.encoding.gate_rules import (  # noqa: F401 - the gate's rules, named here too
    MIN_CUT_F1,
    PAIR_AP_LOSS,
    PARTNER_K,
    PARTNER_LOSS,
    STSB_LOSS,
    K,
    cut_figures,
    cut_pairs,
    exact_top,
    failures,
    hnsw_top,
    pair_f1,
    partner_rate,
    recall,
)

# A backend replaces torch as the default only when it is clearly faster: the same encoder
# timed in different runs on this machine varied from 0.99x to 1.17x, and a new default
# costs a first export and another runtime to install.
MIN_SPEEDUP = 1.2
QUORA_PAIRS = 4000
CUT_QUESTIONS = 20_000     # the cut is judged over this many distinct Quora questions
SEARCH_CORPUS, SEARCH_QUERIES = 10_000, 500   # of them, for the reported search recall
# The gate's bar on search until 2026-11-29 (recall@10 against torch's exact neighbours):
# benchmarks/int8_recipes.py measured its recipes against it, and its results keep it.
MIN_RECALL = 0.98
CALIBRATION_ROWS = CALIBRATION_SAMPLES  # the first sample questions, which the int8
                                        # quantiser measures (engine/encoding/conversion.py)

Encode = Callable[[Sequence[str]], np.ndarray]

CHOICE, TEST = "choice", "test"   # the gate's two parts of data (`load_data`)
PART_SOURCES = {   # what each part is made of, as a results file records it
    CHOICE: {"stsb_split": "dev", "quora_part": "validation",
             "cut_from": "Quora's training and validation parts"},
    TEST: {"stsb_split": "test", "quora_part": "test", "cut_from": "Quora's test part"},
}


@dataclass(frozen=True)
class GateData:
    """Everything the gate encodes, built once and shared by every backend."""

    sts_a: list[str]
    sts_b: list[str]
    sts_gold: np.ndarray
    quora: list          # LabelledPair
    sample: list         # LabelledPair
    questions: list[str]         # the cut's questions; the search's corpus and queries too
    duplicates: np.ndarray       # (m, 2) positions in `questions` of Quora's duplicates
    threshold: float             # the bundled model's default threshold: where it cuts
    part: str = CHOICE           # CHOICE or TEST: which data these are (`load_data`)

    @property
    def search_slices(self) -> tuple[slice, slice]:
        """Where the reported search's corpus and queries lie in `questions`: 10,000 and
        the 500 after them, fewer when the questions are fewer."""
        n = len(self.questions)
        queries = min(SEARCH_QUERIES, n // 20)
        corpus = min(SEARCH_CORPUS, n - queries)
        return slice(0, corpus), slice(corpus, corpus + queries)

    @property
    def corpus(self) -> list[str]:
        return self.questions[self.search_slices[0]]

    @property
    def queries(self) -> list[str]:
        return self.questions[self.search_slices[1]]

    def describe(self) -> dict:
        return {"part": self.part, **PART_SOURCES[self.part],
                "stsb_pairs": len(self.sts_gold), "quora_pairs": len(self.quora),
                "quora_duplicates": sum(p.is_duplicate for p in self.quora),
                "sample_pairs": len(self.sample),
                "sample_duplicates": sum(p.is_duplicate for p in self.sample),
                "cut_questions": len(self.questions),
                "cut_duplicates": len(self.duplicates), "threshold": self.threshold,
                "search_corpus": len(self.corpus), "search_queries": len(self.queries)}


def load_data(questions: int = CUT_QUESTIONS, *, part: str = CHOICE,
              with_threshold: bool = True, quora_pairs: int = QUORA_PAIRS,
              sts_pairs: int | None = None) -> GateData:
    """The gate's data of `part` (CHOICE or TEST, see the module doc): STSb pairs, held-out
    Quora pairs, the sample pairs, and up to `questions` distinct Quora questions with the
    labelled duplicates among them. `with_threshold` False leaves the threshold NaN, for a
    machine that only encodes the texts (benchmarks/gpu_gate.py) with a copy of the weights
    whose digest is not recorded. Fewer `quora_pairs` and `sts_pairs` (the first ones) make
    a smoke run's data, too small for a verdict."""
    from benchmarks.data import STSB_DEV, STSB_TEST
    from benchmarks.finetune_quora import quora_splits

    if part not in PART_SOURCES:
        raise ValueError(f"part must be one of {sorted(PART_SOURCES)}, not {part!r}")
    sts = STSB_DEV if part == CHOICE else STSB_TEST
    if not sts.exists():
        raise SystemExit(f"benchmark data not found: {sts} (set DUPLENS_SHARED)")
    a, b, gold = read_sts(sts)
    a, b, gold = a[:sts_pairs], b[:sts_pairs], gold[:sts_pairs]
    splits = quora_splits(0, quora_pairs)
    held = splits.validation if part == CHOICE else splits.test
    texts = part_questions(part, questions)
    return GateData(a, b, gold, held, sample_pairs(), texts, labelled_duplicates(texts),
                    bundled_threshold() if with_threshold else float("nan"), part)


def part_questions(part: str, limit: int) -> list[str]:
    """Up to `limit` distinct Quora questions of `part`, in file order: the training and
    validation parts' for CHOICE, the test part's for TEST (the split of
    benchmarks/finetune_quora.py, seed 0, by question groups)."""
    from benchmarks.data import QUORA, quora_questions
    from benchmarks.finetune_quora import read_quora_pairs, three_way_split

    _, _, test, _ = three_way_split(read_quora_pairs(QUORA), 0)
    tested = {t for p in test for t in (p.text_a, p.text_b)}
    keep = (lambda t: t in tested) if part == TEST else (lambda t: t not in tested)
    return [t for t in quora_questions() if keep(t)][:limit]


def data_words(data: dict) -> str:
    """What a results file's gate data were (`GateData.describe`), in the report's words.
    Files made before the gate had two parts name no part: their STSb pairs were the test
    split's, their Quora pairs validation's, and their cut took questions of every part."""
    words = (f"STSb {data.get('stsb_split', 'test')} ({data['stsb_pairs']:,} pairs); "
             f"{data['quora_pairs']:,} Quora {data.get('quora_part', 'validation')} pairs "
             f"({data['quora_duplicates']:,} duplicates); {data['sample_pairs']:,} pairs of "
             f"the shipped sample questions ({data['sample_duplicates']:,} paraphrases)")
    if "cut_questions" in data:   # older backends files judged no cut
        words += (f"; the cut over {data['cut_questions']:,} distinct questions of "
                  f"{data.get('cut_from', 'every part of Quora (file order)')}, with "
                  f"{data['cut_duplicates']:,} labelled duplicates among them")
    return words


def labelled_duplicates(texts: list[str]) -> np.ndarray:
    """(m, 2) positions in `texts` of the pairs Quora labels duplicates, both among them."""
    import gzip

    from benchmarks.data import QUORA

    at = {t: i for i, t in enumerate(texts)}
    found = set()
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            _, _, q1, q2, label = line.rstrip("\n").split("\t")
            if label == "1" and q1 in at and q2 in at and q1 != q2:
                found.add(tuple(sorted((at[q1], at[q2]))))
    return np.asarray(sorted(found), dtype=np.int64).reshape(-1, 2)


def bundled_threshold() -> float:
    """The bundled model's recorded default threshold (duplens_data/model_thresholds.json,
    keyed by the weights' fingerprint); a model without one fails loudly, since a gate cut
    at the fallback would judge another threshold than the product's."""
    from engine.encoding.model_spec import resolve_model
    from engine.encoding.model_threshold import for_fingerprint

    found = for_fingerprint(resolve_model(None).fingerprint)
    if not found.recorded:
        raise RuntimeError("no default threshold is recorded for the bundled model")
    return found.value


def read_sts(path) -> tuple[list[str], list[str], np.ndarray]:
    s1, s2, gold = [], [], []
    with open(path, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            s1.append(row["sentence1"])
            s2.append(row["sentence2"])
            gold.append(float(row["score"]))
    return s1, s2, np.asarray(gold)


def sample_pairs(seed: int = 0) -> list:
    """MRPC-style labelled pairs (paraphrase or not) from the shipped sample questions
    (duplens_data/README.md), leaving out the first `CALIBRATION_ROWS` rows, which the int8
    quantiser measures activations on:

    - paraphrases: every pair of rows in the same duplicate group (430 pairs);
    - as many hard negatives: the same-topic pairs of rows in no common group that share
      the most words (Jaccard of their lower-case word sets; ties by row order), as MRPC's
      negatives share most of their words;
    - as many other negatives: same-topic pairs in no common group, drawn at random.

    Built from the files alone, no model involved, so no backend is favoured."""
    import re

    import duplens_data
    from engine.training.pairs import LabelledPair

    with duplens_data.sample_questions().open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[CALIBRATION_ROWS:]
    with duplens_data.sample_groups().open(encoding="utf-8", newline="") as fh:
        group_of = {r["id"]: r["group"] for r in csv.DictReader(fh)}
    text = {r["id"]: r["question"] for r in rows}
    members: dict[str, list[str]] = {}
    for r in rows:
        if r["id"] in group_of:
            members.setdefault(group_of[r["id"]], []).append(r["id"])
    positives = [pair for ids in members.values() for pair in itertools.combinations(ids, 2)]

    def words(t: str) -> set[str]:
        return set(re.findall(r"\w+", t.lower()))

    by_topic: dict[str, list[str]] = {}
    for r in rows:
        by_topic.setdefault(r["topic"], []).append(r["id"])
    bags = {i: words(t) for i, t in text.items()}
    others = []
    for ids in by_topic.values():
        for x, y in itertools.combinations(ids, 2):
            if group_of.get(x) is not None and group_of.get(x) == group_of.get(y):
                continue
            overlap = len(bags[x] & bags[y]) / max(1, len(bags[x] | bags[y]))
            others.append((overlap, x, y))
    hard = sorted(others, key=lambda o: -o[0])[:len(positives)]
    chosen = {(x, y) for _, x, y in hard}
    rest = [(x, y) for _, x, y in others if (x, y) not in chosen]
    rng = np.random.default_rng(seed)
    easy = [rest[i] for i in sorted(rng.choice(len(rest), len(positives), replace=False))]
    pairs = [LabelledPair(text[x], text[y], 1.0, key_a=x, key_b=y) for x, y in positives]
    pairs += [LabelledPair(text[x], text[y], 0.0, key_a=x, key_b=y)
              for x, y in [(x, y) for _, x, y in hard] + easy]
    return pairs


def pair_ap(vectors: dict[str, np.ndarray], pairs: Sequence) -> float:
    """Average precision x100 of cosine similarity on labelled pairs; `vectors` maps each
    text to its (normalised) embedding."""
    from engine.pair_metrics import threshold_curve

    scores = [float(vectors[p.text_a] @ vectors[p.text_b]) for p in pairs]
    return 100 * threshold_curve(scores, [p.is_duplicate for p in pairs]).average_precision


def encode_pairs(encode: Encode, pairs: Sequence) -> dict[str, np.ndarray]:
    texts = list(dict.fromkeys(t for p in pairs for t in (p.text_a, p.text_b)))
    return dict(zip(texts, encode(texts), strict=True))


def top1_agreement(found: np.ndarray, reference: np.ndarray) -> float:
    return float(np.mean(found[:, 0] == reference[:, 0]))


def measure(encode: Encode, data: GateData) -> dict:
    """The gate's figures for one encoder that need no other encoder, plus its embeddings
    of the questions under "_questions" (for the cut and the searches, `compare`)."""
    from scipy.stats import spearmanr

    a, b = encode(data.sts_a), encode(data.sts_b)
    questions = encode(data.questions)
    return {
        "stsb_spearman": 100 * float(spearmanr(np.sum(a * b, axis=1), data.sts_gold).statistic),
        "quora_ap": pair_ap(encode_pairs(encode, data.quora), data.quora),
        "sample_pairs_ap": pair_ap(encode_pairs(encode, data.sample), data.sample),
        "partner_top5": partner_rate(questions, data.duplicates, PARTNER_K),
        "_questions": questions,
    }


def compare(candidate: dict, reference: dict, data: GateData) -> dict:
    """The figures judged against the reference's (torch's) embeddings: the cut's pair F1
    and, reported only, recall@10 of the product's HNSW search and of exact search against
    the reference's exact neighbours, and top-1 agreement."""
    if "_cut" not in reference:
        reference["_cut"] = cut_pairs(reference["_questions"], data.threshold)
    found = cut_pairs(candidate["_questions"], data.threshold)
    corpus, queries = data.search_slices
    truth = exact_top(reference["_questions"][corpus], reference["_questions"][queries])
    exact = exact_top(candidate["_questions"][corpus], candidate["_questions"][queries])
    hnsw = hnsw_top(candidate["_questions"][corpus], candidate["_questions"][queries])
    return {**cut_figures(found, reference["_cut"]), "cut_pairs": len(found),
            "recall_at_10": recall(hnsw, truth), "exact_recall_at_10": recall(exact, truth),
            "top1_agreement": top1_agreement(exact, truth)}


def verdict(candidate: dict, torch: dict) -> dict:
    """Pass or fail against torch's figures, with every reason it failed
    (`gate_rules.failures`: the same words wherever a gate is judged)."""
    failed = failures(candidate, torch)
    return {"passed": not failed, "failed": failed}


def choose_default(rows: dict[str, dict]) -> tuple[str, str]:
    """The fastest backend that passed and is at least `MIN_SPEEDUP` times torch's speed
    (torch is the reference and always may serve), and why: (name, sentence)."""
    torch = rows["torch"]["sentences_per_s"]
    passed = [n for n, r in rows.items() if n != "torch" and r["gate"]["passed"]]
    faster = [n for n in passed if rows[n]["sentences_per_s"] >= MIN_SPEEDUP * torch]
    failed = {n: r["gate"]["failed"] for n, r in rows.items()
              if n != "torch" and not r["gate"]["passed"]}
    why = "; ".join(f"{n} failed: {', '.join(f)}" for n, f in failed.items())
    if not faster:
        slow = [f"{n} {rows[n]['sentences_per_s'] / torch:.2f}x" for n in passed]
        return "torch", (f"no backend that passed the gate was at least {MIN_SPEEDUP:g}x "
                         f"as fast as torch" + (f" (passed: {', '.join(slow)})" if slow else "")
                         + (f"; {why}" if why else ""))
    best = max(faster, key=lambda n: rows[n]["sentences_per_s"])
    return best, (f"{best} passed the gate and was the fastest that did "
                  f"({rows[best]['sentences_per_s']:.0f} sentences/s against torch's "
                  f"{torch:.0f})" + (f"; {why}" if why else ""))


