"""Reviewing duplicate clusters: the analyst's verdicts, undo, comparisons and the numbers
the review screen plots. Qt-free, so every figure the window shows is testable here."""
