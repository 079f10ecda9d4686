"""The single-query path: its own tokenizer, the same weights, never the bulk path's lock."""

import threading

import numpy as np


def test_the_query_view_shares_weights_but_not_the_tokenizer(encoder):
    from engine.encoding.encoder import SentenceEncoder

    encoder = SentenceEncoder(encoder.model, encoder.spec, "cpu")   # torch queries, as loaded
    view = encoder._query_view()
    assert view[0].tokenizer is not encoder.model[0].tokenizer
    assert view[0].auto_model is encoder.model[0].auto_model
    shared = {id(p) for p in encoder.model.parameters()}
    assert {id(p) for p in view.parameters()} == shared


def test_one_text_gives_what_the_bulk_path_gives_in_eval_mode(encoder):
    text = "How can I learn to cook Indian food at home?"
    alone = encoder.encode_query(text)
    bulk = encoder.encode([text, "Why is the sky blue?"])[:1]
    assert alone.shape == (1, encoder.dim)
    assert np.allclose(alone, bulk, atol=1e-5)
    assert not any(m.training for m in encoder.model[0].modules())  # dropout off


def test_a_query_does_not_wait_for_a_bulk_batch_in_flight(encoder):
    text = "What is the best way to learn the guitar as an adult?"
    expected = encoder.encode_query(text)
    out = []
    with encoder._lock:  # as if an import's batch held the bulk path
        worker = threading.Thread(target=lambda: out.append(encoder.encode([text])))
        worker.start()
        worker.join(timeout=120)  # a guard against hanging, not a timing
        finished_while_held = not worker.is_alive()
    worker.join()
    assert finished_while_held
    assert np.array_equal(out[0], expected)


def test_queries_during_a_bulk_encode_are_right_and_raise_nothing(encoder):
    text = "Is it safe to swim right after eating?"
    alone = encoder.encode_query(text)
    bulk_texts = [f"Question number {i}: how do I repair a {i % 13}-speed bicycle chain?"
                  for i in range(1500)]
    errors, results, overlapped = [], [], []
    started = threading.Event()

    def bulk():
        started.set()
        try:
            results.append(encoder.encode(bulk_texts))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=bulk)
    worker.start()
    started.wait()
    queries = []
    while worker.is_alive():
        overlapped.append(encoder._lock.locked())
        queries.append(encoder.encode_query(text))
    worker.join()
    assert not errors
    assert any(overlapped), "no query ran while the bulk encode held its lock"
    assert queries and all(np.allclose(q, alone, atol=1e-5) for q in queries)
    assert np.allclose(results[0][:3], encoder.encode(bulk_texts[:3]), atol=1e-5)
