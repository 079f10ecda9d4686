"""What this CPU can compute fast: its class (`cpu_class`, which the default backend is
chosen by), the int8 kernel family for quantised exports, and whether it has bfloat16 units
for the openvino-bf16 backend.

bfloat16 units come in two kinds that the default must tell apart: AMX tiles (Intel Sapphire
Rapids and later) and AVX512-BF16 alone (AMD Zen 4 and 5; Intel Cooper Lake; an AMX Xeon in a
virtual machine or kernel that does not enable AMX). The same openvino-bf16 model was
measured at 2.18x plain sentence-transformers on an AMX Xeon, 2.85x on a Zen 5, and slower
than torch on an Intel Xeon whose AMX was not enabled (`benchmarks/cpu_classes.py`), so each
kind is its own class.

The flags are those the kernels may use: a cap on oneDNN's instruction set
(`ONEDNN_MAX_CPU_ISA`, which OpenVINO's CPU plugin and torch's oneDNN obey too) takes away
what it forbids, so a computer capped to AVX2 is an AVX2 computer to Duplens as it is to
the kernels (and the benchmark of CPU classes measures each class that way).

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
import os
import platform

# Flags of the units that compute bfloat16 matrix products natively: AVX512-BF16 (Intel
# Cooper Lake and later Xeons, AMD Zen 4 and later) and AMX (Intel Sapphire Rapids and later).
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# Flags of the units that compute int8 dot products natively (VNNI, AMX-INT8).
INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
_AVX512 = ("avx512", "amx")
# What each oneDNN cap forbids (its names: docs of ONEDNN_MAX_CPU_ISA), as flag prefixes.
_CAP_FORBIDS: dict[str, tuple[str, ...]] = {
    "SSE41": (*_AVX512, "avx", "fma"),
    "AVX": (*_AVX512, "avx2", "avx_vnni", "fma"),
    "AVX2": (*_AVX512, "avx_vnni"),
    "AVX2_VNNI": _AVX512,
    "AVX2_VNNI_2": _AVX512,
    "AVX512_CORE": ("avx512_vnni", "avx512_bf16", "avx512_fp16", "amx", "avx_vnni"),
    "AVX512_CORE_VNNI": ("avx512_bf16", "avx512_fp16", "amx"),
    "AVX512_CORE_BF16": ("avx512_fp16", "amx"),
    "AVX512_CORE_FP16": ("amx",),
}
AMX_FLAGS = frozenset({"amx_bf16"})
# The classes Duplens picks a default backend for (`backends.CPU_CLASS_DEFAULTS`).
CPU_CLASSES = ("amx", "bf16", "int8", "avx2", "arm64", "older")


def cpu_flags() -> set[str]:
    """The CPU feature flags Linux reports (empty elsewhere), less those a cap on oneDNN's
    instruction set forbids (`isa_cap`)."""
    forbids = _CAP_FORBIDS.get(isa_cap() or "", ())
    return {f for f in _linux_flags() if not f.startswith(forbids)}


def _linux_flags() -> set[str]:
    """/proc/cpuinfo's flags line (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def isa_cap() -> str | None:
    """The cap set on oneDNN's instruction set (`ONEDNN_MAX_CPU_ISA`, or its older name
    `DNNL_MAX_CPU_ISA`), upper-cased; None when none is set ("ALL" is none)."""
    cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "")
    cap = cap.strip().upper()
    return cap if cap and cap != "ALL" else None


def cpu_class() -> str:
    """The class of this CPU that picks the default backend: "amx" (AMX bfloat16 tiles),
    "bf16" (AVX512-BF16 units, no AMX), "int8" (int8 dot-product units, no bf16), "avx2"
    (neither), "arm64", or "older" (an x86-64 CPU without AVX2, or one whose flags cannot be
    read and OpenVINO cannot say)."""
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    flags = cpu_flags()
    if flags:
        return class_of_flags(flags)
    if has_bf16_units():
        # No flags to read (Windows, macOS) and OpenVINO says bf16, which it says of both
        # kinds. AMD has no AMX; an Intel CPU with bf16 units outside a Linux server is a
        # Xeon W or Xeon Scalable of Sapphire Rapids or later, whose AMX Windows enables
        # (Cooper Lake, the one Intel CPU with AVX512-BF16 alone, is a 4- and 8-socket
        # server part). A guess, said as one by `backend_choice.why_default`.
        return "amx" if cpu_vendor() == "intel" else "bf16"
    # No flags to read (Windows, macOS): OpenVINO says whether it has bf16 units (above),
    # not whether it has VNNI, so such a CPU is taken for the class below it, "avx2",
    # whose default every x86-64 CPU OpenVINO runs on computes exactly.
    return "avx2" if openvino_capabilities() else "older"


def class_of_flags(flags: set[str] | frozenset[str]) -> str:
    """The class of an x86-64 CPU with these flags (Linux's, or a recorded run's)."""
    if BF16_FLAGS & flags:
        return "amx" if AMX_FLAGS & flags else "bf16"
    if INT8_FLAGS & flags:
        return "int8"
    return "avx2" if "avx2" in flags else "older"


def cpu_vendor() -> str:
    """"amd", "intel" or "" (another, or unknown): the defaults of the classes without bf16
    units differ by vendor (`backends.VENDOR_CLASS_DEFAULTS`). Linux's vendor_id, else the
    platform's processor string (Windows names the vendor in it, e.g. "..., AuthenticAMD")."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("vendor_id"):
                    return vendor_of(line.split(":", 1)[1])
    except OSError:
        pass
    return vendor_of(platform.processor())


def vendor_of(name: str) -> str:
    """The vendor a CPU's vendor id or model name names: "amd", "intel" or ""."""
    if "AuthenticAMD" in name or "AMD" in name.split():
        return "amd"
    if "GenuineIntel" in name or "Intel" in name:
        return "intel"
    return ""


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
