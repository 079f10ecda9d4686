"""`SecondOpinionSummary`: the results page's words on a run's second opinion.

What a user needs to judge the judge: its average precision on the held-out pairs beside the
model in use's (the same pairs, so the two read side by side), whether the pairs show it
ranks them better (the paired interval the run computed, `SecondOpinion.change`, the same
rule the page applies to the new model: "better" only when the interval excludes 0; a
judge no better than the model teaches it little), and the silver it labelled. The new
model's own gain stays in the page's summary line above, with its interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel, QWidget

from engine.training.ap_change import BETTER, NO_CHANGE, WORSE, interval_text

if TYPE_CHECKING:
    from engine.training.ap_change import APChange
    from engine.training.second_opinion import SecondOpinion
    from engine.training.session import FinetuneReport


class SecondOpinionSummary(QLabel):
    """One paragraph; hidden for a run without a second opinion."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.hide()

    def show_report(self, report: FinetuneReport, change: APChange | None) -> None:
        opinion = report.second_opinion
        self.setVisible(opinion is not None)
        if opinion is None:
            self.setText("")
            return
        figures = judge_figures(opinion.bi_encoder_ap, opinion.judge.average_precision,
                                change)
        self.setText(f"<b>Second opinion</b>: the judge, trained on your "
                     f"{opinion.judge_pairs:,} training answers, {judge_words(change)}: "
                     f"{figures}. {silver_words(report)}")


def judge_words(change: APChange | None) -> str:
    """What the held-out pairs let one say of the judge against the model in use."""
    if change is None:
        return "was measured on the held-out pairs"
    if change.conclusion == BETTER:
        return "ranks the held-out pairs <b>better</b> than the model in use"
    if change.conclusion == WORSE:
        return ("ranks the held-out pairs <b>worse</b> than the model in use, so its pairs "
                "teach the model little")
    if change.conclusion == NO_CHANGE:
        return "ranks the held-out pairs as well as the model in use"
    return ("was measured on too few held-out pairs to tell whether it ranks them better "
            "than the model in use")


def judge_figures(model_ap: float, judge_ap: float, change: APChange | None) -> str:
    """Both APs on the same held-out pairs, the difference and its interval."""
    figures = (f"average precision <b>{judge_ap:.2f}</b> for the judge, {model_ap:.2f} for "
               f"the model in use")
    if change is None:
        return figures
    return f"{figures} ({interval_text(change)})"


def silver_words(report: FinetuneReport) -> str:
    """What the judge labelled, and what the model then learned from."""
    opinion = report.second_opinion
    assert opinion is not None
    silver = len(opinion.silver)
    around = (f"within ±{opinion.band:.2f} of the model in use's threshold "
              f"({opinion.threshold:.2f})")
    if getattr(opinion, "withheld", ""):
        return (f"It labelled no pairs: your held-out pairs do not show it ranking them "
                f"better than the model in use, so it had nothing sure to teach it, and the "
                f"model learned from your answers alone. {kept_words(opinion)}")
    if not silver:
        return (f"It found no pair you had not judged {around} to label (none may touch a "
                f"held-out question), so the model learned from your answers alone. "
                f"{kept_words(opinion)}")
    duplicates = opinion.silver_duplicates
    return (f"It labelled <b>{silver:,} pairs</b> {around}, of {opinion.limit:,} asked for: "
            f"{duplicates:,} duplicate, {silver - duplicates:,} not duplicate (none touches "
            f"a held-out question). The model learned from them and your "
            f"{len(report.split.train):,} answers. {kept_words(opinion)}")


def kept_words(opinion: SecondOpinion) -> str:
    """Whether the run kept the judge as a version. Read with getattr: a run made before
    judges were kept has no such fields, and its judge was discarded."""
    kept_as = getattr(opinion, "kept_as", None)
    if kept_as is not None:
        return f"The judge is kept as version {kept_as}, beside the new one."
    why = getattr(opinion, "not_kept", "")
    return f"The judge itself was not kept{': ' + why if why else ''}."
