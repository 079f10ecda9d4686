"""A real judge (cross-encoder) kept beside a project's active model, as a fine-tuning run
keeps one, without minutes of training: the bundled model's transformer with a random
(seeded), scaled one-logit head, so that its answers are spread out and both verdicts occur.
For the tests of the second opinion in the window and on the command line."""

from __future__ import annotations

import shutil
import time
from pathlib import Path


def make_judge_folder(folder: Path) -> Path:
    """A one-logit cross-encoder saved in `folder` as a run saves its judge (safetensors)."""
    import torch
    from sentence_transformers import CrossEncoder

    from engine.encoding.model_spec import resolve_model

    torch.manual_seed(0)
    judge = CrossEncoder(resolve_model(None).location, num_labels=1, device="cpu",
                         local_files_only=True)
    with torch.no_grad():
        judge.model.classifier.weight.mul_(60.0)   # answers spread out, not all near 0.5
    judge.save(str(folder))
    return folder


def keep_judge(path: Path, folder: Path, *, offered: bool) -> int:
    """Keep `folder` as the active model's second opinion, offered (the held-out pairs show
    it above the model) or not; its model id."""
    from engine.encoding.model_spec import resolve_model
    from engine.project import Project
    from engine.store import version_rows
    from engine.training.version_folders import models_folder, stored_location

    with Project.open(path) as project:
        active = project.model.row()
        with project.store.write() as conn:
            number = version_rows.highest_model_id(conn) + 1
            target = models_folder(path) / f"v{number}"
            shutil.copytree(folder, target)
            version_rows.add_model_version(
                conn, number, name=f"{active['name']} second opinion",
                location=stored_location(path, target),
                fingerprint=resolve_model(str(target)).fingerprint, dim=1, max_seq_length=128,
                parent_id=active["id"], objective=None, created_at=time.time(),
                metrics={"average_precision": 99.0 if offered else 70.0,
                         "version_average_precision": 98.0 if offered else 80.0,
                         "version_ap_change": {"conclusion": "better" if offered
                                               else "worse"}},
                judge_of=active["id"])
    return number
