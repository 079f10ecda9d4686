"""`cut_scope`: the verdicts the export applies against the cut, counted exactly, and said."""

from __future__ import annotations

import numpy as np

from engine.estimation.cut_scope import CutScope, cut_scope

IDS = np.array([2, 5, 7, 9, 11])
LABELS = np.array([0, 0, 1, 1, -1])      # 2 and 5 together, 7 and 9 together, 11 alone


def test_counts_the_verdicts_that_disagree_with_the_cut():
    given = [(2, 5, 0),      # split: together in the cut, called not duplicates
             (7, 9, 1),      # agrees
             (2, 7, 1),      # joined: apart in the cut, called duplicates
             (11, 30, 1),    # joined: neither... 30 is not in the graph, 11 in no cluster
             (5, 11, 0),     # agrees
             (9, 9, 1)]      # copies of one text: not a pair of texts
    scope = cut_scope(0.8, given, IDS, LABELS)
    assert (scope.verdicts, scope.split, scope.joined) == (5, 1, 2)
    assert scope.as_json() == {"figures_of": "the model's cut", "threshold": 0.8,
                               "verdicts": 5, "export_splits": 1, "export_joins": 2}


def test_words_name_the_cut_and_what_the_export_changes():
    assert "No pair has a verdict yet" in CutScope(0.75, 0, 0, 0).words()
    assert "none of them disagrees" in CutScope(0.75, 3, 0, 0).words()
    words = CutScope(0.75, 40, 1, 3).words()
    assert words.startswith("These figures are the model's own cut at 0.75, before any verdict.")
    assert "1 pair you called not duplicates is apart there" in words
    assert "3 pairs you called duplicates are together" in words
    assert cut_scope(0.5, [], IDS, LABELS) == CutScope(0.5, 0, 0, 0)
