"""A project store shared by the examples of each hostile-file test module."""

from __future__ import annotations

import pytest

from engine.store.database import Store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store per module: creating one takes ~0.1 s, and property tests import hundreds
    of files. Imports never collide: each file's rows become a source of their own, and
    an identical file is recognised as already imported."""
    opened = Store.open(tmp_path_factory.mktemp("store") / "fuzz.duplens", create=True)
    yield opened
    opened.close()
