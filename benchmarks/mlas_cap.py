"""Copies of OpenVINO and ONNX Runtime whose MLAS kernels see a CPU without AVX-512, for
the AVX2 class.

OpenVINO runs most of the float32 model's fully connected layers through MLAS, which picks
its kernels from CPUID and reads no cap: with `OV_CPU_MAX_ISA=AVX2` those layers still ran
AVX-512 here (the kernel's record, `benchmarks.avx512_use`, said so through 99% of an
encode, and a lone 1024×384×1536 product ran at 434 GFLOPS, above what AVX2's two FMA
units give two cores). The AVX2 class's float32 OpenVINO timings were then those of a
faster CPU than the class names.

MLAS decides once, at start: after installing its AVX2/FMA3 kernels it tests CPUID leaf 7's
AVX512F bit and the OS's ZMM state in XCR0, and only if both hold installs the AVX-512 ones.
This copies the installed `openvino` package into a folder and makes that one test's first
branch unconditional, so MLAS stops where an AVX2 CPU would. ONNX Runtime carries its own
MLAS, whose test is compiled differently: its branch to the AVX-512 kernels becomes a
`nop`. Each branch is found by its bytes (the test of bit 16 of CPUID's EBX, then XCR0
masked with 0xE0), and must be found exactly once; otherwise no copy is made and the
class says why. The copies are put first on the class process's PYTHONPATH; nothing else
is changed, and the product never loads them.

Whether it took is not assumed: the class's process measures, per backend, how much of an
encode ran AVX-512 (`avx512_use.share_in_use`) and records it beside the timings.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

PLUGIN = "libopenvino_intel_cpu_plugin.so"
NOP6 = b"\x66\x0f\x1f\x44\x00\x00"

# OpenVINO's CPU plugin: test $0x10000,%r9d ; je rel32 ; not %rdi ; mov %rdi,%rdx ;
# and $0xe0,%edx ; jne rel32. The first branch ("no AVX512F") is made unconditional.
_OPENVINO_TEST = re.compile(rb"\x41\xf7\xc1\x00\x00\x01\x00(\x0f\x84....)"
                            rb"\x48\xf7\xd7\x48\x89\xfa\x81\xe2\xe0\x00\x00\x00\x0f\x85",
                            re.DOTALL)
# ONNX Runtime's module: test $0x10000,%r10d ; je rel8 ; mov %r8,%rax ; not %rax ;
# test $0xe0,%al ; je rel32 (to the AVX-512 kernels). That last branch becomes a nop, so
# MLAS goes on as where AVX512F is absent.
_ONNXRUNTIME_TEST = re.compile(rb"\x41\xf7\xc2\x00\x00\x01\x00\x74.\x4c\x89\xc0\x48\xf7\xd0"
                               rb"\xa8\xe0(\x0f\x84....)", re.DOTALL)


def _one(pattern: re.Pattern, code: bytes, where: str) -> int:
    """Where `pattern`'s branch is in `code`; ValueError unless found exactly once."""
    found = list(pattern.finditer(code))
    if len(found) != 1:
        raise ValueError(f"MLAS's AVX-512 test was found {len(found)} times in {where} "
                         "(once expected): this build differs")
    return found[0].start(1)


def skip_avx512(code: bytes) -> bytes:
    """OpenVINO's CPU plugin `code` with MLAS's AVX-512 test always taking its "no AVX-512"
    branch: the `je rel32` (6 bytes) becomes `jmp rel32` (5 bytes) to the same target, and
    a `nop`. Raises ValueError unless the test is found exactly once."""
    at = _one(_OPENVINO_TEST, code, "the CPU plugin")
    target = at + 6 + int.from_bytes(code[at + 2:at + 6], "little", signed=True)
    jump = b"\xe9" + (target - (at + 5)).to_bytes(4, "little", signed=True) + b"\x90"
    return code[:at] + jump + code[at + 6:]


def skip_avx512_onnxruntime(code: bytes) -> bytes:
    """ONNX Runtime's module `code` with MLAS's branch to its AVX-512 kernels replaced by a
    six-byte `nop`. Raises ValueError unless the test is found exactly once."""
    at = _one(_ONNXRUNTIME_TEST, code, "ONNX Runtime's module")
    return code[:at] + NOP6 + code[at + 6:]


# package: (the library file holding MLAS, how to keep it off AVX-512)
_PATCHES = {"openvino": (PLUGIN, skip_avx512),
            "onnxruntime": ("onnxruntime_pybind11_state*.so", skip_avx512_onnxruntime)}


def capped_copy(folder: Path, package: str = "openvino") -> Path:
    """Copy the installed `package` (openvino or onnxruntime) under `folder` with its MLAS
    kept off AVX-512; the folder to put first on PYTHONPATH. Raises ValueError as the
    patch does, or where the library is not found once."""
    import importlib

    library, patch = _PATCHES[package]
    source = Path(importlib.import_module(package).__file__).parent
    found = list(source.rglob(library))
    if len(found) != 1:
        raise ValueError(f"{len(found)} copies of {library} in the {package} package")
    patched = patch(found[0].read_bytes())   # before copying: no unpatched copy is left
    target = folder / package
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    copied = target / found[0].relative_to(source)
    copied.unlink()   # were it a link, writing through it would patch the installed one
    copied.write_bytes(patched)
    return folder
