"""Bulk batches through OpenVINO (engine/encoding/openvino_runner.py): whichever stream is
free takes the next batch, and the results still come back in the order of the feeds, each
the same as that batch run alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openvino")

from engine.encoding.openvino_runner import OpenVinoRunner  # noqa: E402

SHIPPED_IR = (Path(__file__).resolve().parents[3] / "duplens_data" / "models"
              / "all-MiniLM-L6-v2-openvino-int8" / "openvino_model.xml")


@pytest.fixture(scope="module")
def runner() -> OpenVinoRunner:
    if not SHIPPED_IR.exists():
        pytest.skip("the shipped fast model is built at packaging time")
    return OpenVinoRunner(SHIPPED_IR)


def feeds(runner: OpenVinoRunner, count: int) -> list[dict[str, np.ndarray]]:
    """Batches of different sizes and lengths, so a result out of order cannot match."""
    rng = np.random.default_rng(3)
    made = []
    for i in range(count):
        rows, width = 1 + i % 5, 4 + (7 * i) % 23
        ids = rng.integers(1000, 20000, size=(rows, width), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids)}
        made.append({name: feed[name] for name in runner.input_names})
    return made


def test_results_come_back_in_order_and_equal_each_batch_alone(runner) -> None:
    batches = feeds(runner, 12)   # more batches than streams
    together = list(runner.run_many(iter(batches)))
    assert len(together) == len(batches)
    for feed, out in zip(batches, together, strict=True):
        alone = runner.run(feed)
        assert out.shape == alone.shape
        np.testing.assert_allclose(out, alone, atol=1e-4)


def test_stopping_early_leaves_the_runner_usable(runner) -> None:
    batches = feeds(runner, 9)
    running = runner.run_many(iter(batches))
    first = next(running)
    running.close()   # waits for the batches in flight
    np.testing.assert_allclose(first, runner.run(batches[0]), atol=1e-4)
    again = list(runner.run_many(iter(batches[:3])))
    assert [o.shape for o in again] == [runner.run(b).shape for b in batches[:3]]


def test_no_feeds_give_no_results(runner) -> None:
    assert list(runner.run_many(iter([]))) == []
