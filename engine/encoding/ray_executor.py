"""Encoding batches on a Ray cluster: a pool of actors, each holding the model once.

Why actors, not Ray Data's `map_batches`: the encode job already plans its batches (a
window of texts tokenised and sorted by token count) and commits them in order, chunk by
chunk, as a stream it pulls from; what it needs from Ray is N processes that keep a model
loaded and a bounded number of batches in flight, which is what actors give directly. Ray
Data would plan, buffer and order the stream a second time, and starts its streaming
executor per dataset (seconds); it is the tool for pipelines that read their input from
files on the cluster, not for one the driver reads from its project file.

Each `map` call (one per encode job) starts its actors and kills them when the job ends,
is cancelled or fails, so an idle Duplens holds no CPU or GPU of a shared cluster.
Batches go to the actor with the fewest in flight, at most `in_flight_per_worker` each
(two: the next batch is queued on the worker while it encodes one), and results are
yielded in submission order, so memory is bounded whatever the corpus size. A worker
process that dies is restarted by Ray (`max_restarts`), which loads the model again and
runs the batches it held once more (`max_task_retries`).
"""

from __future__ import annotations

import collections
import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from engine.encoding.encoder import EncodeBatch, EncodedBatch, SentenceEncoder
from engine.encoding.ray_cluster import RaySession, connect, import_ray
from engine.encoding.ray_worker import EncodeWorker, pack_model
from engine.errors import ClusterError, DuplensError

log = logging.getLogger("duplens")

MAX_RESTARTS = 3          # a worker process may die this many times per job
IN_FLIGHT_PER_WORKER = 2
# Workers not ready by then (waiting for a free CPU or GPU, or still loading) are left
# out when at least one is ready; with none ready the job stops with a clear message.
START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class WorkerPlan:
    """How many actors, with what resources, on which device."""

    count: int
    num_cpus: float
    num_gpus: float
    device: str               # "cpu" or "cuda"
    threads: int              # torch threads per actor

    def describe(self) -> str:
        unit = "GPU" if self.num_gpus else f"{self.threads} CPU thread(s)"
        return f"{self.count} Ray worker(s), {unit} each"


class RayExecutor:
    """Runs the encode job's batches on Ray actors (a local Ray, or a cluster's).

    `workers` None: one actor per GPU of the cluster when it has GPUs (and the backend
    runs on them: torch), else one per `cpus_per_worker` CPUs. `use_gpus` False keeps
    the actors on CPUs on a GPU cluster; True asks for one GPU each.
    """

    def __init__(self, address: str | None = None, *, workers: int | None = None,
                 cpus_per_worker: int = 1, use_gpus: bool | None = None,
                 in_flight_per_worker: int = IN_FLIGHT_PER_WORKER,
                 num_cpus: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise ClusterError(f"a Ray executor needs at least one worker, not {workers}")
        self.session: RaySession = connect(address, num_cpus=num_cpus)
        self.workers = workers
        self.cpus_per_worker = max(1, cpus_per_worker)
        self.use_gpus = use_gpus
        self.in_flight_per_worker = max(1, in_flight_per_worker)
        self._remote_class = None
        self.last_plan: WorkerPlan | None = None

    def plan(self, encoder: SentenceEncoder) -> WorkerPlan:
        """The actors a job with `encoder`'s model gets on this cluster now."""
        from engine.encoding.backends import get_backend

        ray = import_ray()
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        torch_runtime = get_backend(encoder.spec.backend).runtime == "torch"
        on_gpus = torch_runtime and (gpus > 0 if self.use_gpus is None else self.use_gpus)
        if on_gpus:
            return WorkerPlan(self.workers or max(gpus, 1), 1, 1, "cuda", 1)
        count = self.workers or max(1, int(resources.get("CPU", 1)) // self.cpus_per_worker)
        return WorkerPlan(count, self.cpus_per_worker, 0, "cpu", self.cpus_per_worker)

    def map(self, encoder: SentenceEncoder, batches: Iterable[EncodeBatch]
            ) -> Iterator[EncodedBatch]:
        """Encoded batches in the order of `batches`; closing the generator stops the
        cluster's work (pending batches cancelled, actors killed)."""
        ray = import_ray()
        source = iter(batches)
        first = next(source, None)
        if first is None:
            return                      # nothing to encode: no actor started for it
        source = itertools.chain([first], source)
        plan = self.last_plan = self.plan(encoder)
        actors = self._start(encoder, plan)
        pending: collections.deque = collections.deque()
        try:
            actors = self._wait_ready(actors, encoder)
            load = [0] * len(actors)
            limit = len(actors) * self.in_flight_per_worker
            exhausted = False
            while True:
                while not exhausted and len(pending) < limit:
                    batch = next(source, None)
                    if batch is None:
                        exhausted = True
                        break
                    worker = min(range(len(actors)), key=load.__getitem__)
                    pending.append((actors[worker].encode_batch.remote(batch), worker))
                    load[worker] += 1
                if not pending:
                    return
                ref, worker = pending.popleft()
                load[worker] -= 1
                yield _result(ray, ref)
        finally:
            for ref, _ in pending:
                ray.cancel(ref)
            for actor in actors:
                ray.kill(actor, no_restart=True)

    def close(self) -> None:
        """Disconnect, shutting down a local Ray this executor started; idempotent."""
        self.session.close()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------
    def _start(self, encoder: SentenceEncoder, plan: WorkerPlan) -> list:
        ray = import_ray()
        if self._remote_class is None:
            self._remote_class = ray.remote(EncodeWorker)
        spec = encoder.spec
        # Only a cluster joined by address may lack the driver's model folder.
        shipped = (ray.put(pack_model(spec.location))
                   if self.session.address is not None and spec.is_local else None)
        options = {"num_cpus": plan.num_cpus, "num_gpus": plan.num_gpus,
                   "max_restarts": MAX_RESTARTS, "max_task_retries": MAX_RESTARTS}
        log.info("encoding on %s", plan.describe())
        return [self._remote_class.options(**options).remote(
                    spec, encoder.batch_size, plan.device, plan.threads, shipped)
                for _ in range(plan.count)]

    def _wait_ready(self, actors: list, encoder: SentenceEncoder) -> list:
        """The actors whose model loaded; ClusterError when none could load it."""
        ray = import_ray()
        probes = [actor.ready.remote() for actor in actors]
        done, _ = ray.wait(probes, num_returns=len(probes), timeout=START_TIMEOUT_S)
        ready, errors = [], []
        for actor, probe in zip(actors, probes, strict=True):
            if probe not in done:
                continue
            try:
                info = ray.get(probe)
            except ray.exceptions.RayError as exc:
                errors.append(_first_line(exc))
                continue
            if info["error"] is None:
                ready.append(actor)
            else:
                errors.append(f"on {info['host']}: {info['error']}")
        for actor in actors:
            if actor not in ready:
                ray.kill(actor, no_restart=True)
        if not ready:
            why = errors[0] if errors else (f"none started within {START_TIMEOUT_S:g} s "
                                            f"(no free CPU or GPU on the cluster?)")
            raise ClusterError(f"Ray workers cannot encode with {encoder.spec.name}: {why}")
        if len(ready) < len(actors):
            log.warning("encoding on %d of %d Ray workers: %s", len(ready), len(actors),
                        errors[0] if errors else "the others did not start in time")
        return ready


def _result(ray, ref) -> EncodedBatch:
    """A batch's result; a worker's DuplensError as itself, a dead worker as ClusterError."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, DuplensError):
            raise exc.cause from None
        raise
    except ray.exceptions.RayActorError as exc:
        raise ClusterError(f"a Ray worker died {MAX_RESTARTS + 1} times and was given up: "
                           f"{_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
