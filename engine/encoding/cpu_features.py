"""What this CPU can compute fast: the int8 kernel family for quantised exports, and whether
it has bfloat16 units for the openvino-bf16 backend.

Read from Linux's /proc/cpuinfo, which costs nothing (the window asks while it fills its
settings). Elsewhere no flags are known: int8 exports take the AVX2 kernels, which every
x86-64 CPU Duplens runs on has, and whether an x86-64 CPU has bf16 units is asked of
OpenVINO's CPU plugin (its optimisation capabilities; about 0.2 s once, for importing
OpenVINO). bf16 is offered only where the units are: without them OpenVINO would emulate
it, slower than float32. ARM CPUs are not offered bf16: the quality gate measured it on
x86-64 kernels only.
"""

from __future__ import annotations

import functools
import importlib.util
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
    """Whether this CPU computes bfloat16 natively (see `BF16_FLAGS`): Linux's flags, else
    (Windows, macOS) OpenVINO's word for an x86-64 CPU."""
    flags = cpu_flags()
    if flags:
        return bool(BF16_FLAGS & flags)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return "BF16" in openvino_capabilities()


@functools.cache
def openvino_capabilities() -> frozenset[str]:
    """OpenVINO's CPU plugin's OPTIMIZATION_CAPABILITIES ("BF16", "INT8", ...); empty
    where OpenVINO is missing or cannot say."""
    if importlib.util.find_spec("openvino") is None:
        return frozenset()
    import engine.offline  # noqa: F401 - no telemetry from importing OpenVINO

    try:
        import openvino as ov

        found = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception:  # noqa: BLE001 - no answer is "no bf16": torch stays the default
        return frozenset()
    return frozenset(str(c) for c in found)
