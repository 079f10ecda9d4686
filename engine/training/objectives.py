"""The training objectives: for each, its loss and the dataset that loss reads.

Every objective starts from the same labelled pairs (`LabelledPair`), so a user can switch
objective without relabelling; each turns them into the columns its sentence-transformers
loss expects. Pairs with a label of 0.5 or more are duplicates where a yes/no is needed.

- softmax: the Sentence-BERT paper's classification objective, (u, v, |u-v|) into 2 classes.
- cosine: regression of the cosine similarity onto the label; the one that uses graded scores.
- triplet: pull a duplicate closer to a question than a non-duplicate, by a margin.
- contrastive: pull duplicates together, push close non-duplicates apart (the hard ones only).
- mnrl: rank each question's duplicate above the other questions in the batch; duplicates only.
- contrastive+mnrl: both, in alternating batches (multi-task training).

The contrastive objectives can add mined hard negatives (`TrainingOptions.hard_negatives`,
`engine.training.hard_negatives`): for each duplicate pair, the texts most similar to its
question that are not its duplicates, as extra "not duplicate" pairs.

sentence-transformers is imported inside functions: importing it takes seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import InputError
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.training.hard_negatives import NegativePool, nearest_non_duplicates
from engine.training.options import TrainingOptions
from engine.training.pairs import LabelledPair, Triplet

if TYPE_CHECKING:  # pragma: no cover
    from datasets import Dataset, DatasetDict
    from sentence_transformers import SentenceTransformer
    from torch import nn

# The objective used when none is named (wizard, CLI, benchmark): the one place to change it.
# benchmarks/finetune_quora.py, 4,000 Quora training pairs, 4,000 held out, learning rate 2e-5:
# contrastive raised held-out AP 76.27 -> 80.63, triplet 76.81, mnrl 76.49, cosine 76.32,
# softmax lowered it to 69.38; at the default 1e-4, contrastive 81.53; contrastive+mnrl at
# 1,000 pairs 80.05 against contrastive's 80.37 (docs/benchmarks.md).
DEFAULT_OBJECTIVE = "contrastive"

# TripletLoss margin: the Sentence-BERT paper's 1 with Euclidean distance. The library's
# default of 5 suits unnormalised embeddings; Duplens' models are mostly normalised, where
# distances stay within 2 and a margin of 5 is never met.
TRIPLET_MARGIN = 1.0


@dataclass
class TrainingData:
    """A loss and its dataset, ready for the trainer, plus what a person should know."""

    loss: nn.Module | dict[str, nn.Module]  # a dict: one loss per dataset of a DatasetDict
    dataset: Dataset | DatasetDict
    examples: int  # rows in the dataset(s)
    no_duplicates: bool = False  # batches must not repeat a text (in-batch negatives)
    notes: list[str] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        """Rows of each dataset: one size, or one per dataset of a DatasetDict."""
        if isinstance(self.loss, dict):
            return [len(self.dataset[name]) for name in self.loss]
        return [len(self.dataset)]


@dataclass(frozen=True)
class BuildContext:
    """What a builder may need besides the model and pairs: how to train, and where to look
    for negatives, report progress and hear of cancelling."""

    options: TrainingOptions = TrainingOptions()
    pool: NegativePool | None = None
    progress: ProgressCallback = no_progress
    cancel: CancelToken | None = None


Builder = Callable[["SentenceTransformer", Sequence[LabelledPair], BuildContext], TrainingData]


@dataclass(frozen=True)
class Objective:
    name: str
    title: str
    explanation: str  # one line for the wizard
    build: Builder
    loss: str = ""  # the sentence-transformers loss class, named for those who know them


def build_training_data(objective: str, model: SentenceTransformer,
                        pairs: Sequence[LabelledPair], *, options: TrainingOptions | None = None,
                        pool: NegativePool | None = None,
                        progress: ProgressCallback = no_progress,
                        cancel: CancelToken | None = None) -> TrainingData:
    """The loss (bound to `model`) and dataset for `objective` on `pairs`.

    `pool`: texts besides the pairs' own to mine hard negatives from (objectives that mine).
    """
    context = BuildContext(options or TrainingOptions(), pool, progress, cancel)
    return get_objective(objective).build(model, pairs, context)


def mines_negatives(objective: str, options: TrainingOptions) -> bool:
    """Whether training `objective` with `options` may mine negatives first (a progress
    stage of its own): triplet does for duplicates without a labelled negative, the
    contrastive objectives when asked for hard negatives."""
    return objective == "triplet" or (objective in ("contrastive", "contrastive+mnrl")
                                      and options.hard_negatives > 0)


def get_objective(name: str) -> Objective:
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise InputError(f"unknown training objective {name!r}; use one of: "
                         f"{', '.join(OBJECTIVES)}") from None


# -- builders -------------------------------------------------------------------------------


def _duplicate_dataset(pairs: Sequence[LabelledPair]) -> Dataset:
    """(sentence1, sentence2, 0/1 duplicate): what SoftmaxLoss and OnlineContrastiveLoss take."""
    return _dataset({"sentence1": [p.text_a for p in pairs],
                     "sentence2": [p.text_b for p in pairs],
                     "label": [int(p.is_duplicate) for p in pairs]})


def _softmax(model: SentenceTransformer, pairs: Sequence[LabelledPair],
              context: BuildContext) -> TrainingData:
    from sentence_transformers.sentence_transformer.losses import SoftmaxLoss

    _require_both_classes("softmax", pairs)
    dataset = _duplicate_dataset(pairs)
    loss = SoftmaxLoss(model, model.get_embedding_dimension(), num_labels=2)
    return TrainingData(loss, dataset, len(pairs), notes=_graded_note("softmax", pairs))


def _cosine(model: SentenceTransformer, pairs: Sequence[LabelledPair],
             context: BuildContext) -> TrainingData:
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    if len({p.label for p in pairs}) < 2:
        raise InputError("the cosine objective needs pairs with different labels; all "
                         f"{len(pairs)} pairs have the same one")
    dataset = _dataset({"sentence1": [p.text_a for p in pairs],
                        "sentence2": [p.text_b for p in pairs],
                        "label": [float(p.label) for p in pairs]})
    return TrainingData(CosineSimilarityLoss(model), dataset, len(pairs))


def _contrastive(model: SentenceTransformer, pairs: Sequence[LabelledPair],
                 context: BuildContext) -> TrainingData:
    _require_both_classes("contrastive", pairs)
    mined, notes = _with_hard_negatives(model, pairs, context)
    dataset = _duplicate_dataset([*pairs, *mined])
    return TrainingData(_online_contrastive(model, context.options), dataset, len(dataset),
                        notes=[*_graded_note("contrastive", pairs), *notes])


def _contrastive_mnrl(model: SentenceTransformer, pairs: Sequence[LabelledPair],
                      context: BuildContext) -> TrainingData:
    """Two datasets and two losses, trained in turn (sentence-transformers' multi-task
    training, its Quora example's recipe): batches of pairs for the contrastive loss and
    batches of duplicates for the ranking loss."""
    from datasets import DatasetDict
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    _require_both_classes("contrastive+mnrl", pairs)
    positives = [p for p in pairs if p.is_duplicate]
    mined, notes = _with_hard_negatives(model, pairs, context)
    contrastive = _duplicate_dataset([*pairs, *mined])
    ranking = _dataset({"anchor": [p.text_a for p in positives],
                        "positive": [p.text_b for p in positives]})
    dataset = DatasetDict({"contrastive": contrastive, "mnrl": ranking})
    loss = {"contrastive": _online_contrastive(model, context.options),
            "mnrl": MultipleNegativesRankingLoss(model)}
    return TrainingData(loss, dataset, len(contrastive) + len(ranking), no_duplicates=True,
                        notes=[*_graded_note("contrastive+mnrl", pairs), *notes])


def _online_contrastive(model: SentenceTransformer, options: TrainingOptions) -> nn.Module:
    from sentence_transformers.sentence_transformer.losses import OnlineContrastiveLoss

    return OnlineContrastiveLoss(model, margin=options.margin)


def _with_hard_negatives(model: SentenceTransformer, pairs: Sequence[LabelledPair],
                         context: BuildContext) -> tuple[list[LabelledPair], list[str]]:
    """`options.hard_negatives` mined "not duplicate" pairs per duplicate pair, and a note."""
    per_anchor = context.options.hard_negatives
    anchors = [p for p in pairs if p.is_duplicate]
    if not per_anchor or not anchors:
        return [], []
    found = nearest_non_duplicates(model, pairs, anchors, per_anchor, pool=context.pool,
                                   below_positive=True, progress=context.progress,
                                   cancel=context.cancel)
    mined = [LabelledPair(p.text_a, negative, 0.0, key_a=p.key_a)
             for p, negatives in zip(anchors, found.negatives, strict=True)
             for negative in negatives]
    note = (f"{len(mined)} mined pairs were added as not duplicate: for each of the "
            f"{len(anchors)} duplicate pairs, the {per_anchor} texts of the {found.candidates} "
            f"searched most similar to its question, outside its duplicate group and less "
            f"similar than its duplicate")
    return mined, [note]


def _mnrl(model: SentenceTransformer, pairs: Sequence[LabelledPair],
           context: BuildContext) -> TrainingData:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    positives = [p for p in pairs if p.is_duplicate]
    if len(positives) < 2:
        raise InputError(f"the mnrl objective needs at least 2 pairs labelled duplicate; found "
                         f"{len(positives)}")
    dataset = _dataset({"anchor": [p.text_a for p in positives],
                        "positive": [p.text_b for p in positives]})
    notes = []
    if len(positives) < len(pairs):
        notes.append(f"mnrl trains on the {len(positives)} duplicate pairs only; the other "
                     f"questions in each batch serve as negatives, so the "
                     f"{len(pairs) - len(positives)} pairs labelled not duplicate are unused")
    return TrainingData(MultipleNegativesRankingLoss(model), dataset, len(positives),
                        no_duplicates=True, notes=notes)


def _triplet(model: SentenceTransformer, pairs: Sequence[LabelledPair],
              context: BuildContext) -> TrainingData:
    from sentence_transformers.sentence_transformer.losses import (
        TripletDistanceMetric,
        TripletLoss,
    )

    built = make_triplets(pairs, model, seed=context.options.seed, pool=context.pool,
                          progress=context.progress, cancel=context.cancel)
    dataset = _dataset({"anchor": [t.anchor for t in built.triplets],
                        "positive": [t.positive for t in built.triplets],
                        "negative": [t.negative for t in built.triplets]})
    loss = TripletLoss(model, distance_metric=TripletDistanceMetric.EUCLIDEAN,
                       triplet_margin=TRIPLET_MARGIN)
    notes = []
    if built.mined:
        notes.append(f"{built.mined} of {len(built.triplets)} triplets use a mined negative: "
                     f"the most similar training text not known to be a duplicate")
    if built.skipped:
        notes.append(f"{built.skipped} duplicate pairs were left out: no text in the training "
                     f"data could serve as their negative")
    return TrainingData(loss, dataset, len(built.triplets), notes=notes)


# -- triplets from pairs --------------------------------------------------------------------


@dataclass(frozen=True)
class BuiltTriplets:
    triplets: list[Triplet]
    mined: int  # how many negatives were mined rather than labelled
    skipped: int  # duplicate pairs without any possible negative


def make_triplets(pairs: Sequence[LabelledPair], model: SentenceTransformer | None = None, *,
                  seed: int = 0, pool: NegativePool | None = None,
                  progress: ProgressCallback = no_progress,
                  cancel: CancelToken | None = None) -> BuiltTriplets:
    """One (anchor, positive, negative) triplet per duplicate pair.

    The anchor is the pair's first text and the positive its second; the negative is one of
    the texts labelled "not duplicate" against the anchor, picked with `seed`. When the first
    text has none but the second has, the pair is turned round. When neither has, a hard
    negative is mined: the training text most similar to the anchor under `model` (the model
    before training) among those not linked to it by any chain of duplicate labels, or from
    `pool` (`engine.training.hard_negatives`). A mined
    negative may be an unlabelled duplicate after all; labelled negatives avoid that risk, so
    they always come first. Without a model, pairs needing a mined negative are skipped.
    """
    positives = [p for p in pairs if p.is_duplicate]
    if not positives:
        raise InputError("the triplet objective needs pairs labelled duplicate; there are none")
    negatives: dict[str, list[str]] = defaultdict(list)
    for p in pairs:
        if not p.is_duplicate:
            negatives[p.key_a].append(p.text_b)
            negatives[p.key_b].append(p.text_a)
    rng = np.random.default_rng(seed)
    triplets: list[Triplet | None] = []
    to_mine: list[int] = []  # indexes into triplets awaiting a mined negative
    for p in positives:
        if negatives.get(p.key_a):
            triplets.append(Triplet(p.text_a, p.text_b, _pick(negatives[p.key_a], rng)))
        elif negatives.get(p.key_b):
            triplets.append(Triplet(p.text_b, p.text_a, _pick(negatives[p.key_b], rng)))
        else:
            to_mine.append(len(triplets))
            triplets.append(None)
    mined = 0
    if to_mine and model is not None:
        found = nearest_non_duplicates(model, pairs, [positives[i] for i in to_mine], 1,
                                       pool=pool, progress=progress, cancel=cancel)
        for i, negatives in zip(to_mine, found.negatives, strict=True):
            if negatives:
                triplets[i] = Triplet(positives[i].text_a, positives[i].text_b, negatives[0])
                mined += 1
    made = [t for t in triplets if t is not None]
    if not made:
        raise InputError("no triplet could be made: the pairs labelled duplicate have no "
                         "negative; add pairs labelled not duplicate")
    return BuiltTriplets(made, mined, len(triplets) - len(made))


def _pick(texts: list[str], rng: np.random.Generator) -> str:
    return texts[int(rng.integers(len(texts)))]


# -- helpers --------------------------------------------------------------------------------


def _dataset(columns: dict[str, list]) -> Dataset:
    from datasets import Dataset

    return Dataset.from_dict(columns)


def _require_both_classes(name: str, pairs: Sequence[LabelledPair]) -> None:
    duplicates = sum(p.is_duplicate for p in pairs)
    if duplicates == 0 or duplicates == len(pairs):
        verdict = "not duplicate" if duplicates == 0 else "duplicate"
        raise InputError(f"the {name} objective needs pairs labelled duplicate and not "
                         f"duplicate; all {len(pairs)} are {verdict} (mnrl and triplet can "
                         f"train on duplicates alone)")


def _graded_note(name: str, pairs: Sequence[LabelledPair]) -> list[str]:
    graded = sum(0 < p.label < 1 for p in pairs)
    if not graded:
        return []
    return [f"{name} needs yes/no labels: {graded} graded scores were read as duplicate from "
            f"0.5 up (the cosine objective uses them as they are)"]


OBJECTIVES: dict[str, Objective] = {
    objective.name: objective for objective in (
        Objective("softmax", "Classification (softmax)",
                  "Sentence-BERT's original objective: a classifier on (u, v, |u-v|) learns "
                  "duplicate or not, shaping the embeddings on the way. It lowered "
                  "duplicate-finding quality on Quora pairs: the classifier is thrown "
                  "away, and search uses the cosine.", _softmax,
                  "SoftmaxLoss"),
        Objective("cosine", "Cosine similarity regression",
                  "Makes the cosine similarity of each pair match its label; the one that "
                  "uses graded scores such as 0-5 as they are.", _cosine,
                  "CosineSimilarityLoss"),
        Objective("triplet", "Triplet",
                  "Pulls a question's duplicate closer than a non-duplicate by a margin; "
                  "negatives come from the labels, or are mined when a question has none.",
                  _triplet, "TripletLoss"),
        Objective("contrastive", "Online contrastive",
                  "Pulls duplicates together and pushes apart non-duplicates that are too "
                  "close, learning from the hardest pairs in each batch.", _contrastive,
                  "OnlineContrastiveLoss"),
        Objective("mnrl", "Multiple negatives ranking",
                  "Ranks each question's duplicate above every other question in the batch; "
                  "needs duplicate pairs only (the rest of the batch are the negatives).",
                  _mnrl, "MultipleNegativesRankingLoss"),
        Objective("contrastive+mnrl", "Online contrastive and ranking",
                  "Both of the above in turn: contrastive batches of all the pairs, and "
                  "ranking batches of the duplicates against the rest of the batch.",
                  _contrastive_mnrl, "OnlineContrastiveLoss + MultipleNegativesRankingLoss"),
    )
}
