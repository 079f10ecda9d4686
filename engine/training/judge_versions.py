"""A version's second opinion kept beside it: the judge a fine-tuning run trained (a
cross-encoder, `engine.training.cross_encoder`), stored as a model version of its own.

Before, the judge was thrown away once it had labelled the silver pairs, although it had
learnt the analyst's verdicts and read pairs side by side: a window could show its opinion
of a pair beside the model's. So a run with a second opinion keeps it:

- as version M = N + 1 next to the version N it was trained with, registered in the same
  transaction (`version_folders.register_version`): a folder `<project>.models/v<M>` (a server
  project's folder blob), and a `models` row whose `judge_of` names N (schema v9) and whose
  parent is the run's parent, as N's is (so `duplens copy` carries its folder as it carries
  every version trained in the project);
- listed with its version, never as a model search can use (`list_versions`' "second_opinion",
  `judge_entry`); activating it, or loading its folder as the project's model, is refused
  (`refuse_as_encoder`), since its one logit is no sentence embedding;
- copied out and deleted like any version; deleting N deletes it in the same transaction;
- with its held-out AP and N's on the same held-out pairs (`judge_metrics`): it is offered
  to score pairs (`offered`) only where those pairs show it better than N: the paired
  bootstrap interval of its AP less N's (`engine.training.ap_change`, stored as
  "version_ap_change") lies above 0. A judge that reads the held-out pairs no better than
  the version has nothing to add to what the version says, and a higher AP alone can be
  chance on a few dozen pairs (a judge kept before the interval was stored is not offered);
- safetensors only, stricter than `model_safety` (which lets a pickle sit beside
  safetensors): Duplens wrote the folder, so a pickled file in it came from elsewhere, and a
  judge folder holding one is refused before anything loads (`check_judge_folder`);
- loaded from local files only, with the Hub left offline (`cross_encoder.load_cross_encoder`:
  `local_files_only`, `engine.offline`'s HF_HUB_OFFLINE).

A judge whose weights are those of a judge the project already keeps (the same training
pairs, seed and options in an earlier run with another objective) is not kept again: a
fingerprint names one row. The run's note says which version's judge it matches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engine.encoding.model_safety import PICKLED_WEIGHTS
from engine.errors import InputError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import CrossEncoder

    from engine.store.database import Store
    from engine.training.ap_change import APChange
    from engine.training.second_opinion import SecondOpinion

JUDGE_DIM = 1  # a judge's `models.dim`: its one logit (it embeds nothing)


@dataclass(frozen=True)
class KeptJudge:
    """What `register_version` stores of a run's judge beside the new version."""

    folder: Path  # the judge as the run saved it (moved into place when registered)
    fingerprint: str  # "sha256:<hex>" of its weights
    metrics: dict  # its row's metrics (`judge_metrics`)
    record: dict  # its folder's `duplens_version.json`, less the numbers
    max_seq_length: int


def is_judge(row: dict) -> bool:
    """Whether a `models` row is a version's second opinion rather than an encoder."""
    return row.get("judge_of") is not None


def refuse_as_encoder(row: dict) -> None:
    """InputError, one line, when `row` is a judge: it scores pairs, it cannot serve search."""
    if is_judge(row):
        raise InputError(f"{row['name']}: is the second opinion of version {row['judge_of']}; "
                         f"it scores pairs and cannot encode texts, so it cannot be the "
                         f"active model (activate version {row['judge_of']} instead)")


def judge_metrics(opinion: SecondOpinion, versus_version: APChange) -> dict:
    """The judge row's metrics: its held-out figures, and beside them the AP of the version
    it was trained with and of that version's parent, on the same pairs, and the interval
    of its AP less the version's (`versus_version`: `ap_change(version's scores, judge's)`)."""
    judge = opinion.judge
    return {"average_precision": round(judge.average_precision, 4),
            "version_average_precision": round(versus_version.before, 4),
            "version_ap_change": versus_version.as_dict(),
            "parent_average_precision": round(opinion.bi_encoder_ap, 4),
            "f1": round(judge.f1, 4), "threshold": round(judge.threshold, 4),
            "held_out_pairs": judge.pairs, "held_out_positives": judge.positives,
            "trained_on": opinion.judge_pairs, "steps": opinion.judge_steps,
            "seconds": round(opinion.judge_seconds, 3), "device": opinion.device,
            "silver_pairs": len(opinion.silver)}


def offered(metrics: dict) -> bool:
    """The held-out pairs show the judge better than its version (the interval of its AP
    less the version's lies above 0): only then is its opinion worth showing beside the
    version's. A row without the interval (kept before it was stored) is not offered."""
    from engine.training.ap_change import BETTER

    return (metrics.get("version_ap_change") or {}).get("conclusion") == BETTER


def judge_entry(row: dict, folder: Path | None, available: bool) -> dict:
    """What a versions table shows of a version's judge (`list_versions`)."""
    metrics = row["metrics"] or {}
    return {"id": row["id"], "name": row["name"], "location": row["location"],
            "folder": str(folder) if folder is not None else None, "available": available,
            "average_precision": metrics.get("average_precision"),
            "version_average_precision": metrics.get("version_average_precision"),
            "offered": offered(metrics), "created_at": row["created_at"], "metrics": metrics}


def judge_to_keep(store: Store, opinion: SecondOpinion, versus_version: APChange
                  ) -> tuple[SecondOpinion, KeptJudge | None]:
    """The opinion marked kept or not, and what to store of its judge: None (with the reason
    in `opinion.not_kept`) when its weights are a kept judge's already, or it saved none."""
    from engine.encoding.model_spec import resolve_model
    from engine.store import version_rows

    opinion = replace(opinion, versus_version=versus_version)
    folder = opinion.folder
    if folder is None or not folder.is_dir():
        return replace(opinion, not_kept="the run saved no judge folder"), None
    check_judge_folder(folder)
    fingerprint = resolve_model(str(folder)).fingerprint
    with store.read() as conn:
        same = version_rows.model_with_fingerprint(conn, fingerprint)
    if same is not None:
        return replace(opinion, not_kept=f"it is the same judge as version {same}"), None
    record = {"kind": "second opinion", "model_type": "CrossEncoder",
              "metrics": judge_metrics(opinion, versus_version),
              "training": {"pairs": opinion.judge_pairs, "steps": opinion.judge_steps,
                           "seconds": round(opinion.judge_seconds, 3),
                           "device": opinion.device},
              "created_at": datetime.now(UTC).isoformat(timespec="seconds")}
    kept = KeptJudge(folder, fingerprint, record["metrics"], record, opinion.max_length)
    return replace(opinion, kept=True), kept


def check_judge_folder(folder: Path) -> None:
    """ModelError when a judge folder holds a pickled file anywhere, or no safetensors
    weights: a judge is read from safetensors only (see the module doc)."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    pickled = sorted(p.relative_to(folder).as_posix() for p in files
                     if p.name.endswith(PICKLED_WEIGHTS))
    if pickled:
        raise ModelError(f"{folder}: a second opinion's folder holds pickled files "
                         f"({', '.join(pickled)}); Duplens reads judges from safetensors only")
    if not any(p.name.endswith(".safetensors") for p in files):
        raise ModelError(f"{folder}: a second opinion's folder holds no safetensors weights")


def load_judge(folder: Path, device: str | None = None) -> CrossEncoder:
    """The judge in `folder`, checked (`check_judge_folder`, then `model_safety`'s checks in
    `load_cross_encoder`) and loaded from local files only, on `device` (None: the best)."""
    from engine.training.cross_encoder import load_cross_encoder

    if not folder.is_dir():
        raise ModelError(f"{folder}: the second opinion's folder is missing")
    check_judge_folder(folder)
    return load_cross_encoder(folder, device or "auto")
