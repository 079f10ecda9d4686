"""One fine-tuning run of a project, from labelled pairs to a new, inactive model version.

The steps, each a progress stage a wizard can list (`FINETUNE_STAGES`):

1. check the pairs (enough of them, both verdicts) and split them by question groups, so no
   question is both trained on and measured (`split_pairs`);
2. "measuring before": the active model's metrics on the held-out part;
   with a second opinion (`TrainingOptions.second_opinion`; `finetune_stages`),
   "training second opinion", "measuring second opinion" and "labelling silver": a judge
   trained on the training part labels pairs of the project's neighbour graph that touch no
   held-out text, and they join the training part (`engine.training.second_opinion`);
3. "mining negatives" (when the objective mines: `finetune_stages`) and "training": a copy of
   the active model is trained on the rest; the model the project searches with is never
   changed;
4. "measuring after": the trained model on the same held-out pairs, the pairs whose
   verdict changed, and whether the held-out pairs show it better or worse than before
   (`engine.training.ap_change`: a bootstrap interval on the change in AP);
5. "saving": the folder becomes version N with its row (`versions.register_version`), and
   a second opinion's judge version N + 1 beside it (`engine.training.judge_versions`);
6. "converting" (on a CPU whose default backend is a fast one: `finetune_stages`): the
   version's fast form is made and checked (`engine.training.fast_form`), by the caller
   (`engine.services.versions`), once the version is saved.

Until step 5 nothing of the run is in the project: cancelling (`Cancelled`) or failing
anywhere before leaves no row and no folder. The new version is not activated; comparing the
before and after numbers is the user's call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engine import __version__
from engine.encoding.encoder import SentenceEncoder
from engine.errors import InputError
from engine.progress import CancelToken, Progress, ProgressCallback, no_progress
from engine.store.database import Store
from engine.store.embeddings import get_model_row
from engine.store.version_rows import judge_ids
from engine.training.ap_change import BETTER, APChange, ap_change
from engine.training.fast_form import STAGE_CONVERTING
from engine.training.hard_negatives import NegativePool
from engine.training.held_out import (
    PairMetrics,
    VerdictChange,
    changed_verdicts,
    held_out_metrics,
)
from engine.training.judge_versions import judge_to_keep
from engine.training.objectives import get_objective, mines_negatives
from engine.training.pairs import MIN_PAIRS, LabelledPair, PairSummary, summarise
from engine.training.second_opinion import (
    SECOND_OPINION_STAGES,
    SecondOpinion,
    SilverSource,
    check_training_side,
    run_second_opinion,
)
from engine.training.split import DEFAULT_HELD_OUT, PairSplit, split_pairs
from engine.training.trainer import TrainingOptions, TrainResult, finetune
from engine.training.version_folders import (
    data_hash,
    new_staging_folder,
    register_version,
    root_name,
    version_path,
)

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

STAGE_BEFORE = "measuring before"
STAGE_MINING = "mining negatives"  # only when the objective mines (`mines_negatives`)
STAGE_TRAINING = "training"
STAGE_AFTER = "measuring after"
STAGE_SAVING = "saving"
# A run without a second opinion; with one, `SECOND_OPINION_STAGES` come after "measuring
# before" (`finetune_stages`).
FINETUNE_STAGES = (STAGE_BEFORE, STAGE_MINING, STAGE_TRAINING, STAGE_AFTER, STAGE_SAVING,
                   STAGE_CONVERTING)
CHANGES_SHOWN = 20  # changed verdicts kept in the report, biggest change in score first
RECORD_FORMAT = 1  # of duplens_version.json


def finetune_stages(objective: str, options: TrainingOptions | None = None, *,
                    converts: bool = False) -> tuple[str, ...]:
    """The stages a run of `objective` with `options` goes through, in order, for a wizard
    to list: `FINETUNE_STAGES` with the second opinion's after "measuring before" when it
    is asked for (`options.second_opinion`), without "mining negatives" when nothing is
    mined, and without "converting" unless the version gets a fast form (`converts`:
    `backend_choice.for_trained_version` names one)."""
    options = options or TrainingOptions()
    mines = mines_negatives(objective, options)
    skipped = {s for s, kept in ((STAGE_MINING, mines), (STAGE_CONVERTING, converts))
               if not kept}
    stages = tuple(s for s in FINETUNE_STAGES if s not in skipped)
    if not options.second_opinion:
        return stages
    return (stages[0], *SECOND_OPINION_STAGES, *stages[1:])


@dataclass(frozen=True)
class FinetuneReport:
    """What a run made: the new version, and how it compares with its parent."""

    version_id: int
    name: str
    folder: Path  # the sentence-transformers folder of the version
    location: str  # as stored: relative to the project's folder
    parent_id: int | None
    objective: str
    summary: PairSummary  # of all the pairs given
    split: PairSplit
    before: PairMetrics  # the parent (the active model) on the held-out pairs
    after: PairMetrics  # the new version on the same pairs
    # after − before in AP, its 95% interval and what they let one say (`conclusion`):
    # the figure a summary must use to call the new version better or worse.
    ap_change: APChange
    changes: list[VerdictChange]  # the held-out pairs whose verdict changed most, at most 20
    changes_fixed: int  # held-out pairs the new version gets right and the parent did not
    changes_broken: int  # and the other way round
    train: TrainResult  # without its model
    data_sha256: str  # of the pairs trained on (`training_pairs`: silver too)
    options: TrainingOptions
    notes: list[str] = field(default_factory=list)  # for the user: split, objective, warnings
    # The check of the version's fast form (`fast_form.FastFormCheck.as_dict`), None when
    # it gets none (a GPU, a backend the user named).
    fast_form: dict | None = None
    # The judge and the silver pairs added to the training part (None without a second
    # opinion): `split.train` holds the gold training pairs only.
    second_opinion: SecondOpinion | None = None

    @property
    def training_pairs(self) -> list[LabelledPair]:
        """The pairs the version trained on: the gold training part, then any silver."""
        silver = self.second_opinion.silver if self.second_opinion is not None else []
        return [*self.split.train, *silver]

    @property
    def improved(self) -> bool:
        """The held-out pairs show the new version better: the change in AP's interval is
        above 0 (a higher AP alone is not enough; see `engine.training.ap_change`)."""
        return self.ap_change.conclusion == BETTER

    def as_json(self) -> dict:
        return {
            "version": {"id": self.version_id, "name": self.name, "location": self.location,
                        "folder": str(self.folder)},
            "parent_id": self.parent_id,
            "objective": self.objective,
            "pairs": {"total": self.summary.pairs, "duplicates": self.summary.positives,
                      "not_duplicates": self.summary.negatives,
                      "train": len(self.split.train), "held_out": len(self.split.held_out),
                      "dropped": len(self.split.dropped),
                      "held_out_fraction": round(self.split.held_out_fraction, 4),
                      "silver": len(self.second_opinion.silver) if self.second_opinion
                      else 0},
            "before": self.before.as_dict(),
            "after": self.after.as_dict(),
            "ap_change": self.ap_change.as_dict(),
            "changed": {"fixed": self.changes_fixed, "broken": self.changes_broken,
                        "sample": [_change_json(c) for c in self.changes]},
            "training": {"steps": self.train.steps, "seconds": round(self.train.seconds, 3),
                         "examples": self.train.examples, "device": self.train.device,
                         "loss_history": self.train.loss_history,
                         "validation": _validation_json(self.train)},
            "data_sha256": self.data_sha256,
            "options": dataclasses.asdict(self.options),
            "notes": self.notes,
            "fast_form": self.fast_form,
            "second_opinion": self.second_opinion.as_dict() if self.second_opinion else None,
        }


def check_pairs(pairs: Sequence[LabelledPair], objective: str, min_pairs: int = MIN_PAIRS
                ) -> PairSummary:
    """The summary of `pairs`, or InputError with the advice when they cannot be used.

    Cheap and model-free, so a caller learns of too few pairs before any model is loaded.
    Both verdicts are always needed: whatever the objective, the model is measured on
    held-out pairs, and with one verdict there is nothing to rank.
    """
    get_objective(objective)
    summary = summarise(pairs)
    if not pairs:
        raise InputError(summary.warnings[0])
    if len(pairs) < min_pairs:
        raise InputError(next(w for w in summary.warnings if w.startswith("Only ")))
    if summary.positives == 0 or summary.negatives == 0:
        have = "duplicate" if summary.negatives == 0 else "not duplicate"
        need = "not duplicate" if summary.negatives == 0 else "duplicate"
        raise InputError(f"Every one of the {len(pairs)} pairs is labelled {have}: measuring "
                         f"the model before and after training needs pairs labelled {need} "
                         f"too; label some and try again.")
    return summary


def run_finetune(store: Store, encoder: SentenceEncoder,
                 parent: dict | None, pairs: Sequence[LabelledPair], objective: str, *,
                 options: TrainingOptions | None = None,
                 held_out: float = DEFAULT_HELD_OUT, seed: int = 0,
                 min_pairs: int = MIN_PAIRS, progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None, pool: NegativePool | None = None,
                 silver: SilverSource | None = None
                 ) -> tuple[FinetuneReport, SentenceTransformer]:
    """Train `encoder` (the active model, row `parent`) on `pairs`; see the module doc.

    `pool`: the project's texts (with their vectors under `encoder`, if at hand) that hard
    negatives may be mined from besides the pairs' own; the held-out pairs' texts are taken
    out of it first, so no held-out question is trained on, even as a negative.

    `silver`: the project's neighbour graph, threshold and texts, which a second opinion
    (`options.second_opinion` > 0) labels silver pairs from; required then. The judge is
    trained in the run's staging folder and kept as a version beside the new one when it is
    saved (`judge_versions`); failing or cancelled, the run deletes it with the folder.

    Returns the report and the trained model (float32, on the training device), which the
    caller may keep to activate the version without loading it again.
    """
    options = options or TrainingOptions()
    cancel = cancel or CancelToken()
    summary = check_pairs(pairs, objective, min_pairs)
    if options.second_opinion and silver is None:
        raise InputError("a second opinion labels pairs of the project's neighbour graph; "
                         "this run was given none")
    split = split_pairs(pairs, held_out, seed)
    _check_held_out(split)
    if options.second_opinion:
        check_training_side(split.train)  # before any model is loaded
    before = held_out_metrics(encoder, split.held_out, progress=progress, cancel=cancel,
                              stage=STAGE_BEFORE)
    staging = new_staging_folder(store)
    opinion = None
    try:
        if pool is not None:
            pool = pool.without([t for p in split.held_out for t in (p.text_a, p.text_b)])
        train_pairs = list(split.train)
        if options.second_opinion:
            opinion = run_second_opinion(
                split.train, split.held_out, pairs, silver, options, staging / "judge",
                bi_encoder_scores=before.scores, device=encoder.device,
                progress=progress, cancel=cancel, seed=seed,
                held_out_share=split.held_out_fraction)
            train_pairs += opinion.silver  # the training side only, never the held-out one
        result = finetune(encoder, train_pairs, objective, options, staging / "model",
                          progress=progress, cancel=cancel, pool=pool)
        trained = result.model
        after = held_out_metrics(trained, split.held_out, progress=progress, cancel=cancel,
                                 stage=STAGE_AFTER)
        changes = changed_verdicts(before.scores, after.scores, before.threshold,
                                   after.threshold, split.held_out, limit=None)
        change = ap_change(before.scores, after.scores,
                           [p.is_duplicate for p in split.held_out], seed=seed,
                           held_out_share=split.held_out_fraction)
        progress(Progress(STAGE_SAVING, 0, 1))
        cancel.raise_if_cancelled()  # the last point at which stopping leaves nothing
        digest = data_hash(train_pairs)
        with store.read() as conn:
            name_root = root_name(conn, parent["id"] if parent else None)
        metrics = _row_metrics(before, after, split, result, options, digest, seed)
        metrics["changed"] = {"fixed": sum(c.fixed for c in changes),
                              "broken": sum(not c.fixed for c in changes)}
        metrics["ap_change"] = change.as_dict()
        record = _record(parent, objective, digest, summary, split, before, after, result,
                         options, seed)
        record["metrics"]["ap_change"] = change.as_dict()
        judge = None
        if opinion is not None:
            versus_version = ap_change(after.scores, opinion.judge.scores,
                                       [p.is_duplicate for p in split.held_out], seed=seed,
                                       held_out_share=split.held_out_fraction)
            opinion, judge = judge_to_keep(store, opinion, versus_version)
            metrics["second_opinion"] = record["second_opinion"] = opinion.as_dict()
            metrics["silver_pairs"] = record["pairs"]["silver"] = len(opinion.silver)
        version_id = register_version(
            store, staging / "model", name_root=name_root,
            parent_id=parent["id"] if parent else None, objective=objective,
            metrics=metrics, record=record, dim=int(trained.get_embedding_dimension()),
            max_seq_length=int(trained.max_seq_length), judge=judge)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):  # a first run that saved nothing leaves no folder
            staging.parent.rmdir()
    progress(Progress(STAGE_SAVING, 1, 1))
    with store.read() as conn:
        row = get_model_row(conn, version_id)
        if judge is not None:
            opinion = dataclasses.replace(opinion, kept_as=judge_ids(conn, version_id)[0])
    notes = [n for n in (split.note, opinion.note if opinion else "", *result.notes,
                         *summary.warnings) if n]
    report = FinetuneReport(
        version_id, row["name"], version_path(store, row), row["location"],
        row["parent_id"], objective, summary, split, before, after, change,
        changes[:CHANGES_SHOWN],
        sum(c.fixed for c in changes), sum(not c.fixed for c in changes),
        dataclasses.replace(result, model=None), digest, options, notes,
        second_opinion=opinion)
    return report, trained


def _check_held_out(split: PairSplit) -> None:
    held = split.held_out
    duplicates = sum(p.is_duplicate for p in held)
    if duplicates in (0, len(held)):
        verdict = "duplicate" if duplicates else "not duplicate"
        raise InputError(f"all {len(held)} held-out pairs are labelled {verdict}, so the "
                         f"model cannot be measured on them; label more pairs of both kinds")


def _row_metrics(before: PairMetrics, after: PairMetrics, split: PairSplit,
                 result: TrainResult, options: TrainingOptions, digest: str, seed: int
                 ) -> dict:
    """What the `models` row keeps: enough for a versions table without opening folders."""
    return {
        "before": before.as_dict(), "after": after.as_dict(),
        "train_pairs": len(split.train), "held_out_pairs": len(split.held_out),
        "held_out_fraction": round(split.held_out_fraction, 4), "split_seed": seed,
        "data_sha256": digest, "options": dataclasses.asdict(options),
        "steps": result.steps, "training_seconds": round(result.seconds, 3),
        "device": result.device,
        "final_loss": result.loss_history[-1][1] if result.loss_history else None,
    }


def _record(parent: dict | None, objective: str, digest: str, summary: PairSummary,
            split: PairSplit, before: PairMetrics, after: PairMetrics, result: TrainResult,
            options: TrainingOptions, seed: int) -> dict:
    """The folder's own account of itself: `duplens_version.json`."""
    return {
        "format": RECORD_FORMAT,
        "parent": None if parent is None else {
            "id": parent["id"], "name": parent["name"], "location": parent["location"],
            "fingerprint": parent["fingerprint"]},
        "objective": objective,
        "data_sha256": digest,
        "pairs": {"total": summary.pairs, "duplicates": summary.positives,
                  "not_duplicates": summary.negatives, "train": len(split.train),
                  "held_out": len(split.held_out), "dropped": len(split.dropped),
                  "split_seed": seed},
        "metrics": {"before": before.as_dict(), "after": after.as_dict()},
        "options": dataclasses.asdict(options),
        "training": {"steps": result.steps, "seconds": round(result.seconds, 3),
                     "device": result.device, "loss_history": result.loss_history,
                     "validation": _validation_json(result)},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "duplens": __version__,
    }


def _validation_json(result: TrainResult) -> dict | None:
    """The epochs measured on the validation pairs and the one kept; None without any."""
    if not result.validation_pairs:
        return None
    return {"pairs": result.validation_pairs, "best_epoch": result.best_epoch,
            "average_precision": [{"epoch": e, "value": round(ap, 4)}
                                  for e, ap in result.validation]}


def _change_json(change: VerdictChange) -> dict:
    return {"text_a": change.pair.text_a, "text_b": change.pair.text_b,
            "label": change.pair.label, "before": round(change.before_score, 4),
            "after": round(change.after_score, 4),
            "before_duplicate": change.before_duplicate,
            "after_duplicate": change.after_duplicate, "fixed": change.fixed}
