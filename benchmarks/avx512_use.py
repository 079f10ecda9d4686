"""How much of a piece of work ran AVX-512 code, read from the kernel's own record.

A CPU class below this one is forced by environment variables (`ONEDNN_MAX_CPU_ISA`,
`OV_CPU_MAX_ISA`, `ATEN_CPU_CAPABILITY`, `MKL_ENABLE_INSTRUCTIONS`), and each caps only the
library that reads it: kernels that pick their instruction set from CPUID (OpenVINO's MLAS
matrix products, numpy's sorts, glibc's string functions) still run AVX-512. The names of
the kernels a library compiled do not show that, so this asks Linux instead: on an x86 CPU
with AVX-512 it records, per thread, how long ago it last found AVX-512 register state in
use (`/proc/PID/task/TID/arch_status`, `AVX512_elapsed_ms`; -1 where never).

The share is of samples taken every `SAMPLE_S` while the work runs: in how many some thread
of the process had used AVX-512 within the last `RECENT_MS`. A kernel that runs on AVX-512
throughout gives nearly 1; a stray sort of a few numbers gives nearly 0. The kernel updates
the record when a thread is switched out, which the sampling itself causes, so this is a
measure of time in use, not a count of instructions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

SAMPLE_S = 0.02
RECENT_MS = 50


def available(pid: str | int = "self") -> bool:
    """Whether the kernel keeps the record here (x86 with AVX-512 only)."""
    return Path(f"/proc/{pid}/arch_status").exists()


def recent_threads(pid: str | int = "self", recent_ms: float = RECENT_MS) -> int:
    """How many threads of `pid` used AVX-512 within the last `recent_ms`."""
    found = 0
    for status in Path(f"/proc/{pid}/task").glob("*/arch_status"):
        try:
            elapsed = int(status.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue   # the thread ended between listing and reading
        if 0 <= elapsed < recent_ms:
            found += 1
    return found


def share_in_use(work: Callable[[], object]) -> float | None:
    """Run `work` in this process; the share of samples taken meanwhile in which some
    thread had used AVX-512 within the last `RECENT_MS` (None where the kernel keeps no
    record). The sampler's own thread runs no AVX-512 code: it reads small text files."""
    if not available():
        return None
    samples, hits = [0], [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_S):
            samples[0] += 1
            hits[0] += recent_threads() > 0

    # A quiet spell longer than RECENT_MS first, so that what ran before the work (this
    # process's own start, say) has aged out of the first samples.
    time.sleep(2 * RECENT_MS / 1000)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        work()
    finally:
        done.set()
        sampler.join()
    return hits[0] / samples[0] if samples[0] else None
