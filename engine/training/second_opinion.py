"""The second opinion inside a fine-tuning run: the analyst's answers used twice.

Augmented SBERT (Thakur et al., NAACL 2021; `engine.training.cross_encoder`) in one run of
`session.run_finetune`, once the pairs are split (so the held-out side is fixed first):

1. "training second opinion": a judge (cross-encoder) learns from the TRAINING side's gold
   pairs only; the held-out pairs stay unseen by it, as by the bi-encoder;
2. "measuring second opinion": the judge scores the held-out pairs; its average precision
   (`engine.pair_metrics`, through `held_out.metrics_from_scores`) stands beside the
   bi-encoder's before-AP, so a user sees whether the judge reads pairs better than the
   model it is to teach (when it does not, its silver teaches little);
3. "labelling silver": the project's neighbour graph's pairs within `silver_band` of the
   active model's threshold, closest first, at most `second_opinion` of them
   (`silver.silver_candidates`), never touching a text of a held-out pair and never a pair
   the analyst judged, labelled with the judge's probability (`silver.label_silver`).

Step 3 runs only when the held-out pairs show the judge reading them better than the model:
a judge no better than the model it is to teach has nothing to teach it, and on Quora
validation the silver of such a judge (AP 56 against the model's 76, from 1,000 answers)
took the whole fine-tuning gain away (+0.00 AP against +2.93 from the answers alone;
`benchmarks/second_opinion_arms.py`). "Show" is `engine.training.ap_change`'s paired
bootstrap interval of the judge's AP less the model's, on the same held-out pairs, lying
above 0 (`SecondOpinion.change`), not a higher AP alone: a judge trained to stay close to
the model (a residual judge, `cross_encoder`'s `prior`) reads pairs within a few tenths of a
point of it, and on a few dozen held-out pairs a higher AP of that size is chance about half
the time. The run then trains on the answers alone and says why (`SecondOpinion.withheld`).
`TrainingOptions.silver_always` lifts the guard for that benchmark.

`prior` makes the judge residual (`cross_encoder`'s `prior`, `prior_loss`): its logit is
added to a prior logit per pair, the caller's calibrated bi-encoder, in training, on the
held-out pairs and on the silver alike. A run of the product passes none:
`benchmarks/ask_vs_random.py`'s residual arms pass one, and on Quora validation its silver
took 3.25 AP from the fine-tuned model (three seeds; every silver pair came out "not
duplicate", the calibrated probability near the threshold being under 0.5).

The silver pairs join the training pairs only. The judge is saved in the run's staging
folder (`SecondOpinion.folder`); the run keeps it as a version beside the new one
(`engine.training.judge_versions`), or discards it with the staging folder when it fails,
is cancelled, or the judge's weights are a kept judge's already.

A held-out text is excluded by every text id it has in the project: the id its review key
names ("text:<id>") and the id of its normalised text (a file's pair or a checked row keys
its text otherwise, and the same question may sit in the project as a text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.progress import CancelToken, Progress, ProgressCallback
from engine.text import norm_key
from engine.training.ap_change import BETTER, APChange, ap_change, interval_text
from engine.training.held_out import PairMetrics, metrics_from_scores
from engine.training.options import TrainingOptions
from engine.training.pairs import LabelledPair

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from engine.dedup.graph import KnnGraph

# A residual judge's prior: the logit of each (text_a, text_b) pair, from the bi-encoder.
PriorLogits = Callable[[Sequence[tuple[str, str]]], "np.ndarray"]

STAGE_JUDGE = "training second opinion"  # `cross_encoder.TRAINING_STAGE`
STAGE_JUDGE_MEASURE = "measuring second opinion"
STAGE_SILVER = "labelling silver"
SECOND_OPINION_STAGES = (STAGE_JUDGE, STAGE_JUDGE_MEASURE, STAGE_SILVER)
_TEXT_KEY = "text:"


@dataclass(frozen=True)
class SilverSource:
    """What a project lends the second opinion: its neighbour graph under the active model
    (built or updated when asked, with progress and cancel), the active model's threshold,
    texts by id, and text ids by normalised text (`items.text_ids_for_keys`)."""

    graph: Callable[[ProgressCallback, CancelToken], KnnGraph]
    threshold: float
    texts: Callable[[Sequence[int]], dict[int, str]]
    text_ids: Callable[[Iterable[str]], dict[str, int]]


@dataclass(frozen=True)
class SecondOpinion:
    """What the second opinion did in a run: the judge, measured, and the silver it made."""

    judge: PairMetrics  # on the held-out pairs (its threshold is a probability)
    bi_encoder_ap: float  # the active model's AP on the same pairs (the run's "before")
    judge_pairs: int  # gold training pairs the judge learnt from
    judge_steps: int
    judge_seconds: float
    device: str
    threshold: float  # the active model's, around which silver was picked
    band: float
    limit: int  # silver pairs asked for at most
    excluded_texts: int  # project texts of held-out pairs no silver pair touches
    silver: list[LabelledPair] = field(default_factory=list, repr=False)
    folder: Path | None = None  # where the judge was saved (the run's staging folder)
    max_length: int = 0  # the judge's longest input, in tokens (its row's max_seq_length)
    kept: bool = False  # the run keeps the judge as a version (`judge_versions`)
    kept_as: int | None = None  # that version's id, once registered
    not_kept: str = ""  # why the run does not keep it
    withheld: str = ""  # why no silver was labelled (the judge is no better than the model)
    # The judge's held-out AP less the model's, with its paired interval (None only where a
    # caller built the opinion without one).
    change: APChange | None = None
    # The judge's held-out AP less the new version's, once the run has one
    # (`judge_versions.judge_to_keep`): whether the version offers it (`offered`).
    versus_version: APChange | None = None

    @property
    def silver_duplicates(self) -> int:
        """Silver pairs the judge calls duplicates (probability 0.5 or more)."""
        return sum(p.is_duplicate for p in self.silver)

    def as_dict(self) -> dict:
        labels = [p.label for p in self.silver]
        return {
            "judge": {"average_precision": round(self.judge.average_precision, 4),
                      "f1": round(self.judge.f1, 4), "threshold": round(self.judge.threshold, 4),
                      "pairs": self.judge.pairs, "positives": self.judge.positives,
                      "trained_on": self.judge_pairs, "steps": self.judge_steps,
                      "seconds": round(self.judge_seconds, 3), "device": self.device,
                      "kept": self.kept,
                      "versus_model": self.change.as_dict() if self.change else None,
                      "versus_version": (self.versus_version.as_dict()
                                         if self.versus_version else None)},
            "bi_encoder_average_precision": round(self.bi_encoder_ap, 4),
            "silver": {"pairs": len(self.silver), "duplicates": self.silver_duplicates,
                       "not_duplicates": len(self.silver) - self.silver_duplicates,
                       "mean_label": round(sum(labels) / len(labels), 4) if labels else None,
                       "asked": self.limit, "threshold": round(self.threshold, 4),
                       "band": self.band, "excluded_texts": self.excluded_texts,
                       "withheld": self.withheld or None},
        }

    @property
    def note(self) -> str:
        """One line for the user: what the judge scored, what it added, where it is kept."""
        if self.kept_as is not None:
            kept = (f"the judge is kept as version {self.kept_as}, the new version's second "
                    f"opinion")
        else:
            kept = "the judge was not kept" + (f": {self.not_kept}" if self.not_kept else "")
        silver = (f"no silver pairs: {self.withheld}" if self.withheld else
                  f"{len(self.silver)} silver pairs added to training "
                  f"({self.silver_duplicates} duplicates)")
        versus = f"; {interval_text(self.change)}" if self.change else ""
        return (f"second opinion: the judge's held-out AP {self.judge.average_precision:.2f} "
                f"(the model's {self.bi_encoder_ap:.2f}{versus}); {silver}; {kept}")


def judge_shown_better(change: APChange) -> bool:
    """Whether the held-out pairs show the judge better than the model it is compared with:
    the interval of its AP less the model's lies above 0 (see the module doc)."""
    return change.conclusion == BETTER


def check_training_side(train: Sequence[LabelledPair]) -> None:
    """InputError unless the training side holds both verdicts: the judge learns from it."""
    duplicates = sum(p.is_duplicate for p in train)
    if duplicates in (0, len(train)):
        have = "duplicate" if duplicates else "not duplicate"
        raise InputError(f"a second opinion learns from the training pairs, and all "
                         f"{len(train)} of them are labelled {have}; label more pairs of "
                         f"both kinds, or train without a second opinion")


def run_second_opinion(train: Sequence[LabelledPair], held_out: Sequence[LabelledPair],
                       judged: Sequence[LabelledPair], source: SilverSource,
                       options: TrainingOptions, folder: Path, *,
                       bi_encoder_scores: Sequence[float], device: str,
                       progress: ProgressCallback, cancel: CancelToken, seed: int = 0,
                       held_out_share: float = 1.0, prior: PriorLogits | None = None
                       ) -> SecondOpinion:
    """Train a judge on `train` in `folder` (new), measure it on `held_out` beside the
    model's similarities of the same pairs (`bi_encoder_scores`), and label up to
    `options.second_opinion` silver pairs; see the module doc. `judged`: every pair the
    analyst gave (no silver pair repeats one). `seed` and `held_out_share` are the
    interval's (`ap_change`); `prior` makes the judge residual (module doc). Raises
    `Cancelled` when asked to stop."""
    from engine.training.cross_encoder import score_pairs, train_cross_encoder
    from engine.training.silver import label_silver, silver_candidates

    check_training_side(train)
    cancel.raise_if_cancelled()
    def prior_of(pairs: Sequence[LabelledPair]) -> np.ndarray | None:
        return prior([(p.text_a, p.text_b) for p in pairs]) if prior is not None else None

    result = train_cross_encoder(train, folder, epochs=options.epochs,
                                 batch_size=options.batch_size, seed=options.seed,
                                 max_steps=options.max_steps, device=device,
                                 progress=_as_stage(progress, STAGE_JUDGE), cancel=cancel,
                                 prior=prior_of(train))
    judge_model = result.model
    scores = score_pairs(judge_model, [(p.text_a, p.text_b) for p in held_out],
                         progress=_as_stage(progress, STAGE_JUDGE_MEASURE), cancel=cancel,
                         prior=prior_of(held_out))
    labels = [p.is_duplicate for p in held_out]
    judge = metrics_from_scores(scores, labels)
    model = metrics_from_scores(bi_encoder_scores, labels)
    bi_encoder_ap = model.average_precision
    change = ap_change(model.scores, judge.scores, labels, seed=seed,
                       held_out_share=held_out_share)

    silver_progress = _as_stage(progress, STAGE_SILVER)
    silver_progress(Progress(STAGE_SILVER, 0, 0))  # the graph may be built first
    cancel.raise_if_cancelled()
    excluded = text_ids_of(held_out, source.text_ids)
    if not judge_shown_better(change) and not options.silver_always:
        return SecondOpinion(judge, bi_encoder_ap, result.pairs, result.steps, result.seconds,
                             result.device, source.threshold, options.silver_band,
                             options.second_opinion, len(excluded), [], result.folder,
                             int(getattr(judge_model, "max_seq_length", 0) or 0),
                             withheld=(f"the held-out pairs do not show the judge better "
                                       f"than the model (AP {judge.average_precision:.2f} "
                                       f"against {bi_encoder_ap:.2f}, "
                                       f"{interval_text(change)})"),
                             change=change)
    labelled = judged_id_pairs(judged, source.text_ids)
    candidates = silver_candidates(source.graph(silver_progress, cancel), source.threshold,
                                   band=options.silver_band, limit=options.second_opinion,
                                   exclude_keys=excluded, labelled=labelled)
    cancel.raise_if_cancelled()
    texts = source.texts(sorted({i for c in candidates for i in (c.id_a, c.id_b)}))
    silver = label_silver(judge_model, candidates, texts.__getitem__,
                          progress=silver_progress, cancel=cancel, prior=prior)
    cancel.raise_if_cancelled()
    return SecondOpinion(judge, bi_encoder_ap, result.pairs, result.steps, result.seconds,
                         result.device, source.threshold, options.silver_band,
                         options.second_opinion, len(excluded), silver, result.folder,
                         int(getattr(judge_model, "max_seq_length", 0) or 0), change=change)


def text_ids_of(pairs: Sequence[LabelledPair],
                text_ids: Callable[[Iterable[str]], dict[str, int]]) -> set[int]:
    """Every project text id behind the pairs' texts: their "text:<id>" keys' and their
    normalised texts' (see the module doc)."""
    ids = {i for p in pairs for i in (_key_id(p.key_a), _key_id(p.key_b)) if i is not None}
    found = text_ids(dict.fromkeys(norm_key(t) for p in pairs for t in (p.text_a, p.text_b)))
    return ids | set(found.values())


def judged_id_pairs(pairs: Sequence[LabelledPair],
                    text_ids: Callable[[Iterable[str]], dict[str, int]]
                    ) -> set[tuple[int, int]]:
    """Each judged pair as the project's text ids of its two sides (every id either side
    has, so a pair judged under a file's key and under a review key are both skipped)."""
    by_text = text_ids(dict.fromkeys(norm_key(t) for p in pairs for t in (p.text_a, p.text_b)))
    out: set[tuple[int, int]] = set()
    for p in pairs:
        side_a = {i for i in (_key_id(p.key_a), by_text.get(norm_key(p.text_a))) if i is not None}
        side_b = {i for i in (_key_id(p.key_b), by_text.get(norm_key(p.text_b))) if i is not None}
        out.update((a, b) for a in side_a for b in side_b if a != b)
    return out


def _key_id(key: str) -> int | None:
    if not key.startswith(_TEXT_KEY):
        return None
    try:
        return int(key[len(_TEXT_KEY):])
    except ValueError:
        return None


def _as_stage(progress: ProgressCallback, stage: str) -> ProgressCallback:
    """`progress` with every report under `stage` (the judge's scoring, the graph's build),
    so a wizard lists the run's own stages only; a training step keeps its loss."""
    def relay(p: Progress) -> None:
        progress(p if p.stage == stage else replace(p, stage=stage))
    return relay
