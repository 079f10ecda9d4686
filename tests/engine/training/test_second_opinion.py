"""The second opinion inside a fine-tuning run (issue 45): a judge trained on the training
side only, measured on the held-out pairs, labelling silver pairs that never touch a held-out
text; the silver joins the training side; off, a run is as before.

The first tests stand a fixed judge in for the cross-encoder (no model: quick); the last
trains a real one for two steps on a labelled project (slow)."""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest

from engine.dedup.graph import KnnGraph
from engine.encoding.model_safety import PICKLED_WEIGHTS
from engine.errors import Cancelled, InputError
from engine.progress import CancelToken
from engine.text import norm_key
from engine.training import cross_encoder
from engine.training.ap_change import BETTER, NO_CHANGE, UNDECIDED
from engine.training.cross_encoder import CrossEncoderResult, score_pairs
from engine.training.held_out import metrics_from_scores
from engine.training.options import TrainingOptions
from engine.training.pairs import LabelledPair
from engine.training.second_opinion import (
    SECOND_OPINION_STAGES,
    STAGE_JUDGE,
    STAGE_JUDGE_MEASURE,
    STAGE_SILVER,
    SilverSource,
    judged_id_pairs,
    run_second_opinion,
    text_ids_of,
)
from engine.training.session import (
    FINETUNE_STAGES,
    STAGE_AFTER,
    STAGE_BEFORE,
    STAGE_MINING,
    STAGE_SAVING,
    STAGE_TRAINING,
    finetune_stages,
)
from engine.training.silver import DEFAULT_BAND
from engine.training.version_folders import VERSION_FILE, data_hash

IDS = np.arange(1, 13, dtype=np.int64)
TEXTS = {int(i): f"Question number {i}?" for i in IDS}


def pair(a: int, b: int, label: float, keyed: bool = True) -> LabelledPair:
    """Texts a and b; keyed by text id as review verdicts are, else by text as a file's."""
    keys = {"key_a": f"text:{a}", "key_b": f"text:{b}"} if keyed else {}
    return LabelledPair(TEXTS[a], TEXTS[b], label, **keys)


# Held out: every pair of texts 1-4 (by review keys) and 9 (only by its text: a file's pair),
# labelled as the fixed judge below reads them (a duplicate where the numbers add up to a
# multiple of 3): 3 duplicates, 7 not.
HELD_OUT = [pair(1, 2, 1.0), pair(3, 4, 0.0), pair(9, 2, 0.0, keyed=False),
            pair(1, 3, 0.0), pair(1, 4, 0.0), pair(2, 3, 0.0), pair(2, 4, 1.0),
            pair(9, 1, 0.0, keyed=False), pair(9, 3, 1.0, keyed=False),
            pair(9, 4, 0.0, keyed=False)]
TRAIN = [pair(5, 6, 1.0), pair(7, 8, 0.0), pair(10, 5, 0.0)]
HELD_LABELS = [p.is_duplicate for p in HELD_OUT]
# The model's similarities of the held-out pairs: every duplicate below every other pair
# (the fixed judge is shown better on them), ...
MODEL_WRONG = [0.1 + 0.01 * i if d else 0.9 - 0.01 * i for i, d in enumerate(HELD_LABELS)]
# ... as the judge reads them (AP 100 both: no change) ...
MODEL_AS_JUDGE = [0.9 if d else 0.2 for d in HELD_LABELS]
# ... and one duplicate, (2, 4), below one other pair, (1, 3): the judge's AP is higher, but
# a third of the bootstrap's draws leave one of the two out, and those show no difference.
MODEL_ONE_SWAP = [0.5 if i == 6 else 0.6 if i == 3 else s
                  for i, s in enumerate(MODEL_AS_JUDGE)]


def complete_graph(similarity: float = 0.8) -> KnnGraph:
    """Every pair of texts at one similarity (within any band of the threshold 0.8)."""
    edges = [(a, b) for a, b in itertools.permutations(range(len(IDS)), 2)]
    return KnnGraph.from_rows(IDS, np.array([a for a, _ in edges]),
                              np.array([b for _, b in edges]),
                              np.full(len(edges), similarity), k=len(IDS) - 1)


def text_ids(keys):
    by_key = {norm_key(t): i for i, t in TEXTS.items()}
    return {k: by_key[k] for k in keys if k in by_key}


class FixedJudge:
    """A judge that calls two texts duplicates when their numbers add up to a multiple of 3."""

    def __init__(self) -> None:
        self.scored: list[tuple[str, str]] = []

    def predict(self, pairs, batch_size, show_progress_bar, activation_fn, convert_to_numpy):
        self.scored.extend(pairs)
        number = {t: i for i, t in TEXTS.items()}
        return np.array([0.9 if (number[a] + number[b]) % 3 == 0 else 0.2 for a, b in pairs],
                        dtype=np.float32)


@pytest.fixture
def judge(monkeypatch):
    """The fixed judge, returned by a stand-in `train_cross_encoder` that records what it
    was trained on (`judge.trained`) and can set a cancel token while "training"."""
    made = FixedJudge()
    made.trained, made.cancel_during = None, None

    def train(pairs, output_dir, *, progress, cancel, **options):
        made.trained, made.options = list(pairs), options
        from engine.progress import Progress

        progress(Progress(cross_encoder.TRAINING_STAGE, 1, 1))
        if made.cancel_during is not None:
            made.cancel_during.cancel()
        cancel.raise_if_cancelled()
        return CrossEncoderResult(output_dir, len(pairs), 0.5, 1, "cpu", [], made)

    monkeypatch.setattr(cross_encoder, "train_cross_encoder", train)
    return made


def source(graph: KnnGraph | None = None, on_graph=None) -> SilverSource:
    def get_graph(progress, cancel):
        if on_graph is not None:
            on_graph(cancel)
        return graph if graph is not None else complete_graph()

    return SilverSource(get_graph, 0.8, lambda ids: {i: TEXTS[i] for i in ids}, text_ids)


def run(_judge, tmp_path, *, limit=100, band=0.1, cancel=None, silver=None,
        events=None, model=MODEL_WRONG, always=False):
    options = TrainingOptions(second_opinion=limit, silver_band=band, max_steps=3,
                              silver_always=always)
    return run_second_opinion(TRAIN, HELD_OUT, [*TRAIN, *HELD_OUT], silver or source(),
                              options, tmp_path / "judge", bi_encoder_scores=model,
                              device="cpu",
                              progress=(events.append if events is not None else
                                        lambda _: None),
                              cancel=cancel or CancelToken())


def silver_ids(opinion) -> set[int]:
    return {int(k.removeprefix("text:")) for p in opinion.silver for k in (p.key_a, p.key_b)}


def test_no_silver_pair_touches_a_held_out_text_and_none_repeats_a_judged_pair(judge,
                                                                                tmp_path):
    events = []
    opinion = run(judge, tmp_path, events=events)
    # Held-out texts: 1-4 by their keys, 9 by its text; the rest may be paired.
    assert opinion.excluded_texts == 5
    assert silver_ids(opinion) == {5, 6, 7, 8, 10, 11, 12}
    assert not silver_ids(opinion) & {1, 2, 3, 4, 9}
    # 21 pairs of the 7 free texts, less the three the analyst judged.
    pairs = {frozenset((p.key_a, p.key_b)) for p in opinion.silver}
    assert len(opinion.silver) == len(pairs) == 21 - 3
    assert frozenset(("text:5", "text:6")) not in pairs
    assert frozenset(("text:10", "text:5")) not in pairs
    # The judge learnt from the training side only, and scored held-out pairs and silver.
    assert judge.trained == TRAIN
    assert judge.scored[:len(HELD_OUT)] == [(p.text_a, p.text_b) for p in HELD_OUT]
    assert judge.options["max_steps"] == 3 and judge.options["device"] == "cpu"
    assert list(dict.fromkeys(e.stage for e in events)) == list(SECOND_OPINION_STAGES)


def test_the_judge_is_measured_beside_the_model_and_the_silver_labels_counted(judge,
                                                                              tmp_path):
    opinion = run(judge, tmp_path, limit=5)
    # The fixed judge ranks the held-out duplicates first: AP 100; the model ranks them last.
    model_ap = metrics_from_scores(MODEL_WRONG, HELD_LABELS).average_precision
    assert opinion.judge.average_precision == pytest.approx(100.0)
    assert opinion.judge.pairs == 10 and opinion.judge.positives == 3
    assert opinion.bi_encoder_ap == pytest.approx(model_ap) and model_ap < 50
    change = opinion.change
    assert change.conclusion == BETTER and change.low > 0
    assert (change.before, change.after) == (pytest.approx(model_ap), pytest.approx(100.0))
    assert len(opinion.silver) == 5
    assert all(p.label in (pytest.approx(0.9), pytest.approx(0.2)) for p in opinion.silver)
    found = opinion.as_dict()
    assert found["judge"]["average_precision"] == pytest.approx(100.0)
    assert found["judge"]["trained_on"] == len(TRAIN) and found["judge"]["kept"] is False
    assert found["judge"]["versus_model"]["conclusion"] == BETTER
    assert found["bi_encoder_average_precision"] == pytest.approx(model_ap, abs=1e-4)
    silver = found["silver"]
    assert silver["pairs"] == 5 and silver["asked"] == 5
    assert silver["duplicates"] == sum(p.label >= 0.5 for p in opinion.silver)
    assert silver["duplicates"] + silver["not_duplicates"] == 5
    assert silver["band"] == 0.1 and silver["threshold"] == 0.8
    assert "100.00" in opinion.note and f"{model_ap:.2f}" in opinion.note
    assert f"95% interval {change.low:+.2f} to {change.high:+.2f}" in opinion.note
    assert "5 silver" in opinion.note
    json.dumps(found)  # stored as the version's metrics


@pytest.mark.parametrize(("model", "conclusion"), [(MODEL_AS_JUDGE, NO_CHANGE),
                                                   (MODEL_ONE_SWAP, UNDECIDED)])
def test_a_judge_not_shown_better_than_the_model_labels_no_silver_and_says_why(
        judge, tmp_path, model, conclusion):
    """The fixed judge reads the held-out pairs at AP 100. Against a model as good, or one
    whose lower AP the held-out pairs cannot tell from chance (one swapped pair of ten), it
    has nothing sure to teach: no pair is labelled and the run says why, with the interval."""
    opinion = run(judge, tmp_path, model=model)
    model_ap = metrics_from_scores(model, HELD_LABELS).average_precision
    assert opinion.judge.average_precision == pytest.approx(100.0)
    assert opinion.change.conclusion == conclusion
    if conclusion == UNDECIDED:
        assert model_ap < 100.0 and opinion.change.low <= 0 < opinion.change.high
    assert opinion.silver == []
    assert judge.scored == [(p.text_a, p.text_b) for p in HELD_OUT]   # nothing else scored
    assert "do not show the judge better than the model" in opinion.withheld
    assert f"against {model_ap:.2f}" in opinion.withheld and "interval" in opinion.withheld
    assert "no silver pairs: the held-out pairs do not show" in opinion.note
    assert opinion.as_dict()["silver"]["withheld"] == opinion.withheld
    assert opinion.as_dict()["silver"]["pairs"] == 0


def test_a_residual_judges_prior_reaches_training_measuring_and_silver(judge, tmp_path):
    """`prior` makes the judge residual: the prior logits of the training pairs go to its
    training, and its scores of the held-out pairs and of the silver are its logit plus
    the prior's, through a sigmoid."""
    asked: list[list[tuple[str, str]]] = []

    def prior(pairs):
        asked.append(list(pairs))
        return np.full(len(pairs), -3.0)

    options = TrainingOptions(second_opinion=5, silver_band=0.1, max_steps=3)
    opinion = run_second_opinion(TRAIN, HELD_OUT, [*TRAIN, *HELD_OUT], source(), options,
                                 tmp_path / "judge", bi_encoder_scores=MODEL_WRONG,
                                 device="cpu", progress=lambda _: None, cancel=CancelToken(),
                                 prior=prior)
    texts = [[(p.text_a, p.text_b) for p in side] for side in (TRAIN, HELD_OUT)]
    assert asked[:2] == texts and len(asked) == 3
    assert asked[2] == [(p.text_a, p.text_b) for p in opinion.silver]
    assert list(judge.options["prior"]) == [-3.0] * len(TRAIN)
    # The fixed judge's outputs (0.9, 0.2) are now logits: sigmoid(0.9 - 3), sigmoid(0.2 - 3).
    low, high = 1 / (1 + np.exp(3.0 - 0.2)), 1 / (1 + np.exp(3.0 - 0.9))
    assert {round(p.label, 5) for p in opinion.silver} <= {round(low, 5), round(high, 5)}
    assert opinion.judge.average_precision == pytest.approx(100.0)   # the order is kept


def test_silver_always_labels_silver_even_from_a_judge_no_better(judge, tmp_path):
    opinion = run(judge, tmp_path, model=MODEL_AS_JUDGE, always=True, limit=5)
    assert len(opinion.silver) == 5 and opinion.withheld == ""
    assert opinion.as_dict()["silver"]["withheld"] is None


def test_only_pairs_within_the_band_are_labelled(judge, tmp_path):
    assert run(judge, tmp_path, band=0.05, silver=source(complete_graph(0.7))).silver == []


@pytest.mark.parametrize("where", ["before", "training", "graph"])
def test_cancel_is_heard_in_every_stage(judge, tmp_path, where):
    cancel = CancelToken()
    if where == "before":
        cancel.cancel()
    elif where == "training":
        judge.cancel_during = cancel
    with pytest.raises(Cancelled):
        run(judge, tmp_path, cancel=cancel,
            silver=source(on_graph=lambda _: cancel.cancel() if where == "graph" else None))
    assert (judge.trained is None) == (where == "before")
    assert not [a for a, _ in judge.scored if a == TEXTS[5]]  # no silver was labelled


def test_a_training_side_of_one_verdict_is_refused(judge, tmp_path):
    one_kind = [pair(5, 6, 1.0), pair(7, 8, 1.0)]
    with pytest.raises(InputError, match="second opinion"):
        run_second_opinion(one_kind, HELD_OUT, one_kind, source(),
                           TrainingOptions(second_opinion=5), tmp_path / "judge",
                           bi_encoder_scores=MODEL_WRONG, device="cpu",
                           progress=lambda _: None,
                           cancel=CancelToken())
    assert judge.trained is None


def test_text_ids_come_from_review_keys_and_from_texts():
    assert text_ids_of(HELD_OUT, text_ids) == {1, 2, 3, 4, 9}
    assert text_ids_of([pair(1, 2, 1.0)], lambda keys: {}) == {1, 2}
    assert judged_id_pairs([pair(9, 1, 0.0, keyed=False), pair(3, 4, 1.0)], text_ids) == \
        {(9, 1), (3, 4)}


def test_stages_are_listed_only_when_the_option_is_on():
    before = (STAGE_BEFORE, STAGE_TRAINING, STAGE_AFTER, STAGE_SAVING)
    assert finetune_stages("contrastive") == before   # off: exactly as before
    assert finetune_stages("contrastive", TrainingOptions(second_opinion=0)) == before
    on = finetune_stages("contrastive", TrainingOptions(second_opinion=10))
    assert on == (STAGE_BEFORE, STAGE_JUDGE, STAGE_JUDGE_MEASURE, STAGE_SILVER,
                  STAGE_TRAINING, STAGE_AFTER, STAGE_SAVING)
    every = finetune_stages("contrastive", TrainingOptions(second_opinion=1, hard_negatives=1),
                            converts=True)
    assert every == (STAGE_BEFORE, *SECOND_OPINION_STAGES, *FINETUNE_STAGES[1:])
    assert STAGE_MINING in every and not set(SECOND_OPINION_STAGES) & set(FINETUNE_STAGES)


def test_the_options_check_their_values_and_old_stored_options_read_as_off():
    assert TrainingOptions().second_opinion == 0
    assert TrainingOptions().silver_band == DEFAULT_BAND
    for bad in ({"second_opinion": -1}, {"silver_band": 0.0}, {"silver_band": 1.0}):
        with pytest.raises(ValueError):
            TrainingOptions(**bad)
    old = {"batch_size": 4, "learning_rate": 1e-4, "warmup_ratio": 0.1, "epochs": 1,
           "max_steps": 2, "seed": 0, "weight_decay": 0.01, "margin": 0.5,
           "hard_negatives": 0, "validation": 0.0, "patience": 1}   # stored before issue 45
    read = TrainingOptions.from_stored({**old, "from_the_future": 1})
    assert read == TrainingOptions(batch_size=4, max_steps=2) and read.second_opinion == 0


# -- a real run on a labelled project -------------------------------------------------------


@pytest.mark.slow
def test_a_run_with_a_second_opinion_trains_on_silver_that_avoids_held_out_texts(
        tmp_path, encoder, monkeypatch):
    from engine.training.silver import silver_candidates
    from tests.engine.training.test_project_versions import make_project

    project = make_project(tmp_path / "q.duplens", encoder)
    try:
        events = []
        # A wide band: on these 46 questions the pairs near the threshold that touch a
        # held-out text are pairs the analyst judged, which are skipped anyway; from 0.30 up
        # some are not (measured: 8 pairs, 5 of them about held-out texts).
        # silver_always: two steps make a weak judge, whose silver the guard would withhold
        # (tested above with a fixed judge); here the silver's path through a run is tested.
        options = TrainingOptions(batch_size=4, max_steps=2, second_opinion=30,
                                  silver_band=0.45, silver_always=True)
        report = project.versions.finetune(options=options, progress=events.append)
        stages = list(dict.fromkeys(e.stage for e in events))
        assert stages == ["measuring before", "training second opinion",
                          "measuring second opinion", "labelling silver", "training",
                          "measuring after", "saving"]
        opinion = report.second_opinion
        split = report.split
        assert opinion is not None and 0 < len(opinion.silver) <= 30
        assert opinion.judge.pairs == len(split.held_out)
        assert opinion.bi_encoder_ap == report.before.average_precision
        assert opinion.judge_pairs == len(split.train)

        # No silver pair touches a held-out text...
        held_ids = {int(k.removeprefix("text:")) for p in split.held_out
                    for k in (p.key_a, p.key_b)}
        assert not silver_ids(opinion) & held_ids
        # ...where, unexcluded, the graph's pairs near the threshold would.
        graph = project.clusters.graph()
        with project.store.read() as conn:
            from engine.store import items as items_store

            def by_text(keys):
                return items_store.text_ids_for_keys(conn, keys)

            judged = judged_id_pairs(split.train + split.held_out + split.dropped, by_text)
            unexcluded = silver_candidates(graph, opinion.threshold, band=0.45, limit=30,
                                           labelled=judged)
        assert any({c.id_a, c.id_b} & held_ids for c in unexcluded)

        # The silver joined the training side, and only it.
        assert report.training_pairs == [*split.train, *opinion.silver]
        assert report.data_sha256 == data_hash(report.training_pairs)
        assert report.train.examples == len(split.train) + len(opinion.silver)
        silver_texts = {(p.text_a, p.text_b) for p in opinion.silver}
        assert not silver_texts & {(p.text_a, p.text_b) for p in split.held_out}

        # The report, the version's row and its record say what the judge and silver did.
        found = report.as_json()
        assert found["pairs"]["silver"] == len(opinion.silver)
        assert found["options"]["second_opinion"] == 30
        assert found["second_opinion"]["judge"]["average_precision"] == \
            pytest.approx(opinion.judge.average_precision, abs=1e-4)
        assert found["second_opinion"]["bi_encoder_average_precision"] == \
            pytest.approx(report.before.average_precision, abs=1e-4)
        assert found["second_opinion"]["silver"]["duplicates"] == opinion.silver_duplicates
        assert any(n.startswith("second opinion:") for n in report.notes)
        row = {v["id"]: v for v in project.versions.list()}[report.version_id]
        assert row["metrics"]["second_opinion"] == found["second_opinion"]
        assert row["metrics"]["silver_pairs"] == len(opinion.silver)
        record = json.loads((report.folder / VERSION_FILE).read_text(encoding="utf-8"))
        assert record["second_opinion"] == found["second_opinion"]
        assert record["pairs"]["silver"] == len(opinion.silver)
        # The judge is kept as version 3, v2's second opinion, and nothing else is left.
        assert sorted(p.name for p in report.folder.parent.iterdir()) == ["v2", "v3"]
        assert opinion.kept and opinion.kept_as == 3 and found["second_opinion"]["judge"]["kept"]
        assert "the judge is kept as version 3" in opinion.note
        check_kept_judge(project, report, monkeypatch)
    finally:
        project.close()


def check_kept_judge(project, report, monkeypatch) -> None:
    """The judge a real run kept: safetensors only, listed beside its version with both APs,
    loaded offline and scoring pairs once its version is active and it is offered."""
    import socket

    from engine.store import version_rows
    from engine.training.judge_versions import load_judge

    folder = project.versions.judge_for(report.version_id)
    assert folder == report.folder.parent / "v3"
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    assert "model.safetensors" in files
    assert not [f for f in files if f.endswith(PICKLED_WEIGHTS)], files
    record = json.loads((folder / VERSION_FILE).read_text(encoding="utf-8"))
    assert record["second_opinion_of"] == report.version_id and record["version"] == 3

    listed = {v["id"]: v for v in project.versions.list()}
    assert 3 not in listed
    judge = listed[report.version_id]["second_opinion"]
    assert judge["id"] == 3 and judge["available"]
    assert judge["average_precision"] == pytest.approx(
        report.second_opinion.judge.average_precision, abs=1e-4)
    assert judge["version_average_precision"] == pytest.approx(
        report.after.average_precision, abs=1e-4)
    # Offered exactly when the held-out pairs show it above the new version.
    versus = report.second_opinion.versus_version
    assert judge["metrics"]["version_ap_change"] == versus.as_dict()
    assert judge["offered"] == (versus.conclusion == BETTER)

    def no_network(*args, **kwargs):
        raise AssertionError(f"a connection was attempted: {args}")

    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    monkeypatch.setattr(socket.socket, "connect", no_network)
    pairs = [("How do I learn Python?", "How do I learn Python?"),
             ("How do I learn Python?", "Why is the sky blue?")]
    loaded = score_pairs(load_judge(folder, "cpu"), pairs)
    assert loaded.shape == (2,) and all(0.0 <= x <= 1.0 for x in loaded)

    with pytest.raises(InputError, match="no second opinion"):   # v1 is active: no judge
        project.versions.second_opinion_scores(pairs)
    assert project.versions.activate(report.version_id).activated
    if not judge["offered"]:   # 46 questions, two steps: a few held-out pairs show little;
        with project.store.write() as conn:   # say the pairs showed the judge better
            version_rows.set_metrics(conn, 3, {**judge["metrics"], "version_ap_change": {
                **judge["metrics"]["version_ap_change"], "conclusion": BETTER}})
    assert project.versions.second_opinion()["id"] == 3
    scores = project.versions.second_opinion_scores(pairs)
    assert scores == pytest.approx(loaded.tolist(), abs=1e-5)
    with pytest.raises(InputError, match="second opinion of version"):
        project.versions.activate(3)
