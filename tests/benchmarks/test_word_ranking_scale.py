"""word_ranking_scale's arms on a real store of each dialect: texts stored and indexed by
their words, each query's document named, the seconds recorded, and PostgreSQL's count cap
put back after the uncapped arm."""

from __future__ import annotations

import csv

from benchmarks import word_ranking_scale as wrs
from engine.store import text_words

TEXTS = {
    "lighthouse": "The keeper climbed the spiral stairs of the lighthouse each evening to "
                  "light the great lamp above the harbour.",
    "orchard": "Every autumn the orchard gave apples and pears, and the cider press ran "
               "from dawn until the barn was full.",
    "glacier": "A glacier moves slowly down the valley, carving the rock and leaving "
               "moraines where its ice finally melts.",
}
SETS = {"typed": [{"text": "the cider press ran from dawn", "truth": ["orchard"]},
                  {"text": "carving the rock glacier valley", "truth": ["glacier"]}],
        "a word changed": [{"text": "the keeper climbed the spiral ladder",
                            "truth": ["lighthouse"]}]}


def test_each_query_names_its_document_and_the_cap_is_put_back(store_location, tmp_path):
    table = tmp_path / "documents.csv"
    with table.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("id", "text"), *TEXTS.items()])
    cap = text_words.COUNTED_AT_MOST
    arms = wrs._arms("dialect", store_location, table, SETS, exact=True)
    assert list(arms) == ["dialect", "dialect, counts exact"]
    assert cap == text_words.COUNTED_AT_MOST
    for arm in arms.values():
        assert arm["index_seconds"] >= 0
        assert {name: figures["named"] for name, figures in arm["sets"].items()} == {
            "typed": 1.0, "a word changed": 1.0}
        assert wrs.mean_share(arm) == 1.0
