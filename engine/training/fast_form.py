"""A fine-tuned version's fast form: the version run by the backend a new project encodes
with on this CPU (`backend_choice.for_trained_version`: OpenVINO in bf16 where the CPU has
AMX, OpenVINO's dynamic int8 where it has int8 or AVX512-BF16 units alone), made right after
training and checked against the version itself before it may serve.

The bundled model's fast form passed the benchmark's quality gate on public data
(docs/benchmarks.md). A version's weights are new, so its fast form is checked again, with
the same rules and words (`engine.encoding.gate_rules`, `failures`), on what the project
has. The gate judges what an analyst sees, the duplicates the product finds and a
duplicate's partner in the list beside it, not neighbours six to ten swapping places:

- its held-out pairs, never trained on: average precision at most `PAIR_AP_LOSS` points
  below the version's own under torch ("pair_ap");
- the cut: over a seeded sample of the project's texts (the held-out texts among them),
  the pairs the product's clusters hold at the version's own default threshold
  (`model_threshold.for_row`: its held-out best-F1 threshold, its parent's, or `FALLBACK`)
  under the fast form against those under torch: pair F1 at least `MIN_CUT_F1` ("cut_f1");
- the held-out duplicates whose two texts are in that sample: the partner among the
  `PARTNER_K` nearest at most `PARTNER_LOSS` points less often than under torch
  ("partner_top5"). A project whose held-out pairs hold no duplicate has none to judge:
  the figure is left out and `not_judged` says so.

Recall@10 of the product's HNSW search over the fast embeddings against torch's exact ten
nearest neighbours is measured and stored (`recall_at_10`), not judged. (The STS benchmark
is public data a project does not have: a version trained on the project's labels is judged
on them.)

A version that passes gets a sibling `models` row: the same location, the backend's tag in
its fingerprint (as every quantised backend's row has), and `fast_form_of` naming the
version in its metrics. Activating the version encodes with the sibling (`serving_row`), so
the re-encode after "Use this model" runs at the fast backend's speed. A version that
fails, or whose conversion failed, keeps torch; its row's `fast_form` says why.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.encoding import backend_choice, model_threshold
from engine.encoding.backends import get_backend, stored_fingerprint
from engine.encoding.encoder import SentenceEncoder
from engine.encoding.gate_rules import (
    PARTNER_K,
    K,
    cut_figures,
    cut_pairs,
    exact_top,
    failures,
    hnsw_top,
    partner_rate,
    recall,
)
from engine.encoding.loading import load_encoder
from engine.errors import ModelError
from engine.progress import Progress, ProgressCallback, no_progress
from engine.store import embeddings as embedding_store
from engine.store import items as items_store
from engine.store import version_rows
from engine.store.database import Store
from engine.training.held_out import encode_texts, held_out_metrics
from engine.training.pairs import LabelledPair
from engine.training.version_folders import SIBLING_KEY, version_path

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("duplens")

STAGE_CONVERTING = "converting"
CHECK_TEXTS = 1000    # texts the cut, partner and search checks encode twice, at most
CHECK_QUERIES = 200   # of them, searched for (recall@10, reported)
METRICS_KEY = "fast_form"          # in the version's row: the check
NO_DUPLICATES = (f"partner in the top {PARTNER_K}: the held-out pairs hold no duplicate "
                 f"whose two texts were encoded")


@dataclass(frozen=True)
class FastFormCheck:
    """How a version's fast form compared with the version under torch. Rows written
    before the cut and partner rules hold `recall_at_10` and no `cut_f1`: `describe` reads
    both."""

    backend: str
    passed: bool
    failed: list[str] = field(default_factory=list)   # every reason it did not pass
    average_precision: float | None = None       # the fast form on the held-out pairs
    torch_average_precision: float | None = None   # the version under torch, same pairs
    threshold: float | None = None      # the version's default threshold: the cut's
    threshold_chosen_on: str = ""
    cut_f1: float | None = None         # pair F1 of the fast form's cut against torch's
    cut_pairs: int = 0                  # pairs in the fast form's cut
    torch_cut_pairs: int = 0            # pairs in torch's
    partner_top5: float | None = None   # x100: held-out duplicates with the partner among
    torch_partner_top5: float | None = None   # the PARTNER_K nearest (None: not judged)
    partner_pairs: int = 0              # held-out duplicates whose two texts were encoded
    not_judged: list[str] = field(default_factory=list)   # figures left out, and why
    recall_at_10: float | None = None   # reported, not judged
    texts: int = 0      # encoded twice: the cut's, the partner's and the search's
    queries: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(asdict(self), seconds=round(self.seconds, 3))


def convert(store: Store, version: dict, trained: SentenceTransformer | SentenceEncoder,
            held_out: Sequence[LabelledPair], torch_average_precision: float, *,
            backend: str, batch_size: int = 64, seed: int = 0,
            progress: ProgressCallback = no_progress
            ) -> tuple[FastFormCheck, SentenceEncoder | None, int | None]:
    """Make and check `version`'s fast form (`backend`); record the check in its row, and
    for a pass add the sibling row. Returns the check, and for a pass the fast encoder
    (loaded: activating needs no load) and the sibling's id.

    `trained` is the version under torch, `torch_average_precision` its average precision
    on `held_out`. A conversion that fails is recorded as a failed check, never raised: the
    version is saved and serves with torch.
    """
    started = time.perf_counter()
    progress(Progress(STAGE_CONVERTING, 0, 3))
    try:
        fast = load_encoder(str(version_path(store, version)), device="cpu",
                            batch_size=batch_size, backend=backend)
        progress(Progress(STAGE_CONVERTING, 1, 3))
        fast_ap = held_out_metrics(fast, held_out).average_precision
        progress(Progress(STAGE_CONVERTING, 2, 3))
        texts, duplicates = _check_texts(store, held_out, seed)
        reference, candidate = encode_texts(trained, texts), encode_texts(fast, texts)
        threshold = version_threshold(store, version)
    except Exception as exc:  # noqa: BLE001 - the version is saved: it keeps torch, and says why
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("%s: its %s form could not be made or checked: %s", version["name"],
                    backend, detail, exc_info=not isinstance(exc, ModelError))
        check = FastFormCheck(backend, False, [f"the conversion failed: {detail}"],
                              torch_average_precision=torch_average_precision,
                              seconds=time.perf_counter() - started)
        _record(store, version, check, None)
        return check, None, None
    check = judge(backend, reference, candidate, duplicates, threshold, fast_ap,
                  torch_average_precision, seed=seed)
    check = dataclasses.replace(check, seconds=time.perf_counter() - started)
    sibling = _record(store, version, check, fast if check.passed else None)
    progress(Progress(STAGE_CONVERTING, 3, 3))
    return check, (fast if check.passed else None), sibling


def judge(backend: str, reference: np.ndarray, candidate: np.ndarray, duplicates: np.ndarray,
          threshold: model_threshold.ModelThreshold, average_precision: float,
          torch_average_precision: float, *, seed: int = 0) -> FastFormCheck:
    """The check of a fast form's embeddings of some texts (`candidate`, normalised rows)
    against the version's under torch (`reference`, same texts), `duplicates` the rows of
    the held-out duplicates among them (pairs of row indices), the held-out average
    precisions given: every figure the gate judges and recall@10, and `failures`' words
    for each rule broken."""
    found, truth = cut_pairs(candidate, threshold.value), cut_pairs(reference, threshold.value)
    figures = {"pair_ap": average_precision, **cut_figures(found, truth)}
    against = {"pair_ap": torch_average_precision}
    duplicates = np.asarray(duplicates, dtype=np.int64).reshape(-1, 2)
    if len(duplicates):
        figures["partner_top5"] = partner_rate(candidate, duplicates)
        against["partner_top5"] = partner_rate(reference, duplicates)
    failed = failures(figures, against)
    searched, queried = _searches(reference, candidate, seed)
    return FastFormCheck(
        backend, not failed, failed, average_precision, torch_average_precision,
        threshold=threshold.value, threshold_chosen_on=threshold.chosen_on,
        cut_f1=figures["cut_f1"], cut_pairs=len(found), torch_cut_pairs=len(truth),
        partner_top5=figures.get("partner_top5"),
        torch_partner_top5=against.get("partner_top5"), partner_pairs=len(duplicates),
        not_judged=[] if len(duplicates) else [NO_DUPLICATES],
        recall_at_10=recall(searched, queried), texts=len(reference), queries=len(queried))


def version_threshold(store: Store, version: dict) -> model_threshold.ModelThreshold:
    """The version's own default threshold, the one its fast form will cut at: its held-out
    best-F1 threshold, else its parent's, else `model_threshold.FALLBACK`."""
    with store.read() as conn:
        return model_threshold.for_row(
            version, lambda model_id: embedding_store.get_model_row(conn, model_id))


def serving_row(store: Store, version: dict, preference: str | None, device: str | None
                ) -> dict:
    """The row that serves `version` when it is activated: its fast form's, when that
    passed its check and the backend is still the one a version gets here
    (`backend_choice.for_trained_version`), else the version's own (torch)."""
    check = (version.get("metrics") or {}).get(METRICS_KEY) or {}
    wanted = backend_choice.for_trained_version(preference, device)
    if not check.get("passed") or wanted != check.get("backend"):
        return version
    fingerprint = stored_fingerprint(version["fingerprint"], get_backend(check["backend"]))
    with store.read() as conn:
        sibling = embedding_store.find_model(conn, fingerprint)
        row = embedding_store.get_model_row(conn, sibling) if sibling is not None else None
    return row or version


def _check_texts(store: Store, held_out: Sequence[LabelledPair], seed: int
                 ) -> tuple[list[str], np.ndarray]:
    """The held-out pairs' texts (the duplicates' first) and a seeded sample of the
    project's live texts, up to `CHECK_TEXTS` in all; and the rows of the held-out
    duplicates whose two texts are among them."""
    ordered = sorted(held_out, key=lambda p: not p.is_duplicate)
    texts = list(dict.fromkeys(t for p in ordered for t in (p.text_a, p.text_b)))
    with store.read() as conn:
        ids = np.asarray(sorted(items_store.live_text_ids(conn)), dtype=np.int64)
        room = max(0, CHECK_TEXTS - len(texts))
        if len(ids) > room:
            ids = np.sort(np.random.default_rng(seed).choice(ids, room, replace=False))
        found = items_store.texts_by_id(conn, ids.tolist())
    texts = list(dict.fromkeys([*texts, *(found[int(i)] for i in ids)]))[:CHECK_TEXTS]
    row = {t: i for i, t in enumerate(texts)}
    duplicates = {(row[p.text_a], row[p.text_b]) for p in held_out if p.is_duplicate
                  and p.text_a in row and p.text_b in row and p.text_a != p.text_b}
    return texts, np.asarray(sorted(duplicates), dtype=np.int64).reshape(-1, 2)


def _searches(reference: np.ndarray, candidate: np.ndarray, seed: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(the product's search over `candidate`, exact search over `reference`) for a seeded
    sample of the texts as queries: the neighbours each finds."""
    k = min(K, len(reference))
    picked = np.random.default_rng(seed).permutation(len(reference))[:CHECK_QUERIES]
    return (hnsw_top(candidate, candidate[picked], k),
            exact_top(reference, reference[picked], k))


def _record(store: Store, version: dict, check: FastFormCheck,
            fast: SentenceEncoder | None) -> int | None:
    """Write the check into the version's row and, for a pass, add the sibling row (in
    one transaction); returns the sibling's id."""
    if fast is not None:
        wanted = stored_fingerprint(version["fingerprint"], get_backend(check.backend))
        if fast.spec.fingerprint != wanted:
            raise ModelError(f"{version['name']}: its {check.backend} form names other "
                             f"weights ({fast.spec.fingerprint}, expected {wanted})")
    with store.write() as conn:
        row = embedding_store.get_model_row(conn, version["id"])
        version_rows.set_metrics(conn, version["id"],
                                 {**(row["metrics"] or {}), METRICS_KEY: check.as_dict()})
        if fast is None:
            return None
        return embedding_store.get_or_add_model(
            conn, name=f"{version['name']} ({check.backend})", location=version["location"],
            fingerprint=fast.spec.fingerprint, dim=fast.dim,
            max_seq_length=fast.max_seq_length, metrics={SIBLING_KEY: version["id"]})


def describe(check: dict | None) -> str:
    """One sentence for the user about a version's fast form (a `FastFormCheck.as_dict`),
    "" when it got none: the window's results page and `duplens finetune` both say it.
    A row checked before the cut and partner rules says what it was judged on then."""
    if not check:
        return ""
    backend = check["backend"]
    if not check["passed"]:
        return (f"It runs with PyTorch: its {backend} form did not keep its quality "
                f"({'; '.join(check['failed'])}).")
    said = (f"It runs as {backend} on this computer's CPU: on the held-out pairs its "
            f"average precision is {check['average_precision']:.2f} against "
            f"{check['torch_average_precision']:.2f} under PyTorch")
    searched = (f"its search finds {100 * check['recall_at_10']:.1f}% of PyTorch's ten "
                f"nearest neighbours")
    if check.get("cut_f1") is None:
        return f"{said}, and {searched} ({check['texts']:,} of the project's texts)."
    said += (f"; at its threshold of {check['threshold']:.2f}, the duplicate pairs it "
             f"finds among {check['texts']:,} of the project's texts match PyTorch's "
             f"(pair F1 {check['cut_f1']:.3f}, {check['cut_pairs']:,} pairs against "
             f"{check['torch_cut_pairs']:,})")
    if check.get("partner_top5") is not None:
        said += (f"; a held-out duplicate's partner is among the {PARTNER_K} nearest "
                 f"{check['partner_top5']:.1f}% of the time, against "
                 f"{check['torch_partner_top5']:.1f}%")
    return f"{said}; {searched}."
