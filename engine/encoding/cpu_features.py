"""What this CPU can compute fast: the int8 kernel family for quantised exports, and whether
it has bfloat16 units for the openvino-bf16 backend.

Read from Linux's /proc/cpuinfo, which costs nothing (the window asks while it fills its
settings). Elsewhere no flags are known: int8 exports take the AVX2 kernels, which every
x86-64 CPU Duplens runs on has, and bf16 is not offered, since without the units OpenVINO
would emulate it, slower than float32.
"""

from __future__ import annotations

import platform

# Flags of the units that compute bfloat16 matrix products natively: AVX512-BF16 (Intel
# Cooper Lake and later Xeons, AMD Zen 4 and later) and AMX (Intel Sapphire Rapids and later).
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags() -> set[str]:
    """The CPU feature flags Linux reports (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_isa() -> str:
    """The int8 kernel family this CPU runs best: "avx512_vnni", "avx512", "avx2" or "arm64"."""
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    flags = cpu_flags()
    if "avx512_vnni" in flags or "avx_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags and "avx512bw" in flags:
        return "avx512"
    return "avx2"


def has_bf16_units() -> bool:
    """Whether this CPU computes bfloat16 natively (see `BF16_FLAGS`)."""
    return bool(BF16_FLAGS & cpu_flags())
