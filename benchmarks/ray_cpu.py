"""The CPU time Ray's encode workers and the driver spend during a run, read from /proc.

Why: on a machine with as many cores as workers, the driver (planning, commits, indexing)
and the workers share the cores, and a worker's rows/s is then bounded by the share of a
core it gets, not by its own speed. Each worker's CPU seconds per wall second (its share
of one core) and its rows per CPU second show that directly: if a worker's share drops when
workers are added while its rows per CPU second stays, the cores bound the scaling.

Ray names an actor's process `ray::EncodeWorker…` (its process title); Ray kills the actors
when the job ends, so a thread samples their /proc counters every 0.2 s while the job runs,
and the figures cover the job's steady part (its first result to its last).
Linux only: elsewhere `supported()` is False and the benchmark leaves the figures out.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

PERIOD_S = 0.2
_PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def supported() -> bool:
    return (_PROC / "self" / "stat").exists()


def _worker_cpu(prefix: str) -> dict[int, float]:
    """CPU seconds (user + system) of each process descended from this one whose title
    starts with `prefix`: the workers of the local Ray this process started, not those of
    another Ray on the same machine."""
    stats: dict[int, tuple[str, int, float]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
            # The command name may hold spaces and parentheses: fields count from the last ')'.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:            # the process ended meanwhile
            continue
        stats[int(entry.name)] = (title, int(fields[1]),
                                  (int(fields[11]) + int(fields[12])) / _TICK)
    me = os.getpid()

    def ours(pid: int) -> bool:
        for _hop in range(16):
            pid = stats[pid][1] if pid in stats else 0
            if pid == me:
                return True
            if pid <= 1:
                return False
        return False

    return {pid: cpu for pid, (title, _ppid, cpu) in stats.items()
            if title.startswith(prefix) and ours(pid)}


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)   # every thread of this process
    return usage.ru_utime + usage.ru_stime


class CpuSampler:
    """`with CpuSampler() as cpu: run()`; then `cpu.summary(rows)`."""

    def __init__(self, prefix: str = "ray::EncodeWorker") -> None:
        self.prefix = prefix
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._before = _worker_cpu(self.prefix)       # workers of an earlier job, if alive
        self._samples: list[tuple[float, float, dict[int, float]]] = []
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()
        self._take()

    def _take(self) -> None:
        workers = {pid: cpu - self._before.get(pid, 0.0)
                   for pid, cpu in _worker_cpu(self.prefix).items()}
        self._samples.append((time.perf_counter(), _own_cpu(), workers))

    def _sample(self) -> None:
        while not self._stop.wait(PERIOD_S):
            self._take()

    def summary(self, rows: int, start: float, end: float) -> dict:
        """Between the samples nearest to `start` and `end` (perf_counter times: the job's
        first and last result, so actor starts and model loads are left out), during which
        `rows` rows were encoded: per worker, CPU seconds, share of one core and rows per
        CPU second (rows split evenly: batches go to the least loaded worker); the driver's
        CPU seconds and share (the sampler's own reads included: a few ms a second)."""
        t0, driver0, workers0 = min(self._samples, key=lambda s: abs(s[0] - start))
        t1, driver1, workers1 = min(self._samples, key=lambda s: abs(s[0] - end))
        wall = max(t1 - t0, 1e-9)
        # A worker killed before the last sample keeps its last reading.
        last: dict[int, float] = {}
        for t, _driver, workers in self._samples:
            if t <= t1:
                last.update(workers)
        used = sorted((last[pid] - workers0.get(pid, 0.0) for pid in last), reverse=True)
        used = [u for u in used if u > 0.05 * wall]     # workers that did encode then
        per_worker = rows / len(used) if used else 0
        return {"wall_s": round(wall, 2), "driver_cpu_s": round(driver1 - driver0, 2),
                "driver_core_share": round((driver1 - driver0) / wall, 2),
                "workers": [{"cpu_s": round(u, 2), "core_share": round(u / wall, 2),
                             "rows_per_cpu_s": round(per_worker / u, 1)}
                            for u in used]}
