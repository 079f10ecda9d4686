"""Which benchmarks the suite has, in report order, and how each is run.

Its own module so that the runner (`benchmarks.run`) and the report (`benchmarks.report`)
both read it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    quick: bool = True            # part of --quick (always part of the full run)
    runner: str | None = None     # "module:function" when not benchmarks.NAME:run


REGISTRY = (
    Benchmark("quality", "Quality of the bundled model"),
    Benchmark("import_throughput", "Import throughput"),
    Benchmark("import_memory", "Import memory (rows only, growing CSVs)"),
    Benchmark("export_rows", "Export of every row (1M rows)"),
    Benchmark("backends", "Fast CPU path (ONNX, OpenVINO) and the quality gate"),
    Benchmark("cpu_classes", "The default backend of each CPU class", quick=False),
    Benchmark("int8_recipes", "Int8 recipes against the gate's search recall", quick=False),
    Benchmark("dynamic_int8_choice", "openvino-int8-dynamic's recipe, chosen on the gate's "
              "choice data", quick=False),
    Benchmark("query_latency", "Live query latency"),
    Benchmark("cli_latency", "Command-line latency"),
    Benchmark("mining", "Duplicate mining"),
    Benchmark("mining_1m", "Duplicate mining at 1M items", quick=False),
    Benchmark("scale_1m", "Scale and footprint (1M items)"),
    Benchmark("team_index", "Team projects on PostgreSQL: where the index lives"),
    Benchmark("index_check", "Checking a saved index before hnswlib loads it"),
    Benchmark("ef_construction", "The index build's ef_construction: a 1M check", quick=False),
    Benchmark("gui_stalls", "The window on a slow team server: GUI-thread stalls"),
    Benchmark("gpu_import", "GPU import"),
    Benchmark("gpu_gate", "fp16 on CUDA against the quality gate"),
    Benchmark("ray_encode", "Encoding on Ray"),
    Benchmark("match_throughput", "Checking a file against a project"),
    Benchmark("match_default", "Checking a file at the default settings"),
    Benchmark("reencode", "Re-encoding with a fine-tuned version (\"Use this model\")"),
    Benchmark("weekly", "Week after week: stable cluster ids, incremental clusters"),
    Benchmark("finetune_quora", "Fine-tuning objectives on Quora pairs", quick=False,
              runner="benchmarks.external:finetune"),
    Benchmark("window_latency", "The window", quick=False, runner="benchmarks.external:window"),
    Benchmark("judge_choice", "The second opinion's judge recipe, chosen on validation",
              quick=False),
    Benchmark("ask_vs_random", "Asked pairs against random pairs", quick=False,
              runner="benchmarks.ask_vs_random:suite"),
    Benchmark("estimate_choice", "The estimate's interval ends, chosen on validation populations",
              quick=False),
    Benchmark("estimate", "Quality estimate: intervals from a few hundred answers"),
    Benchmark("default_threshold", "The default threshold, chosen on data"),
    Benchmark("meaning_flags", "The ⚠ beside a close pair: non-duplicates against duplicates"),
    Benchmark("documents", "Documents read whole: near-duplicate documents of any length"),
    Benchmark("document_revisions", "Real near-duplicates: Django's documentation pages "
              "in two releases"),
    Benchmark("document_scale", "Documents at scale: imports of thousands of long documents"),
    Benchmark("document_scale_resumed", "Documents at scale, 100,000: one import stopped "
              "and resumed in sittings", quick=False),
    Benchmark("document_search", "Search in documents: a passage from a document's middle"),
    Benchmark("close_up_choice", "How many hits a short query reads close up, chosen on "
              "validation queries", quick=False),
    Benchmark("check_documents", "Check a file against documents: rows from documents' "
              "middles, with their truth key"),
    Benchmark("rarest_words_choice", "How many of a query's rarest words the word index "
              "ranks by, chosen on validation queries", quick=False),
    Benchmark("word_ranking_choice", "How a short query's words name documents, on SQLite "
              "and PostgreSQL, chosen on validation queries", quick=False),
    Benchmark("word_ranking_scale", "How a short query's words name documents at 10,000 and "
              "100,000 documents, on SQLite and PostgreSQL", quick=False),
)
BY_NAME = {b.name: b for b in REGISTRY}
