"""The fine-tuning wizard's results page says "better" only when the held-out pairs show
it (`engine.training.ap_change`), else how many more pairs to label; with a second opinion
it shows the judge's AP beside the model in use's, with the same interval. A made-up report:
no model, no training, so this runs in the quick suite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal

from desktop_app.controllers.finetune_controller import RunState
from desktop_app.views.finetune_run import ResultsPage
from engine.training.ap_change import ap_change
from engine.training.held_out import metrics_from_scores
from engine.training.options import TrainingOptions
from engine.training.pairs import LabelledPair, PairSummary
from engine.training.second_opinion import SecondOpinion
from engine.training.session import FinetuneReport
from engine.training.split import PairSplit
from engine.training.trainer import TrainResult


class Controller(QObject):
    """What the page reads of a `FinetuneController`."""

    stateChanged = Signal(object, str)

    def __init__(self) -> None:
        super().__init__()
        self.state = RunState.TRAINED
        self.report = None
        self.judge_change = None


def report(before: np.ndarray, after: np.ndarray, labels: np.ndarray,
           opinion: SecondOpinion | None = None) -> FinetuneReport:
    held = [LabelledPair(f"question {i}", f"other question {i}", float(label))
            for i, label in enumerate(labels)]
    split = PairSplit(train=list(held), held_out=held, requested=0.5, held_out_fraction=0.5,
                      components=len(held), largest_component=1, dropped=[])
    positives = int(labels.sum())
    summary = PairSummary(2 * len(held), 2 * positives, 2 * (len(held) - positives), 0,
                          4 * len(held), [])
    train = TrainResult(Path("model"), "cosine", [(1, 0.5)], 3, 1.0, len(held), 12,
                        len(held), "cpu")
    return FinetuneReport(
        2, "all-MiniLM-L6-v2 v2", Path("v2"), "q.duplens.models/v2", 1, "cosine", summary,
        split, metrics_from_scores(before, labels), metrics_from_scores(after, labels),
        ap_change(before, after, labels, held_out_share=0.5), [], 0, 0, train, "0" * 64,
        TrainingOptions(), [], second_opinion=opinion)


def shown(qtbot, finetune_report: FinetuneReport) -> str:
    page = ResultsPage(Controller())
    qtbot.addWidget(page)
    page.show_report(finetune_report)
    return page.summary.text()


def test_the_judge_is_shown_beside_the_model_in_use_with_its_interval(qtbot):
    rng = np.random.default_rng(5)
    labels = rng.random(400) < 0.4
    before = rng.random(400) + 0.3 * labels
    after = before + 0.1 * labels
    judge_scores = 1 / (1 + np.exp(-(rng.normal(0, 1, 400) + 3 * labels)))  # probabilities
    silver = [LabelledPair(f"a {i}", f"b {i}", p, key_a=f"text:{i}", key_b=f"text:{i + 50}")
              for i, p in enumerate([0.9, 0.8, 0.1, 0.3, 0.6])]
    made = report(before, after, labels)
    opinion = SecondOpinion(metrics_from_scores(judge_scores, labels),
                            made.before.average_precision, 400, 25, 3.0, "cpu", 0.81, 0.15,
                            2000, 12, silver)
    made = report(before, after, labels, opinion)
    controller = Controller()
    controller.judge_change = ap_change(before, judge_scores, labels, held_out_share=0.5)
    page = ResultsPage(controller)
    qtbot.addWidget(page)
    page.show_report(made)
    change = controller.judge_change
    assert change.low > 0  # the judge ranks these pairs clearly better
    text = page.opinion.text()
    assert text == (
        f"<b>Second opinion</b>: the judge, trained on your 400 training answers, ranks the "
        f"held-out pairs <b>better</b> than the model in use: average precision "
        f"<b>{opinion.judge.average_precision:.2f}</b> for the judge, "
        f"{made.before.average_precision:.2f} for the model in use ({change.change:+.2f} "
        f"points, 95% interval {change.low:+.2f} to {change.high:+.2f}). It labelled "
        f"<b>5 pairs</b> within ±0.15 of the model in use's threshold (0.81), of 2,000 asked "
        f"for: 3 duplicate, 2 not duplicate (none touches a held-out question). The model "
        f"learned from them and your 400 answers. The judge itself was not kept.")
    assert "and 5 the judge labelled" in page.subTitle()
    xs, _ = page.pr_plot.judge.getData()
    assert len(xs) == len(opinion.judge.curve)

    # Without a second opinion the paragraph and the judge's curve are gone.
    page.show_report(report(before, after, labels))
    xs, _ = page.pr_plot.judge.getData()
    assert page.opinion.isHidden() and (xs is None or len(xs) == 0)


def test_a_judge_no_better_than_the_model_is_said_to_have_labelled_nothing(qtbot):
    """A judge that ranks the held-out pairs worse than the model labels no silver (the
    engine's guard): the paragraph says so and why, not "found no pair"."""
    rng = np.random.default_rng(6)
    labels = rng.random(300) < 0.4
    before = rng.random(300) + 0.5 * labels
    after = before + 0.05 * labels
    judge_scores = rng.random(300)                       # reads nothing
    made = report(before, after, labels)
    judge = metrics_from_scores(judge_scores, labels)
    assert judge.average_precision < made.before.average_precision
    opinion = SecondOpinion(judge, made.before.average_precision, 300, 20, 2.0, "cpu", 0.8,
                            0.15, 2000, 10, [], withheld="the held-out pairs do not show "
                            "the judge better than the model")
    page = ResultsPage(Controller())
    qtbot.addWidget(page)
    page.show_report(report(before, after, labels, opinion))
    text = page.opinion.text()
    assert "It labelled no pairs: your held-out pairs do not show it ranking them better " \
           "than the model in use" in text and "learned from your answers alone" in text
    assert "found no pair" not in text


def test_a_small_change_on_few_held_out_pairs_is_not_called_better(qtbot):
    rng = np.random.default_rng(3)
    labels = rng.random(38) < 0.4
    labels[:2] = [True, False]
    before = rng.random(38) + 0.5 * labels
    after = before + rng.normal(0, 0.05, 38)
    made = report(before, after, labels)
    change = made.ap_change
    assert change.after != change.before and change.more_pairs > 0
    assert not made.improved
    text = shown(qtbot, made)
    assert text == (
        f"<b>Not enough labelled pairs to tell whether the new model ranks better or worse "
        f"(38 held out); label about {change.more_pairs:,} more</b>: average precision "
        f"{change.before:.2f} → {change.after:.2f} ({change.change:+.2f} points, 95% "
        f"interval {change.low:+.2f} to {change.high:+.2f}); best F1 {made.before.f1:.2f} → "
        f"{made.after.f1:.2f}.")
    assert "better</b>" not in text


def test_a_clearly_better_model_on_many_held_out_pairs_is_called_better(qtbot):
    rng = np.random.default_rng(4)
    labels = rng.random(600) < 0.4
    before = rng.random(600) + 0.3 * labels
    after = before + 0.4 * labels
    made = report(before, after, labels)
    assert made.improved and made.ap_change.low > 0
    text = shown(qtbot, made)
    assert text.startswith("<b>The new model ranks the held-out pairs better</b>: average "
                           f"precision {made.before.average_precision:.2f} → "
                           f"{made.after.average_precision:.2f} (+")
    assert "Not enough" not in text
