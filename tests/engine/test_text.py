from engine.text import join_cells, norm_key, normalise


def test_normalise_ignores_case_spacing_and_unicode_forms():
    assert normalise("  How do I   learn\tPYTHON? ") == "how do i learn python?"
    assert normalise("ﬁle") == normalise("file")  # NFKC folds the ligature
    assert norm_key("Café  au lait") == norm_key("café au lait")


def test_normalise_keeps_punctuation_and_word_order():
    assert norm_key("dog bites man") != norm_key("man bites dog")
    assert norm_key("Is it?") != norm_key("Is it.")


def test_join_cells_skips_blank_cells_and_strips():
    assert join_cells([" Title ", "", "  ", "Body text"]) == "Title\nBody text"
    assert join_cells(["", " "]) == ""
