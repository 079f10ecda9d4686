"""benchmarks/avx512_use.py reads the kernel's per-thread record of AVX-512 use: work that
runs none gives a share near 0, and the record is absent where the CPU has no AVX-512."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import avx512_use

ROOT = Path(__file__).resolve().parents[2]

_SHARE = """
import sys, time
from benchmarks import avx512_use
work = {"sleep": lambda: time.sleep(0.6),
        "python": lambda: sum(i * i for i in range(2_000_000))}[sys.argv[1]]
print(avx512_use.share_in_use(work))
"""


def _needs_record() -> None:
    if not avx512_use.available():
        pytest.skip("this CPU has no AVX-512, so the kernel keeps no record of it")


@pytest.mark.parametrize("work", ["sleep", "python"])
def test_work_that_runs_no_avx512_gives_a_share_near_zero(work):
    """With glibc kept off AVX-512 (as the AVX2 class's process is), sleeping and a pure
    Python loop run none; the sampler's own thread must not count either."""
    _needs_record()
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ"}
    done = subprocess.run([sys.executable, "-c", _SHARE, work], env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    assert float(done.stdout.split()[-1]) <= 0.05


def test_a_pid_without_the_record_says_so():
    assert avx512_use.available("no-such-process") is False
    assert avx512_use.recent_threads("no-such-process") == 0
