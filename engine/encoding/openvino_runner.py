"""Running an OpenVINO IR of a transformer without torch: one text at a time for a search,
and many batches in flight for bulk encoding.

The torch-free encoder (`engine.encoding.torch_free_encoder`) tokenises and pools; this runs the
network in between. It compiles the IR twice over, each on first use: for latency (one
request on every core: a search's one text) and for throughput (OpenVINO's THROUGHPUT hint:
one stream per few cores, one infer request per stream). Bulk batches go to the throughput
form with one request per stream in flight, so each stream computes a whole batch on its
own cores while Python tokenises and pools the next one: measured on the 2-core test machine
with the int8 model, 2 streams of one thread did about 1.3× the sentences per second of one
request on both threads (batches of 64 Quora questions, sorted by length).

An import inserts into the HNSW index on a thread of its own while the next chunk encodes,
so one stream shares its core. A stream that finishes first therefore takes the next batch
at once (OpenVINO's `AsyncInferQueue`; results are put back in order here) instead of
waiting for the oldest request, and the throughput form's threads are not pinned to cores,
so the system can move a stream off the busy one. Measured on the 2-core test machine,
20,000 Quora questions imported in process (encode + index + save), the two ways alternated
in fresh processes: 27.7 / 27.7 / 32.1 s against 31.5 / 29.8 / 32.9 s before; encoding alone
was unchanged (8,000 questions: 8.00–8.24 s against 8.17–8.33 s).

Both forms run in the precision the backend names (`INFERENCE_PRECISION_HINT`): float32,
or bf16 for openvino-bf16. Never OpenVINO's own choice: on a CPU with bf16 units it would
compute a float32 model in bf16 and give other embeddings than the checked ones. Both take
the rest of the backend's options too (`Backend.openvino_options`: the dynamic int8
activations of openvino-int8-dynamic).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np


class RequestPool:
    """Idle infer requests of one compiled model: each call takes one (or makes one when
    all are in use) and gives it back, so two threads never share a request.

    Not one request per thread in a `threading.local`: the window's searches and imports
    run on Qt's pooled threads, whose Python thread state PySide deletes after each task;
    an infer request freed along with it crashed the process (a segfault in the thread
    state's deletion, seen under Xvfb on the first import of a new bf16 project)."""

    def __init__(self, make: Callable[[], object]) -> None:
        self._make = make
        self._idle: collections.deque = collections.deque()

    def infer(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The first output of one inference of `feed`, copied out of the request."""
        try:
            request = self._idle.popleft()
        except IndexError:
            request = self._make()
        try:
            request.infer(feed)
            return request.get_output_tensor(0).data.copy()
        finally:
            self._idle.append(request)


class OpenVinoRunner:
    """One IR on the CPU; `run` and `run_many` are safe to call from several threads."""

    def __init__(self, path: Path, options: dict[str, str] | None = None) -> None:
        import openvino as ov

        # What both compiled forms are told besides their hint (`Backend.openvino_options`).
        self._common = dict(options or {"INFERENCE_PRECISION_HINT": "f32"})
        self._core = ov.Core()
        self._model = self._core.read_model(str(path))
        self.input_names = [port.get_any_name() for port in self._model.inputs]
        self._lock = threading.Lock()
        self._latency = None
        self._throughput = None
        self._single = RequestPool(lambda: self._compiled("LATENCY").create_infer_request())

    def _compiled(self, hint: str):
        with self._lock:
            attribute = "_latency" if hint == "LATENCY" else "_throughput"
            compiled = getattr(self, attribute)
            if compiled is None:
                # Unpinned for bulk work: see the module's docstring.
                pinning = {} if hint == "LATENCY" else {"ENABLE_CPU_PINNING": False}
                compiled = self._core.compile_model(
                    self._model, "CPU", {"PERFORMANCE_HINT": hint, **self._common, **pinning})
                setattr(self, attribute, compiled)
            return compiled

    @property
    def threads(self) -> int:
        """The threads bulk encoding runs on (OpenVINO's default: the physical cores)."""
        return int(self._compiled("THROUGHPUT").get_property("INFERENCE_NUM_THREADS"))

    @property
    def streams(self) -> int:
        return int(self._compiled("THROUGHPUT").get_property("NUM_STREAMS"))

    def run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The token embeddings of one batch (a search's text): the latency form, with an
        infer request no other thread is using (`RequestPool`)."""
        return self._single.infer(feed)

    def run_many(self, feeds: Iterable[dict[str, np.ndarray]]) -> Iterator[np.ndarray]:
        """The token embeddings of each batch of `feeds`, in order, with one batch in
        flight per stream: the next feed is taken (tokenised by the caller) as soon as a
        stream is free, whichever it is. Results that come back early wait here for the
        ones before them: only the batches a free stream finished while an earlier one
        was still running.
        Stopping early waits for the batches in flight, so nothing runs on once the caller
        has moved on."""
        import openvino as ov

        compiled = self._compiled("THROUGHPUT")
        depth = max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        queue = ov.AsyncInferQueue(compiled, depth)
        done: dict[int, np.ndarray] = {}

        def finished(request, position: int) -> None:
            # On OpenVINO's thread; the copy frees the request for the next batch.
            done[position] = request.get_output_tensor(0).data.copy()

        queue.set_callback(finished)
        following = started = 0
        try:
            for position, feed in enumerate(feeds):
                queue.start_async(feed, position)   # waits for a free request
                started += 1
                while following in done:
                    yield done.pop(following)
                    following += 1
            queue.wait_all()
            while following in done:
                yield done.pop(following)
                following += 1
            if following != started:
                raise RuntimeError(f"OpenVINO returned {following} of {started} batches")
        finally:
            queue.wait_all()
