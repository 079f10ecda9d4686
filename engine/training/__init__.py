"""Fine-tuning a sentence encoder on the user's labelled pairs, without Qt.

`pairs` reads and summarises labelled data, `split` holds some out without sharing questions,
`options` says how to train, `objectives` turns pairs into a loss and dataset
(`hard_negatives` finds hard negatives for them), `trainer` trains a copy of a model
(`validation` keeps its best epoch), and `held_out` measures a model on held-out pairs (with
`engine.pair_metrics`). `cross_encoder` trains a second opinion on the verdicts and `silver`
picks the unlabelled pairs it labels (Augmented SBERT). torch, sentence-transformers and
datasets are imported only when a function needs them.

The package's names are imported from their modules on first use (`__getattr__`): a command
that only reads where a project's model versions live (`version_folders`) must not import
pandas, SciPy and the trainer with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from engine.training.hard_negatives import NegativePool, nearest_non_duplicates
    from engine.training.held_out import (
        CurvePoint,
        PairMetrics,
        VerdictChange,
        changed_verdicts,
        held_out_metrics,
        metrics_from_scores,
        pair_scores,
    )
    from engine.training.objectives import (
        DEFAULT_OBJECTIVE,
        OBJECTIVES,
        BuiltTriplets,
        Objective,
        TrainingData,
        build_training_data,
        get_objective,
        make_triplets,
        mines_negatives,
    )
    from engine.training.options import TrainingOptions
    from engine.training.pairs import (
        DUPLICATE_AT,
        LabelledFile,
        LabelledPair,
        PairSummary,
        Triplet,
        pairs_from_triplets,
        read_labelled_file,
        summarise,
    )
    from engine.training.split import PairSplit, split_pairs
    from engine.training.trainer import TrainingProgress, TrainResult, finetune

# Which module each name of the package comes from.
_MODULES = {
    "hard_negatives": ("NegativePool", "nearest_non_duplicates"),
    "held_out": ("CurvePoint", "PairMetrics", "VerdictChange", "changed_verdicts",
                 "held_out_metrics", "metrics_from_scores", "pair_scores"),
    "objectives": ("BuiltTriplets", "DEFAULT_OBJECTIVE", "OBJECTIVES", "Objective",
                   "TrainingData", "build_training_data", "get_objective", "make_triplets",
                   "mines_negatives"),
    "options": ("TrainingOptions",),
    "pairs": ("DUPLICATE_AT", "LabelledFile", "LabelledPair", "PairSummary", "Triplet",
              "pairs_from_triplets", "read_labelled_file", "summarise"),
    "split": ("PairSplit", "split_pairs"),
    "trainer": ("TrainResult", "TrainingProgress", "finetune"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"engine.training.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_OBJECTIVE",
    "DUPLICATE_AT",
    "OBJECTIVES",
    "BuiltTriplets",
    "CurvePoint",
    "LabelledFile",
    "LabelledPair",
    "NegativePool",
    "Objective",
    "PairMetrics",
    "PairSplit",
    "PairSummary",
    "TrainResult",
    "TrainingData",
    "TrainingOptions",
    "TrainingProgress",
    "Triplet",
    "VerdictChange",
    "build_training_data",
    "changed_verdicts",
    "finetune",
    "get_objective",
    "held_out_metrics",
    "make_triplets",
    "metrics_from_scores",
    "mines_negatives",
    "nearest_non_duplicates",
    "pair_scores",
    "pairs_from_triplets",
    "read_labelled_file",
    "split_pairs",
    "summarise",
]
