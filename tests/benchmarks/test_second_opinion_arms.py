"""The second-opinion arms of ask_vs_random: silver comes from the training part's questions
only (never a held-out one, even as an exact copy under another id), through the product's
graph and candidate picking; the report shows the arms beside the plain ones."""

from __future__ import annotations

import numpy as np

from benchmarks.ask_vs_random import _key, present
from benchmarks.second_opinion_arms import (
    held_out_texts,
    project_vectors,
    quora_agreement,
    silver_project,
    silver_source,
)
from engine.progress import CancelToken, no_progress
from engine.text import norm_key
from engine.training.pairs import LabelledPair
from engine.training.silver import silver_candidates


def _pair(a: str, b: str, label: float, ka: str, kb: str) -> LabelledPair:
    return LabelledPair(a, b, label, key_a=f"id:{ka}", key_b=f"id:{kb}")


POOL = [_pair("How do I learn Python?", "What is the best way to learn Python?", 1, "1", "2"),
        _pair("How do I learn Python?", "Is Java hard?", 0, "1", "3"),
        # the same question as a held-out one, under another Quora id
        _pair("What is love?", "how do i learn python ", 0, "4", "5"),
        _pair("Why is the sky blue?", "What makes the sky blue?", 1, "6", "7")]
HELD = [_pair("What is  LOVE?", "Define love", 1, "8", "9")]


def test_the_project_holds_each_training_question_once_and_no_held_out_one():
    held = held_out_texts([*POOL, *HELD], POOL)
    assert sorted(held) == ["Define love", "What is  LOVE?"]
    project, where = silver_project(POOL, held)
    keys = [norm_key(t) for t in project.texts]
    assert len(keys) == len(set(keys))            # "how do i learn python " is text 0 again
    assert norm_key("What is love?") not in keys and project.left_out == 1
    assert project.text_ids([norm_key("Is Java hard?"), "unknown"]) == {
        norm_key("Is Java hard?"): keys.index(norm_key("Is Java hard?"))}
    assert [tuple(w) for w in where][:3] == [(0, 0), (0, 1), (1, 1)]


def test_silver_candidates_never_touch_a_held_out_question():
    rng = np.random.default_rng(0)
    pool = [_pair(f"question {i}", f"question {i + 1}", i % 2, str(i), str(i + 1))
            for i in range(0, 60, 2)]
    held = [f"Question {i}" for i in range(0, 60, 6)]     # copies of some training questions
    project, where = silver_project(pool, held)
    assert project.left_out == 10 and len(project.texts) == 50
    base = rng.normal(size=(1, 8))
    a = base + 0.3 * rng.normal(size=(len(pool), 8))
    b = base + 0.3 * rng.normal(size=(len(pool), 8))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    vectors = project_vectors(where, a, b)
    assert project.texts[0] == "question 1" and np.allclose(vectors[0], b[0])
    assert project.texts[1] == "question 2" and np.allclose(vectors[1], a[1])
    source = silver_source(project, vectors, threshold=0.5)
    graph = source.graph(no_progress, CancelToken())
    found = silver_candidates(graph, source.threshold, band=0.99, limit=10_000)
    assert found                                              # the graph is the product's
    touched = {project.texts[i] for c in found for i in (c.id_a, c.id_b)}
    assert not {norm_key(t) for t in touched} & {norm_key(t) for t in held}


def test_silver_agreement_counts_only_the_pairs_quora_labels():
    silver = [LabelledPair("what is love", "define love", 0.9),     # not a pool pair
              LabelledPair("Why is the sky blue?", "what makes the sky blue?", 0.8),
              LabelledPair("Is Java hard?", "How do I learn Python?", 0.7)]
    assert quora_agreement(silver, POOL) == {"pairs": 2, "agreement": 50.0}


def _run(kind: str, seed: int, ap: float, second: int = 0, pairs: int = 1000) -> dict:
    run = {"kind": kind, "strategy": "uncertain" if kind == "ask" else None,
           "pairs": pairs, "seed": seed, "measured_on": "test", "average_precision": ap,
           "f1": 70.0, "f1_at_calibrated": 70.0, "duplicates": 300,
           "calibrated_threshold": 0.8, "training_seconds": 90.0}
    if kind == "ask":
        run["round"] = 250
    if second:
        run.update({"second_opinion": second, "silver_band": 0.15, "judge_epochs": 1,
                    "judge": {"average_precision": 85.0}, "silver_pairs": second,
                    "silver_duplicates": second // 4, "silver_labelled": second,
                    "silver_quora": {"pairs": 10, "agreement": 80.0},
                    "judge_training_seconds": 60.0, "judge_measuring_seconds": 20.0,
                    "graph_seconds": 3.0, "silver_labelling_seconds": 2 * second / 100,
                    "load_before_judge": "2.00"})
    return run


def test_a_second_opinion_is_its_own_arm_beside_the_plain_one():
    plain, silver = _run("ask", 0, 81.0), _run("ask", 0, 83.0, second=2000)
    assert _key(plain) != _key(silver)
    assert _key(plain) == _key({**plain, "second_opinion": 0, "silver_band": 0.15})
    runs = [r for seed in (0, 1) for r in (
        _run("ask", seed, 81.0), _run("ask", seed, 83.5, second=2000),
        _run("random", seed, 80.0), _run("random", seed, 82.0, second=2000),
        _run("random", seed, 83.0, pairs=4000))]
    result = {"product_strategy": "uncertain", "runs": runs,
              "before": {"test": {"average_precision": 77.0}}}
    shown = present(result, {"ask_vs_random": {"command": "c", "result": result}})
    plain_goal, silver_goal = shown["headline"][0], shown["headline"][-1]
    assert plain_goal["duplens"].startswith("+4.00") and plain_goal["met"] is False
    assert "second opinion (2,000 silver" in silver_goal["figure"]
    assert silver_goal["duplens"].startswith("+6.50") and silver_goal["met"] is True
    table = next(t for t in shown["tables"] if t["title"].startswith("Second opinion"))
    by_arm = {row[0]: row for row in table["rows"]}
    asked = by_arm["ask: uncertain, rounds of 250 (the product's) + second opinion "
                   "(2,000 silver, band 0.15)"]
    assert asked[3:6] == ["85.00", "81.00", "83.50"]
    assert asked[11] == "20"                                   # s per 1,000 silver
    assert len(table["rows"]) == 2


def test_runs_merge_across_a_rounding_of_the_default_models_ap_only():
    from benchmarks.ask_vs_random import same_setup

    old = {"split_seed": 0, "pool_pairs": 11749,
           "default_model_ap": {"validation": 76.4148, "test": 76.8267}}
    assert same_setup(old, {**old, "default_model_ap": {"validation": 76.4148,
                                                        "test": 76.8266}})
    assert not same_setup(old, {**old, "default_model_ap": {"validation": 76.4148,
                                                            "test": 77.0}})
    assert not same_setup(old, {**old, "pool_pairs": 600})
    assert not same_setup(None, old)


def test_a_judge_worse_than_the_default_model_is_said_so():
    runs = [_run("random", 0, 80.0), _run("random", 0, 76.5, second=2000)]
    runs[1]["judge"] = {"average_precision": 56.0}
    result = {"product_strategy": "uncertain", "runs": runs,
              "before": {"test": {"average_precision": 77.0}}}
    notes = present(result, {"ask_vs_random": {"command": "c", "result": result}})["notes"]
    assert any("worse than the default model (judge AP 56.00–56.00 against 77.00)" in n
               and "500 of 2,000 pairs duplicates" in n for n in notes)
