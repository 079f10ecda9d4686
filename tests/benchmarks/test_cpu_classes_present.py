"""benchmarks/cpu_classes.py's page words: each class named from the CPU it ran on."""

from __future__ import annotations

from benchmarks.cpu_classes import class_label


def test_the_bf16_class_names_the_units_the_recorded_cpu_has():
    """AMX and AVX512-BF16 alone are different bf16 units (Sapphire Rapids against Zen 4 and
    5), so the label says which ran, from the flags the run recorded."""
    xeon = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"]
    zen = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16"]
    assert class_label("bf16", xeon) == "bf16 units (AMX, AVX512-BF16): this CPU as it is"
    assert class_label("bf16", zen) == "bf16 units (AVX512-BF16, no AMX): this CPU as it is"
    assert class_label("avx2", zen) == "AVX2 only (capped to AVX2)"
