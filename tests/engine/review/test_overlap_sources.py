"""The overlap's words and stop words are scikit-learn's without importing scikit-learn
(engine/review/overlap.py): checked here against scikit-learn itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.review import overlap as ov

ROOT = Path(__file__).resolve().parents[3]


def test_stop_words_are_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    assert ov._english_stop_words() == ENGLISH_STOP_WORDS
    assert ov._stop_words() == ENGLISH_STOP_WORDS


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
       | st.sampled_from(["Vitamin D or B12?", "What's the İstanbul ẞtraße C++ / R", "ǅemal",
                          "naïve café", "x_1 and 2nd", "ΣΑΣ σας", ""]))
def test_words_are_scikit_learns_tokens(text):
    from sklearn.feature_extraction.text import CountVectorizer

    analyser = CountVectorizer(token_pattern=ov._TOKEN_PATTERN).build_analyzer()
    # The overlap writes "n't" as "not" and drops what is left of other contractions
    # ("what's" -> "what"), then cuts.
    assert ov.words(text) == analyser(ov._plain(text))


def test_overlap_does_not_import_scikit_learn():
    # Nor torch: the synonyms' word vectors are read from the model's file, not run.
    code = ("import sys, json; from engine.review.overlap import overlap; "
            "o = overlap('How do I add two numbers?', 'How do I multiply two numbers?'); "
            "print(json.dumps([o.differing, 'sklearn' in sys.modules or 'torch' in "
            "sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=True)
    differing, imported = json.loads(out.stdout)
    assert differing == ["add", "multiply"] and imported is False
