"""`Measuring`: how right the project's duplicates are, estimated from a random sample of
pairs the analyst judges ("Measure quality", `duplens estimate`).

The statistics are `engine.estimation`'s (what to draw next: `estimation.next_draws`; the
figures from the verdicts: `estimation.judged_draws`) and the tables are the store's
(`store.quality_samples`); this service only applies them to the project. The population
is every pair of the graph's texts (`estimation.graph_population`); a sample is stored with
its design (schema v6) and draws are added to it as the analysts ask for pairs, each where
the allocation says the next verdict is worth most. Only
drawn pairs count: a verdict given in the review or Ask me is not a random pair and never
enters the estimate, unless that very pair is drawn, and then it is reused instead of asked
again. A verdict on a draw is also stored as the verdict on the two rows shown (origin
"measured"), so the review, the calibrated threshold and fine-tuning see it.

When the population changes (an import, a deletion of a text's last row, another model:
the graph's signature changes), the open sample is closed and a new one made for the new
population, which first takes over every pair judged before whose texts are still live,
with its verdict (`estimation.carried_draws`: in each new stratum the prefix of its
drawing order up to those pairs, so the draws stay a uniform sample of it), and asks only
the few pairs of that prefix nobody judged, mostly pairs of new texts. A judged pair is
never asked again; one that would need many new verdicts before it (pushed far down
another stratum's order) is left out of the figures until a draw reaches it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine.errors import InputError, ProjectError
from engine.estimation.carried_draws import carried_draws
from engine.estimation.cut_scope import cut_scope
from engine.estimation.estimators import RowsInput
from engine.estimation.graph_population import (
    GraphPopulation,
    cluster_labels,
    graph_population,
    graph_signature,
)
from engine.estimation.judged_draws import JudgedDraws
from engine.estimation.measurement import STOP_HALF_WIDTH, Measurement  # noqa: F401 - named here
from engine.estimation.next_draws import design_flagged_share, next_draws
from engine.estimation.strata import Strata
from engine.progress import CancelToken, Progress, ProgressCallback, no_progress
from engine.services.active_model import ActiveModel
from engine.services.asking import AskedRow, asked_row
from engine.services.clusters import DEFAULT_NEIGHBOURS, Clusters
from engine.services.project_threshold import Threshold
from engine.services.vectors import Vectors
from engine.services.verdicts import Verdicts
from engine.store import items as item_store
from engine.store import pair_verdicts as verdict_store
from engine.store import quality_samples as sample_store
from engine.store.copied_texts import rows_with_copies
from engine.store.database import Store

MEASURED = "measured"          # the origin of a verdict given to a drawn pair
OFFER_HOLD_S = 30 * 60         # pairs on another analyst's screen are skipped this long
CURVE_THRESHOLDS = np.round(np.arange(0.50, 1.0001, 0.02), 2)


@dataclass(frozen=True)
class DrawnPair:
    """A drawn pair waiting for a verdict, shown as one row of each text."""

    draw_id: int
    a: AskedRow
    b: AskedRow
    similarity: float
    stratum: str

    def as_json(self) -> dict:
        return {"a": {"id": self.a.public_id, "text": self.a.text},
                "b": {"id": self.b.public_id, "text": self.b.text},
                "score": round(self.similarity, 4), "stratum": self.stratum}


@dataclass(frozen=True)
class VerdictGiven:
    """What `judge` changed, so that an undo can put it back."""

    draw_id: int
    verdict: int
    item_a: int
    item_b: int
    previous_verdict: int | None


class Measuring:
    """Draw pairs, take verdicts on them, estimate precision, recall, F1 and duplicates."""

    def __init__(self, store: Store, model: ActiveModel, vectors: Vectors, clusters: Clusters,
                 verdicts: Verdicts, threshold: Threshold) -> None:
        self._store = store
        self._model = model
        self._vectors = vectors
        self._clusters = clusters
        self._verdicts = verdicts
        self._threshold = threshold
        self._population: GraphPopulation | None = None

    # -- the population and its sample ---------------------------------------------------
    def threshold(self) -> float:
        """The project threshold (`engine.services.project_threshold`), as every cut uses it."""
        return self._threshold.current().value

    def _populate(self, design_threshold: float, seed: int, strata: Strata | None = None, *,
                  progress: ProgressCallback = no_progress,
                  cancel: CancelToken | None = None) -> GraphPopulation:
        graph = self._clusters.graph(DEFAULT_NEIGHBOURS, progress=progress, cancel=cancel)
        cached = self._population
        if (cached is not None and cached.graph is graph
                and cached.threshold == design_threshold and cached.seed == seed):
            return cached
        population = graph_population(graph, self._vectors.model_id(), design_threshold,
                                      self._vectors.vectors, seed, strata)
        self._population = population
        return population

    def _current(self, threshold: float | None, *, create: bool,
                 progress: ProgressCallback = no_progress, cancel: CancelToken | None = None
                 ) -> tuple[GraphPopulation, dict | None, bool]:
        """(population, its open sample or None, whether an older sample was closed or is
        due to be). With `create`, a missing sample is made (under the lock, so two analysts
        make one) and refilled from the one it replaces."""
        graph = self._clusters.graph(DEFAULT_NEIGHBOURS, progress=progress, cancel=cancel)
        signature = graph_signature(graph, self._vectors.model_id())
        with self._store.read() as conn:
            sample = sample_store.open_sample(conn, signature)
            latest = sample_store.latest_sample(conn)
        if sample is not None:
            design = sample["design"]
            population = self._populate(design["threshold"], int(design["seed"]),
                                        Strata.from_json(design["strata"]),
                                        progress=progress, cancel=cancel)
            if create and not self._store.read_only:
                with self._store.read() as conn:
                    stale = sample_store.judged_elsewhere(conn, sample["id"])
                if stale:       # judged on a closed sample's draw since this one was made
                    with self._store.write() as conn:
                        sample_store.take_lock(conn)
                        self._carry(conn, population, sample)
            return population, sample, False
        changed = latest is not None
        design_threshold = round(float(threshold if threshold is not None
                                       else self.threshold()), 4)
        if not create or self._store.read_only:
            seed = int(self._store.get_meta(sample_store.SEED_KEY) or 0)
            population = self._populate(design_threshold, seed, progress=progress,
                                        cancel=cancel)
            return population, None, changed
        with self._store.write() as conn:
            seed = sample_store.project_seed(conn)
        population = self._populate(design_threshold, seed, progress=progress, cancel=cancel)
        with self._store.write() as conn:
            sample_store.take_lock(conn)
            sample = sample_store.open_sample(conn, signature)
            if sample is None:
                design = {"strata": population.strata.as_json(),
                          "threshold": design_threshold, "seed": seed,
                          "texts": population.texts, "neighbours": DEFAULT_NEIGHBOURS,
                          "model_id": self._vectors.model_id()}
                sample = sample_store.create_sample(conn, signature, design,
                                                    sample_store.current_analyst(conn))
                if latest is not None:
                    self._carry(conn, population, sample)
        return population, sample, changed

    def _carry(self, conn, population: GraphPopulation, sample: dict) -> None:
        """Draw into a new sample every pair judged in the samples before it that it can
        carry (`estimation.carried_draws`: the prefix of each stratum's drawing order up to
        them), with their verdicts: an import, a deletion or a re-encode re-weights the
        verdicts given, never asks them again. Pairs the sample drew already are skipped: its
        draws of a stratum are a prefix of the same order, so what it adds keeps them one.
        Call under the sample's lock."""
        judged = sample_store.judged_pairs(conn)
        keys = {(a << 32) | b for a, b in judged}
        have = {(d["text_a"], d["text_b"]) for d in sample_store.draws(conn, sample["id"])}
        rows = [r for r in carried_draws(population, int(sample["design"]["seed"]), keys)
                if (r["text_a"], r["text_b"]) not in have]
        _with_earlier_verdicts(conn, rows)
        sample_store.add_draws(conn, sample["id"], rows)

    # -- drawing ---------------------------------------------------------------------------
    def next_pairs(self, n: int = 10, *, threshold: float | None = None,
                   progress: ProgressCallback = no_progress,
                   cancel: CancelToken | None = None) -> list[DrawnPair]:
        """The next n drawn pairs to judge: draws without a verdict first (not those on another
        analyst's screen), then new ones where the allocation wants them. Pairs already
        judged get that verdict as they are drawn, and are never shown."""
        if n < 1:
            raise InputError(f"ask for at least one pair, not {n}")
        if threshold is not None and not 0.0 < threshold <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {threshold}")
        if self._store.read_only:
            raise ProjectError(f"{self._store.name}: the project is open read-only")
        population, sample, _ = self._current(threshold, create=True, progress=progress,
                                              cancel=cancel)
        assert sample is not None
        for _round in range(50):
            with self._store.read() as conn:
                who = sample_store.current_analyst(conn)
                waiting = _waiting(sample_store.draws(conn, sample["id"]), who)
            if len(waiting) >= n:
                break
            if not self._draw(population, sample, n - len(waiting)):
                break
        chosen = waiting[:n]
        with self._store.write() as conn:
            sample_store.offer(conn, [d["id"] for d in chosen], who)
        return self._shown(chosen, population.strata)

    def _draw(self, population: GraphPopulation, sample: dict, k: int) -> int:
        """Add k draws to the sample (under the lock, so analysts never draw a pair twice);
        those already judged somewhere get that verdict at once. Returns how many were added."""
        design = sample["design"]
        flagged_share = design_flagged_share(population, design["threshold"])
        with self._store.write() as conn:
            sample_store.take_lock(conn)
            existing = sample_store.draws(conn, sample["id"])
            rows = next_draws(population, int(design["seed"]), flagged_share, existing, k)
            if not rows:
                return 0
            _with_earlier_verdicts(conn, rows)
            sample_store.add_draws(conn, sample["id"], rows)
        return len(rows)

    def _shown(self, draws: list[dict], strata: Strata) -> list[DrawnPair]:
        wanted = sorted({t for d in draws for t in (d["text_a"], d["text_b"])})
        with self._store.read() as conn:
            rows = item_store.items_for_texts(conn, wanted)
        out = []
        for d in draws:
            row_a, row_b = rows.get(d["text_a"]), rows.get(d["text_b"])
            if row_a and row_b:
                out.append(DrawnPair(d["id"], asked_row(row_a[0]), asked_row(row_b[0]),
                                     float(d["similarity"]), strata.label(d["stratum"])))
        return out

    # -- verdicts --------------------------------------------------------------------------
    def judge(self, draw_id: int, verdict: int) -> VerdictGiven:
        """Record the analyst's verdict on a drawn pair (1 duplicate, 0 not), and the same
        verdict on the two rows shown, in one transaction. A draw of a closed sample (a pair
        still on screen when an import closed it) gives its verdict to the open sample's
        draw of the same pair, if it has one, so that the verdict counts now."""
        if verdict not in (0, 1):
            raise InputError(f"a verdict is 0 or 1, not {verdict!r}")
        with self._store.write() as conn:
            draw = sample_store.draw(conn, draw_id)
            if draw is None:
                raise InputError(f"no drawn pair {draw_id}")
            sample = sample_store.latest_open_sample(conn)
            if sample is not None and sample["id"] != draw["sample_id"]:
                draw = sample_store.draw_of_pair(conn, sample["id"], draw["text_a"],
                                                 draw["text_b"]) or draw
                draw_id = draw["id"]
            item_a, item_b = _shown_items(conn, draw)
            previous = verdict_store.get_verdict(conn, item_a, item_b)
            sample_store.set_draw_verdict(conn, draw_id, verdict,
                                        sample_store.current_analyst(conn))
            verdict_store.set_verdict(conn, item_a, item_b, verdict, MEASURED)
        return VerdictGiven(draw_id, verdict, item_a, item_b, previous)

    def take_back(self, given: VerdictGiven) -> bool:
        """Undo `judge`: the draw waits for a verdict again and the rows' verdict is what it
        was, unless another analyst has changed either since (False: left as they are)."""
        with self._store.write() as conn:
            if not sample_store.set_draw_verdict(conn, given.draw_id, None, None,
                                                 expected=given.verdict):
                return False
            verdict_store.replace_verdict(conn, given.item_a, given.item_b,
                                          given.verdict, given.previous_verdict)
        return True

    def judge_many(self, verdicts: list[tuple[int, int, int | None]]) -> int:
        """Verdicts on pairs of rows, all in one transaction (`duplens label --from`): each
        stored as `Verdicts.set_verdict` would, and, where the two rows' texts are a drawn
        pair of the open sample, as that draw's verdict too (None takes it back). Returns
        how many were verdicts on drawn pairs."""
        for a, b, verdict in verdicts:
            if verdict not in (0, 1, None):
                raise InputError(f"a verdict is 0 or 1, not {verdict!r}")
            if a == b:
                raise InputError("a pair needs two different rows")
        on_draws = 0
        with self._store.write() as conn:
            who = sample_store.current_analyst(conn)
            sample = sample_store.latest_open_sample(conn)
            by_pair = {}
            if sample is not None:
                by_pair = {(d["text_a"], d["text_b"]): d
                           for d in sample_store.draws(conn, sample["id"])}
            text_of = {i["id"]: i["text_id"] for i in
                       item_store.items_by_ids(conn, [x for a, b, _ in verdicts
                                                      for x in (a, b)]).values()}
            for a, b, verdict in verdicts:
                ta, tb = text_of[a], text_of[b]
                draw = by_pair.get((min(ta, tb), max(ta, tb)))
                offered = verdict_store.was_offered(conn, a, b)
                origin = MEASURED if draw is not None else ("asked" if offered else "review")
                verdict_store.set_verdict(conn, a, b, verdict, origin)
                if draw is not None:
                    sample_store.set_draw_verdict(conn, draw["id"], verdict, who)
                    on_draws += 1
        return on_draws

    # -- estimates -------------------------------------------------------------------------
    def measure(self, threshold: float | None = None, *, curve: bool = False,
                create: bool = True, progress: ProgressCallback = no_progress,
                cancel: CancelToken | None = None) -> Measurement:
        """The estimate at `threshold` (default: the cut's), with what it rests on; with
        `curve`, also at every threshold of `CURVE_THRESHOLDS` (for the band). Without
        `create`, a project whose sample is gone (or never was) gets no new one."""
        t = float(threshold if threshold is not None else self.threshold())
        if not 0.0 < t <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {t}")
        row = self._model.row()
        model = row["name"] if row else "(none yet)"
        if not create:
            with self._store.read() as conn:
                if sample_store.latest_sample(conn) is None:   # never measured: no graph
                    return Measurement(None, t, 0, 0, {}, None, None, model, None)
        population, sample, changed = self._current(
            t, create=create and not self._store.read_only, progress=progress, cancel=cancel)
        if sample is None:
            return Measurement(None, t, 0, 0, {}, None, None, model, None, changed)
        with self._store.read() as conn:
            draws = sample_store.draws(conn, sample["id"])
            who = sample_store.verdicts_by_analyst(conn, sample["id"])
            copies, copied = rows_with_copies(conn, population.graph.ids.tolist())
            given = verdict_store.text_verdicts(conn)
        judged = [d for d in draws if d["verdict"] is not None]
        pending = len(draws) - len(judged)
        if not judged:
            return Measurement(None, t, 0, pending, who, None, None, model,
                               sample["created_at"], changed)
        inputs = JudgedDraws(population, judged)
        # every text of the graph is one row, or several (its copies)
        total = copies + len(population.graph.ids) - len(copied)
        below = population.strata.below_floor()
        rows = RowsInput(copies, inputs.row_weights(population, copied), total,
                         inputs.row_weights(population, copied, below=below)
                         if below.any() else None)
        labels = cluster_labels(population.graph, t)  # the cut, once for both uses
        result = inputs.estimate_at(population, t, rows=rows, labels=labels)
        widest, _ = result.widest()
        more = inputs.more_to_halve(population, result, widest)
        left = inputs.width_left_at_caps(population, result, widest) if more is None else None
        band = []
        if curve:
            for i, step in enumerate(CURVE_THRESHOLDS):
                if cancel is not None:
                    cancel.raise_if_cancelled()
                progress(Progress("curve", i, len(CURVE_THRESHOLDS)))
                band.append(inputs.estimate_at(population, float(step), draws=1000))
            progress(Progress("curve", len(CURVE_THRESHOLDS), len(CURVE_THRESHOLDS)))
        scope = cut_scope(t, given, population.graph.ids, labels)
        return Measurement(result, t, len(judged), pending, who, widest, more, model,
                           sample["created_at"], changed, band, scope, left)


def _waiting(draws: list[dict], who: str) -> list[dict]:
    """Draws without a verdict, in drawing order, less those on another analyst's screen."""
    now = time.time()
    return [d for d in draws if d["verdict"] is None and not (
        d["offered_to"] not in (None, who) and now - (d["offered_at"] or 0) < OFFER_HOLD_S)]


def _with_earlier_verdicts(conn, rows: list[dict]) -> None:
    """Give each new draw the verdict already given on its pair, if any (a draw is random
    whoever judged the pair): those are never shown."""
    earlier = sample_store.earlier_verdicts(conn, {(r["text_a"], r["text_b"]) for r in rows})
    now = time.time()
    for row in rows:
        verdict = earlier.get((row["text_a"], row["text_b"]))
        row.update(verdict=verdict,
                   answered_by="earlier verdict" if verdict is not None else None,
                   answered_at=now if verdict is not None else None,
                   reused=verdict is not None)


def _shown_items(conn, draw: dict) -> tuple[int, int]:
    rows = item_store.items_for_texts(conn, [draw["text_a"], draw["text_b"]])
    if not rows.get(draw["text_a"]) or not rows.get(draw["text_b"]):
        raise InputError("a row of this pair was deleted; the sample is drawn again")
    return rows[draw["text_a"]][0]["id"], rows[draw["text_b"]][0]["id"]
