"""Choosing where the encode job's batches run: "local", "ray" or "ray=ADDRESS".

The command line's `--executor` and the window's "Encode on" setting both go through
`executor_for`; whatever it returns is handed to `project.vectors.encode(executor=...)` and closed
with `close()` when no longer wanted (it shuts down a local Ray it started).
"""

from __future__ import annotations

from engine.encoding.encoder import Executor, LocalExecutor
from engine.errors import InputError

LOCAL, RAY = "local", "ray"


def parse_executor(option: str) -> tuple[str, str | None]:
    """("local", None), ("ray", None) or ("ray", ADDRESS); InputError for anything else."""
    text = (option or LOCAL).strip()
    kind, sep, address = text.partition("=")
    kind = kind.strip().lower()
    if kind == LOCAL and not sep:
        return LOCAL, None
    if kind == RAY:
        address = address.strip()
        if sep and not address:
            raise InputError("--executor ray= needs an address, e.g. ray=ray://host:10001 "
                             "or ray=host:6379")
        return RAY, address or None
    raise InputError(f"unknown executor {option!r}; use local, ray (a Ray on this "
                     f"computer) or ray=ADDRESS (a Ray cluster)")


def executor_for(option: str, **ray_options) -> Executor:
    """The executor `option` names, connected and ready.

    "local": this thread. "ray": a Ray started on this computer with all its cores (one
    worker per core). "ray=ADDRESS": the Ray cluster at ADDRESS ("ray://host:10001",
    "host:6379" or "auto"). `ray_options` go to `RayExecutor` (workers, cpus_per_worker,
    use_gpus, num_cpus). Raises ClusterError (a DuplensError: one line for the user) when
    Ray is not installed or the cluster cannot be reached.
    """
    kind, address = parse_executor(option)
    if kind == LOCAL:
        return LocalExecutor()
    from engine.encoding.ray_executor import RayExecutor

    return RayExecutor(address, **ray_options)


def ray_available() -> bool:
    """Whether Ray is installed here (found without importing it: the window asks this to
    offer "a Ray cluster" or not; the desktop installers leave Ray out)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def close_executor(executor: Executor | None) -> None:
    """Release what `executor` holds (a Ray it started); None and repeats are fine."""
    if executor is not None:
        executor.close()
