"""The import benchmark's report (benchmarks/import_throughput.py): the goal is judged on the
whole command, and the least time the encoder and the inserts need is derived from their
own measured times, not typed in."""

from __future__ import annotations

from benchmarks import import_throughput


def result(inserts: float | None) -> dict:
    stages = {"backend": "openvino-bf16", "torch_free": True, "model_load_s": 0.1,
              "parse_and_store_s": 1.7, "encode_store_index_save_s": 65.7, "total_s": 67.5,
              "encoder_alone_s": 46.0}
    if inserts is not None:
        stages["inserts_alone_s"] = inserts
    return {"backend": "openvino-bf16", "batch_size": 64, "bare_batches": [32, 64],
            "torch_threads": 2, "first_import_256_rows_s": 9.9,
            "second_import_256_rows_s": 2.0,
            "sizes": [{"rows": 50_000, "bare_encode_s": 140.0, "bare_batch": 64,
                       "bare_rows_per_s": 357.0, "command_s": 67.7,
                       "command_rows_per_s": 738.6, "ratio": 140.0 / 67.7,
                       "stages": stages}]}


def test_the_floor_is_the_encoder_plus_half_the_inserts() -> None:
    shown = import_throughput.present(result(inserts=28.0))
    assert shown["headline"][0]["met"] is False
    note = shown["notes"][-1]
    assert "need 60.0 s of the two cores" in note       # 46.0 + 28.0 / 2
    assert "the goal's 56.0 s" in note                  # 140.0 / 2.5
    assert shown["tables"][0]["rows"][0][8] == 28.0


def test_older_results_without_the_inserts_keep_their_note() -> None:
    shown = import_throughput.present(result(inserts=None))
    assert "the other 21.7 s" in shown["notes"][-1]
    assert shown["tables"][0]["rows"][0][8] == "–"
