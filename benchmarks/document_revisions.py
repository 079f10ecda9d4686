"""Real near-duplicates: the same Django documentation page in two releases six years apart,
edited by its authors in between, found by the documents benchmark's methods.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only document_revisions [--quick]

`documents` builds its near-duplicates by rule (2% of words replaced, a new introduction,
...). Here nobody built them: Django's documentation was rewritten page by page between
1.11 (2017) and 4.2 (2023) by the people who keep it, with every kind of real edit (a
sentence reworded, a paragraph added, a section moved to another page, an example replaced,
a version number changed).

**The corpus** (never committed): Django's source archives from PyPI, `pip download
--no-deps --no-binary :all: django==1.11.29` and `django==4.2.16` into the cache
(`~/.cache/duplens-bench/django/`, moved by `$DUPLENS_BENCH_CACHE`); their SHA-256 go into
the results. Each release's `docs/**/*.txt` (reST, BSD licence) is read to prose by the
documents benchmark's reader (`document_corpus.rst_paragraphs`: headings, code, tables and
markup dropped). A *page* is one file; it is a row of the table when its prose has at least
`MIN_WORDS` words. When the archives cannot be downloaded the benchmark says so and measures
nothing: there is no stand-in corpus.

**The truth key is provenance, not a similarity:** a page's two releases are one duplicate
pair (a case); any two rows from different pages are not duplicates. A case's kind says how
much of the page changed, as the share of its words that difflib's `SequenceMatcher` (no
junk heuristic) cannot align between the two releases, 1 - 2M/(n1 + n2):
`revised_light` under 5%, `revised` 5% to 20%, `revised_heavy` 20% or more. Pages whose
prose is the same word for word in both releases are one row (4.2's) and a distractor, as
are pages of at least `MIN_WORDS` words in one release only. Because the key is
provenance, text that moved from one page to another between the releases (4.2 moved most
of `ref/csrf` to `howto/csrf`) makes a cross-page pair that shares real text count as a
false positive; every arm's cross-page pairs on the test half are listed in the results
with how much of each page the other holds (`cross_page_found`), so a reader can judge
them.

**Split and scoring** are the documents benchmark's (`document_corpus.split_groups`,
`documents.score`): pages split 40% validation / 60% test per kind (seed 1), a found pair
scored where both its rows are in the test half; a threshold (plain sentence-transformers',
SemHash's tuned arm, Duplens' tuned arm) is chosen on validation and reported once on test.

**The arms**, in the same run on the same table: plain sentence-transformers (truncating),
datasketch's MinHash LSH with text-dedup's shingling at Jaccard 0.5 and 0.7, SemHash's own
code with a model2vec model distilled from the bundled MiniLM (its default model is on the
Hugging Face Hub only), and Duplens as a user runs it: `duplens import` and `duplens
duplicates --json` at the project's default threshold, timed whole, plus its clusters at a
threshold chosen on validation. See `benchmarks/documents.py` for each arm's details.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks import document_corpus as dc
from benchmarks import documents

RELEASES = ("1.11.29", "4.2.16")
MIN_WORDS = 600
LIGHT, HEAVY = 0.05, 0.20               # changed share: under LIGHT light, HEAVY on heavy
KINDS = ("revised_light", "revised", "revised_heavy")
SEED = 0
QUICK_PAGES = 40                        # a smoke run's cases (of about 150)
ARMS = ("plain_st", "minhash_lsh", "minhash_lsh_0.7", "semhash_distilled",
        "semhash_distilled_tuned", "duplens", "duplens_tuned")
CROSS_LISTED = 20                       # cross-page pairs kept per arm in the results


class Unavailable(RuntimeError):
    """A release's archive could not be downloaded or read: nothing is measured."""


def cache_folder() -> Path:
    return documents.cache_folder().parent / "django"


def fetch_release(version: str, cache: Path) -> tuple[Path, str]:
    """Django `version`'s source archive in `cache` (downloaded with pip when not there yet)
    and its SHA-256. Raises `Unavailable` saying why."""
    cache.mkdir(parents=True, exist_ok=True)
    name = f"Django-{version}.tar.gz"
    archive = cache / name
    if not archive.exists():
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 "--no-build-isolation", "--disable-pip-version-check", "-d", str(cache),
                 f"django=={version}"], capture_output=True, text=True, check=False,
                timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"`pip download django=={version}` could not run: {exc}") \
                from exc
        found = sorted(cache.glob(f"[Dd]jango-{version}.tar.gz"))
        if done.returncode != 0 or not found:
            said = (done.stderr or done.stdout).strip().splitlines()[-2:]
            raise Unavailable(f"`pip download django=={version}` failed ({done.returncode}): "
                              f"{' / '.join(said)}")
        archive = found[0]
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def read_pages(archive: Path) -> dict[str, list[str]]:
    """Every `docs/**/*.txt` page of a Django source archive -> its prose paragraphs, read
    from the archive itself (nothing is unpacked or run)."""
    pages: dict[str, list[str]] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 2)
            if (not member.isfile() or len(parts) < 3 or parts[1] != "docs"
                    or not parts[2].endswith(".txt")):
                continue
            raw = tar.extractfile(member)
            if raw is None:
                continue
            text = raw.read().decode("utf-8", errors="replace")
            pages[parts[2].removesuffix(".txt")] = dc.rst_paragraphs(text)
    return pages


def changed_share(old: str, new: str) -> float:
    """The share of two texts' words that do not align: 1 - 2M / (n1 + n2), M the words in
    difflib's matching blocks over the word sequences."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return 1.0 - 2.0 * matched / (len(a) + len(b))


def kind_of(share: float) -> str:
    return "revised_light" if share < LIGHT else "revised" if share < HEAVY \
        else "revised_heavy"


def build_table(old: dict[str, list[str]], new: dict[str, list[str]], short: tuple[str, str],
                limit: int | None = None) -> tuple[dc.Built, dict]:
    """The table of rows (one per page and release; one row for a page unchanged) and its
    truth: each page in both releases whose prose changed is a duplicate case."""
    texts: dict[str, str] = {}
    cases: list[dc.Case] = []
    group_of: dict[str, str] = {}
    kind_of_group: dict[str, str] = {}
    shares: dict[str, float] = {}
    counts = defaultdict(int)

    def long(paragraphs: list[str] | None) -> bool:
        return bool(paragraphs) and sum(len(p.split()) for p in paragraphs) >= MIN_WORDS

    both = sorted(p for p in set(old) & set(new) if long(old[p]) and long(new[p]))
    if limit is not None:
        rng = np.random.default_rng(SEED)
        both = sorted(both[i] for i in rng.permutation(len(both))[:limit])
    for page in both:
        a_text, b_text = "\n\n".join(old[page]), "\n\n".join(new[page])
        b_id = f"{short[1]}/{page}"
        group_of[b_id] = page
        texts[b_id] = b_text
        if a_text.split() == b_text.split():
            kind_of_group[page] = "distractor"
            counts["unchanged"] += 1
            continue
        a_id = f"{short[0]}/{page}"
        texts[a_id] = a_text
        group_of[a_id] = page
        shares[page] = changed_share(a_text, b_text)
        kind_of_group[page] = kind_of(shares[page])
        cases.append(dc.Case(kind_of_group[page], a_id, b_id, True, page))
    if limit is None:
        for release, pages, other in ((short[0], old, new), (short[1], new, old)):
            for page in sorted(pages):
                if long(pages[page]) and not long(other.get(page)):
                    key = f"{release}/{page}"
                    texts[key] = "\n\n".join(pages[page])
                    group_of[key] = key
                    kind_of_group[key] = "distractor"
                    counts[f"only_in_{release}"] += 1
    ordered = sorted(texts, key=lambda k: (group_of[k], k))
    built = dc.Built({k: texts[k] for k in ordered}, cases, group_of, kind_of_group,
                     {"changed_share": {p: round(s, 4) for p, s in sorted(shares.items())}})
    return built, dict(counts)


def run(quick: bool) -> dict:
    cache = cache_folder()
    try:
        fetched = {v: fetch_release(v, cache) for v in RELEASES}
    except Unavailable as exc:
        _say(f"  no corpus, nothing measured: {exc}")
        return {"skipped": f"Django's documentation could not be read: {exc}"}
    pages = {v: read_pages(archive) for v, (archive, _) in fetched.items()}
    short = tuple(".".join(v.split(".")[:2]) for v in RELEASES)
    built, counts = build_table(pages[RELEASES[0]], pages[RELEASES[1]], short,
                                limit=QUICK_PAGES if quick else None)
    half, ids, texts = documents.split_and_shuffled(built)
    _say(f"  {len(ids)} pages, {len(built.cases)} revised in both releases; arms…")

    arms: dict[str, dict] = {}
    for name, fn in (("minhash_lsh", documents._minhash),
                     ("semhash_distilled", documents._semhash_distilled),
                     ("plain_st", documents._plain_st),
                     ("duplens", _duplens)):
        _say(f"  {name}…")
        load = documents._load()
        found = fn(ids, texts, built, half, quick) if fn is _duplens else \
            fn(ids, texts, built, half)
        found["load_average_before"] = load
        arms.update(found.pop("extra_arms", {}))
        arms[name] = found
        _say(f"  {name}: {documents._brief(found)}")
    arms["plain_st"].pop("_sims", None)
    for arm in arms.values():
        pairs = arm.pop("_pairs", None)
        if pairs is not None:
            arm["cross_page_found"] = cross_page(pairs, built, half)
            arm["missed"] = missed(pairs, built, half)

    shares = list(built.details["changed_share"].values())
    return {
        "seed": SEED, "quick_pages": QUICK_PAGES if quick else None,
        "corpus": {
            "releases": {v: {"archive": fetched[v][0].name, "sha256": fetched[v][1],
                             "pages_read": len(pages[v])} for v in RELEASES},
            "min_words": MIN_WORDS, "table_rows": len(ids),
            "table_words": dc.word_spread(texts), "rows_not_in_a_case": counts,
            "changed_share": {"bounds": {"light_below": LIGHT, "heavy_from": HEAVY},
                              "min": round(min(shares), 4) if shares else None,
                              "median": round(float(np.median(shares)), 4) if shares
                              else None,
                              "max": round(max(shares), 4) if shares else None},
            "changed_share_by_page": built.details["changed_share"],
            "distractors": {h: sum(half[g] == h for g, k in built.kind_of_group.items()
                                   if k == "distractor") for h in ("validation", "test")},
        },
        "cases": {kind: {h: sum(1 for c in built.cases if c.kind == kind
                                and half[c.group] == h) for h in ("validation", "test")}
                  for kind in documents.kinds_of(built)},
        "split": "by page, 40% validation / 60% test per kind (seed 1); scored on test",
        "arms": {name: arms[name] for name in ARMS if name in arms},
    }


def cross_page(found: set[frozenset], built: dc.Built, half: dict) -> dict:
    """The found test pairs between two different pages (false positives by the key), with
    how much of each row's word 5-grams the other holds, the largest share first."""
    test = {d for d, g in built.group_of.items() if half[built.group_of[d]] == "test"}
    pairs = []
    for pair in found:
        a, b = sorted(pair)
        if pair <= test and built.group_of[a] != built.group_of[b]:
            sa, sb = dc.shingles(built.texts[a]), dc.shingles(built.texts[b])
            shared = len(sa & sb)
            pairs.append({"a": a, "b": b,
                          "a_held_by_b": round(shared / len(sa), 3) if sa else 0.0,
                          "b_held_by_a": round(shared / len(sb), 3) if sb else 0.0})
    pairs.sort(key=lambda p: -max(p["a_held_by_b"], p["b_held_by_a"]))
    return {"pairs": len(pairs), "sharing_a_fifth_or_more": sum(
        max(p["a_held_by_b"], p["b_held_by_a"]) >= 0.2 for p in pairs),
        "largest": pairs[:CROSS_LISTED]}


def missed(found: set[frozenset], built: dc.Built, half: dict) -> list[dict]:
    """The test half's cases not found, with how much of the page changed, the most changed
    first."""
    shares = built.details["changed_share"]
    left = [{"page": c.group, "kind": c.kind, "changed_share": shares[c.group]}
            for c in built.cases if half[c.group] == "test"
            and frozenset((c.a, c.b)) not in found]
    return sorted(left, key=lambda m: -m["changed_share"])


def _duplens(ids: list[str], texts: list[str], built: dc.Built, half: dict,
             quick: bool) -> dict:
    """The product on its command line: import, duplicates at the project's threshold,
    both timed whole; and its clusters at a threshold chosen on validation."""
    from benchmarks.console import run_cli_output

    with tempfile.TemporaryDirectory(prefix="duplens-revisions-") as tmp:
        table = documents.write_table(Path(tmp) / "pages.csv", ids, texts)
        project = str(Path(tmp) / "pages.duplens")
        try:
            import_s, _ = run_cli_output(["import", project, str(table), "--column", "text",
                                          "--id-column", "id"])
            duplicates_s, out = run_cli_output(["duplicates", project, "--json"])
            threshold = json.loads(run_cli_output(["threshold", project, "--json"])[1])
            info = json.loads(run_cli_output(["info", project, "--json"])[1])
            grid = documents.QUICK_GRID if quick else documents.TUNING_GRID
            tuned = documents._duplens_chosen_on_validation(project, built, half, grid)
            jaccard_scale = documents.jaccard_scale_choice(
                project, built, half, float(threshold["value"]))
        except RuntimeError as exc:     # a command failed: said, not measured
            return {"ran": False, "engine": documents._engine_state(),
                    "why": " ".join(str(exc).split())[-600:]}
    pairs = documents._cluster_pairs([[m["id"] for m in c["members"]]
                                      for c in json.loads(out)])
    return {"ran": True, "engine": documents._engine_state(),
            "commands": ["duplens import P pages.csv --column text --id-column id",
                         "duplens duplicates P --json"],
            "threshold": {k: threshold.get(k) for k in ("value", "source", "reason")},
            "info": {k: info.get(k) for k in ("model", "backend", "texts", "truncated")},
            "seconds": {"import": round(import_s, 2), "duplicates": round(duplicates_s, 2),
                        "total": round(import_s + duplicates_s, 2)},
            "test": documents.score(pairs, built, half, "test"),
            "validation": documents.score(pairs, built, half, "validation")["all"],
            "jaccard_scale_choice": jaccard_scale,
            "_pairs": pairs, "extra_arms": {"duplens_tuned": tuned}}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the page --------------------------------------------------------------------------------
def present(result: dict, results: dict | None = None) -> dict:
    arms, corpus, cases = result["arms"], result["corpus"], result["cases"]
    kinds = list(cases)

    def pct(x: float) -> str:
        return f"{100 * x:.0f}%"

    rows = []
    for name in ARMS:
        arm = arms.get(name)
        if arm is None:
            continue
        label = documents.ARM_LABELS[name]
        if not arm.get("ran"):
            rows.append([label, "did not run", *[""] * (len(kinds) + 2)])
            continue
        if name == "plain_st":
            label += f", cosine ≥ {arm['threshold']:.3f}"
        if name in ("duplens", "duplens_tuned", "semhash_distilled_tuned"):
            label += f", threshold {arm['threshold']['value']:g}"
        test, cross = arm["test"], arm.get("cross_page_found", {})
        rows.append([label, *[pct(test[k]["recall"]) for k in kinds],
                     f"{pct(test['all']['precision'])} / {pct(test['all']['recall'])} / "
                     f"**{pct(test['all']['f1'])}**",
                     f"{cross.get('pairs', '?')} ({cross.get('sharing_a_fifth_or_more', '?')})",
                     {"duplens_tuned": "(same project)",
                      "semhash_distilled_tuned": "(same index)"}.get(
                          name, f"{arm['seconds']['total']:.1f} s")])
    test_cases = ", ".join(f"{v['test']} {k}" for k, v in cases.items())
    tables = [{
        "title": f"Test half ({test_cases} pages, {corpus['distractors']['test']} "
                 "distractors): recall of each kind's pairs (a page's two releases), and "
                 "every pair found; a pair across two pages is false by the key",
        "columns": ["method", *[f"{k} recall" for k in kinds],
                    "all: precision / recall / F1",
                    "cross-page pairs found (of them sharing ≥ 1/5 of a page's 5-grams)",
                    "seconds"],
        "rows": rows}]
    share = corpus["changed_share"]
    releases = corpus["releases"]
    tables.append({"title": "The corpus", "columns": ["what", "value"], "rows": [
        *[[f"Django {v}", f"{r['archive']} from PyPI (sha256 {r['sha256'][:16]}…), "
                          f"{r['pages_read']} pages read"] for v, r in releases.items()],
        ["table", f"{corpus['table_rows']} rows of at least {corpus['min_words']} words "
                  f"({corpus['table_words']['min']:,}–{corpus['table_words']['max']:,}, "
                  f"median {corpus['table_words']['median']:,}; "
                  f"{corpus['table_words']['total']:,} words)"],
        ["pages revised between the releases (validation / test)",
         ", ".join(f"{k} {v['validation']}/{v['test']}" for k, v in cases.items())],
        ["share of a page's words changed", f"{100 * share['min']:.1f}% to "
                                            f"{100 * share['max']:.1f}%, median "
                                            f"{100 * share['median']:.1f}%"],
        ["rows in no case (distractors)", ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in corpus["rows_not_in_a_case"].items())],
    ]})
    misses = [[documents.ARM_LABELS[name], ", ".join(
        f"{m['page']} ({pct(m['changed_share'])})" for m in arms[name]["missed"]) or "none"]
        for name in ARMS if arms.get(name, {}).get("ran") and "missed" in arms[name]]
    if misses:
        tables.append({"title": "The test half's revised pages each method missed, with the "
                                "share of the page's words changed",
                       "columns": ["method", "missed"], "rows": misses})
    ours = arms.get("duplens", {})
    if ours.get("ran") and ours["cross_page_found"]["largest"]:
        tables.append({
            "title": "Duplens' cross-page pairs on the test half (false by the key), the most "
                     "shared first",
            "columns": ["a", "b", "share of a's 5-grams in b", "share of b's 5-grams in a"],
            "rows": [[p["a"], p["b"], pct(p["a_held_by_b"]), pct(p["b_held_by_a"])]
                     for p in ours["cross_page_found"]["largest"]]})
    notes = [
        "Real edits, not constructed ones: each case is one page of Django's documentation as "
        "released in 1.11 and in 4.2, six years apart; a kind says how much of the page "
        "changed (the share of words difflib cannot align: light under "
        f"{pct(share['bounds']['light_below'])}, heavy from "
        f"{pct(share['bounds']['heavy_from'])}). The key is provenance, so a pair of pages "
        "that share moved text counts against the method that finds it; the cross-page "
        "column counts them and, in brackets, those sharing at least a fifth of a page.",
        "The arms are the documents benchmark's (`benchmarks/documents.py`, same code); "
        "thresholds marked chosen were chosen on the validation half and reported once "
        "here.",
    ]
    if ours.get("ran"):
        notes.append(f"Duplens: `{'`, then `'.join(ours['commands'])}` "
                     f"({ours['seconds']['import']:.1f} s + "
                     f"{ours['seconds']['duplicates']:.1f} s), model {ours['info']['model']}, "
                     f"threshold {ours['threshold']['value']:g} "
                     f"({ours['threshold']['source']}); {ours['info']['truncated']} of "
                     f"{ours['info']['texts']} texts read from their start only.")
    elif ours:
        notes.append(f"Duplens did not run: {ours['why']}.")
    headline = []
    peers = [n for n in ("plain_st", "minhash_lsh", "semhash_distilled_tuned")
             if arms.get(n, {}).get("ran")]
    if ours.get("ran") and peers:
        best = max(peers, key=lambda n: arms[n]["test"]["all"]["f1"])
        f_ours, f_best = ours["test"]["all"]["f1"], arms[best]["test"]["all"]["f1"]
        headline.append({
            "figure": "real near-duplicate documents (a Django page in 1.11 and 4.2): pair F1 "
                      "on the test half",
            "duplens": pct(f_ours), "baseline": pct(f_best),
            "baseline_is": f"the best peer: {documents.ARM_LABELS[best]}, same table, "
                           "same run",
            "ratio": f"{f_ours / f_best:.2f}×" if f_best else "–",
            "goal": "ahead of every peer", "met": f_ours > f_best})
    return {"headline": headline, "tables": tables, "notes": notes}
