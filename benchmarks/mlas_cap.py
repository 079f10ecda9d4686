"""A copy of OpenVINO whose MLAS kernels see a CPU without AVX-512, for the AVX2 class.

OpenVINO runs most of the float32 model's fully connected layers through MLAS, which picks
its kernels from CPUID and reads no cap: with `OV_CPU_MAX_ISA=AVX2` those layers still ran
AVX-512 here (the kernel's record, `benchmarks.avx512_use`, said so through 99% of an
encode, and a lone 1024×384×1536 product ran at 434 GFLOPS, above what AVX2's two FMA
units give two cores). The AVX2 class's float32 OpenVINO timings were then those of a
faster CPU than the class names.

MLAS decides once, at start: after installing its AVX2/FMA3 kernels it tests CPUID leaf 7's
AVX512F bit and the OS's ZMM state in XCR0, and only if both hold installs the AVX-512 ones.
This copies the installed `openvino` package into a folder and makes that one test's first
branch unconditional, so MLAS stops where an AVX2 CPU would. The branch is found by its
bytes (the test of bit 16 of EBX, then XCR0 masked with 0xE0), and must be found exactly
once; otherwise no copy is made and the class says why. The copy is put first on the class
process's PYTHONPATH; nothing else is changed, and the product never loads it.

Whether it took is not assumed: the class's process measures, per backend, how much of an
encode ran AVX-512 (`avx512_use.share_in_use`) and records it beside the timings.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

PLUGIN = "libopenvino_intel_cpu_plugin.so"

# test $0x10000,%r9d ; je rel32 ; not %rdi ; mov %rdi,%rdx ; and $0xe0,%edx ; jne rel32
_AVX512_TEST = re.compile(rb"\x41\xf7\xc1\x00\x00\x01\x00(\x0f\x84....)"
                          rb"\x48\xf7\xd7\x48\x89\xfa\x81\xe2\xe0\x00\x00\x00\x0f\x85",
                          re.DOTALL)


def skip_avx512(code: bytes) -> bytes:
    """`code` with MLAS's AVX-512 test always taking its "no AVX-512" branch: the `je rel32`
    (6 bytes) becomes `jmp rel32` (5 bytes) to the same target, and a `nop`. Raises
    ValueError unless the test is found exactly once."""
    found = list(_AVX512_TEST.finditer(code))
    if len(found) != 1:
        raise ValueError(f"MLAS's AVX-512 test was found {len(found)} times in the CPU plugin "
                         "(once expected): this OpenVINO build differs")
    at = found[0].start(1)
    target = at + 6 + int.from_bytes(code[at + 2:at + 6], "little", signed=True)
    jump = b"\xe9" + (target - (at + 5)).to_bytes(4, "little", signed=True) + b"\x90"
    return code[:at] + jump + code[at + 6:]


def capped_copy(folder: Path) -> Path:
    """Copy the installed `openvino` package under `folder` with its CPU plugin's MLAS kept
    off AVX-512; the folder to put first on PYTHONPATH. Raises ValueError as `skip_avx512`."""
    import openvino

    source = Path(openvino.__file__).parent
    target = folder / "openvino"
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    plugins = list(target.rglob(PLUGIN))
    if len(plugins) != 1:
        raise ValueError(f"{len(plugins)} copies of {PLUGIN} in the openvino package")
    code = plugins[0].read_bytes()
    plugins[0].unlink()   # were it a link, writing through it would patch the installed one
    plugins[0].write_bytes(skip_avx512(code))
    return folder
