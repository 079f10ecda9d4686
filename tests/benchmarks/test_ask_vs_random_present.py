"""The asked-against-random summary names the command that measured its figures: the test
split's runs, not whichever validation run was merged into the file last."""

from __future__ import annotations

from benchmarks.ask_vs_random import present

TEST_COMMAND = "python -m benchmarks.ask_vs_random --on test --train-seeds 0 1 --merge"
LAST_COMMAND = "python -m benchmarks.ask_vs_random --on validation --strategies band --merge"


def _run(kind: str, pairs: int, seed: int, on: str, ap: float, **more) -> dict:
    run = {"kind": kind, "strategy": "uncertain" if kind == "ask" else None, "pairs": pairs,
           "seed": seed, "measured_on": on, "average_precision": ap, "f1": 70.0,
           "f1_at_calibrated": 70.0, "duplicates": pairs // 3,
           "calibrated_threshold": 0.8, "training_seconds": 60.0}
    if kind == "ask":
        run["round"] = 250
    return {**run, **more}


def _file(runs: list[dict]) -> tuple[dict, dict]:
    result = {"product_strategy": "uncertain", "runs": runs,
              "before": {"test": {"average_precision": 76.0},
                         "validation": {"average_precision": 75.0}}}
    top = {"command": LAST_COMMAND, "earlier_commands": [TEST_COMMAND], "result": result}
    return result, {"ask_vs_random": top}


def _test_runs(**more) -> list[dict]:
    return [_run(kind, pairs, seed, "test", ap, **more)
            for seed in (0, 1)
            for kind, pairs, ap in (("ask", 1000, 81.0), ("random", 1000, 80.0),
                                    ("random", 4000, 82.0))]


def test_runs_from_before_commands_were_recorded_name_the_command_of_their_split():
    result, results = _file([*_test_runs(), _run("ask", 1000, 0, "validation", 79.0)])
    headline = present(result, results)["headline"]
    assert headline and {h["command"] for h in headline} == {TEST_COMMAND}


def test_a_run_that_records_its_command_is_named_by_it():
    own = "python -m benchmarks.ask_vs_random --on test --train-seeds 0 1 --round 500"
    result, results = _file(_test_runs(command=own))
    assert {h["command"] for h in present(result, results)["headline"]} == {own}
