"""The fine-tuning summary names the command that measured each figure: the one that ran
that objective on that split, not the file's last command."""

from __future__ import annotations

from benchmarks.finetune_quora import _command_of

CONTRASTIVE = ("python -m benchmarks.finetune_quora --on test --sizes 1000 --objectives "
               "contrastive --set learning_rate=1e-4 --merge")
COSINE = ("python -m benchmarks.finetune_quora --on test --sizes 1000 --objectives cosine "
          "softmax --set learning_rate=1e-5 --merge")
VALIDATION = "python -m benchmarks.finetune_quora --on validation --sizes 1000 --merge"


def _data() -> dict:
    return {"command": COSINE, "earlier_commands": [VALIDATION, CONTRASTIVE]}


def test_an_older_run_is_named_by_the_command_that_ran_its_objective_on_its_split():
    data = _data()
    assert _command_of(data, "test", {"objective": "contrastive"}) == CONTRASTIVE
    assert _command_of(data, "test", {"objective": "softmax"}) == COSINE
    assert _command_of(data, "validation", {"objective": "contrastive"}) == VALIDATION
    assert _command_of(data, "test") == COSINE          # the default model: any test run
    assert _command_of(data, "test", {"objective": "triplet"}) is None


def test_a_run_that_records_its_command_is_named_by_it():
    own = "python -m benchmarks.finetune_quora --on test --objectives contrastive --seed 3"
    assert _command_of(_data(), "test", {"objective": "contrastive", "command": own}) == own
