"""A copied query is shown exactly where it lies; anything else keeps its stretch."""

from engine.documents.verbatim import verbatim_span

TEXT = ("Unit tests grow with the code. It is time to set up proper TestCase classes, "
        "one per module, and to run them on every commit. Nobody regrets it later.")


def test_a_copied_sentence_is_found_whole_with_its_punctuation():
    query = "It is time to set up proper TestCase classes, one per module"
    start = TEXT.index(query)
    stretch = (TEXT.index("time"), TEXT.index("module") + len("module") + 10)  # begins late
    assert verbatim_span(TEXT, query, stretch) == (start, start + len(query))
    # Case and spacing aside; a full stop the text does not have there is left out, and
    # one it has is kept.
    a, b = verbatim_span(TEXT, "  it is TIME to set up   proper testcase classes.", stretch)
    assert TEXT[a:b] == "It is time to set up proper TestCase classes"
    near_end = (TEXT.index("every"), len(TEXT) - 6)
    assert verbatim_span(TEXT, "Nobody regrets it later.", near_end) \
        == (TEXT.index("Nobody"), len(TEXT))


def test_a_reworded_or_short_query_or_one_far_away_is_not_placed():
    stretch = (TEXT.index("It is"), TEXT.index("commit"))
    assert verbatim_span(TEXT, "it is time to write proper TestCase classes", stretch) is None
    assert verbatim_span(TEXT, "proper TestCase", stretch) is None        # two words
    far = "x " * 400 + TEXT
    assert verbatim_span(far, "Nobody regrets it later", (0, 50)) is None
