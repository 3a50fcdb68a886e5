"""Fitting a store's calibration (SPEC §7): the evidence each question's search gives, and the
record a fit becomes.

Owns: searching each question (labelled or made by `selfcal`) as a calibration does (both legs,
every candidate, a left-out note's hits removed) and turning a fit into a `Calibration` stamped
with the store's generation, chunk count and churn. Does not own: the rules of the fit
(`calibration`), which questions are asked (`selfcal`, the user's file), or where the record is
kept and which one is in use (`recall.calibration.stored`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from recall import _core, selfcal
from recall.calibration import (
    DEFAULT_SCALE,
    DEFAULT_THRESHOLD,
    Calibration,
    Evidence,
    Fit,
    fit_evidence,
    fit_labelled_evidence,
)
from recall.embedders import Embedder, HashingEmbedder, embed_queries
from recall.instants import format_instant, utc
from recall.selfcal import Probe, identifier_probes

if TYPE_CHECKING:
    from recall.store import Store

__all__ = ["evidence", "fit_labelled", "fit_self", "lean", "record"]


@contextlib.contextmanager
def lean(store: Store) -> Iterator[None]:
    """A calibration's searches in this block leave the fine codes of a large store's rows
    unread (`Store.set_lean`): the same results, each shortlisted row's vector read back, and a
    byte a dimension less held for each chunk while the calibration that ends a first index
    runs. A lean searcher is let go at the end, so the next search loads the whole one."""
    store.set_lean(True)
    try:
        yield
    finally:
        store.set_lean(False)


def evidence(
    store: Store, embedder: Embedder, probes: Sequence[Probe], candidates: int
) -> list[Evidence]:
    """Both legs' evidence of the hits each question retrieves among `candidates` (SPEC §7)."""
    vectors = embed_queries(embedder, [p.query for p in probes])
    out = []
    for probe, vector in zip(probes, vectors):
        raw = store.search(
            vector.tobytes(),
            text=probe.query,
            k=candidates,
            candidates=candidates,
            policy=_core.Policy(
                now_us=0, threshold=DEFAULT_THRESHOLD, scale=DEFAULT_SCALE, unverified=True
            ),
        )
        hits = [
            h
            for h in raw["hits"]
            if not h["fetched"] and (h["source"], h["path"]) not in probe.left_out
        ]
        plain = not probe.relevant and not probe.left_out and not _core.identifiers(probe.query)
        out.append(
            Evidence(
                query=probe.query,
                answerable=probe.answerable,
                hits=tuple(
                    (
                        h["score"],
                        h["lexical"],
                        h["identifiers_held"],
                        h["identifier_match"],
                        probe.counts(h),
                    )
                    for h in hits
                ),
                top_dense=(raw["dense"][0][1] if raw["dense"] else 0.0) if plain else None,
            )
        )
    return out


class Counts(Protocol):
    """What a calibration record keeps of the store it was fitted on (`Memory.stats()`)."""

    @property
    def generation(self) -> int: ...
    @property
    def chunks(self) -> int: ...
    @property
    def chunk_churn(self) -> int: ...


def record(
    stats: Counts,
    embedder: Embedder,
    result: Fit,
    weights: tuple[float, float],
    pairs: list[tuple[str, bool]],
    now: dt.datetime | None,
    made: int | None = None,
    *,
    source: str = "labelled",
) -> Calibration:
    """The record of a fit on the store as `stats` describes it: `pairs` (query, answerable)
    name it, `made` counts the questions recall made (all of them when None)."""
    lexical_weight, identifier_weight = weights
    digest = hashlib.blake2b(json.dumps(pairs).encode(), digest_size=4).hexdigest()
    return Calibration(
        id=f"g{stats.generation}-{'self-' if source == 'self' else ''}{digest}",
        embedder=embedder.name,
        fingerprint=embedder.fingerprint,
        threshold=result.threshold,
        scale=result.scale,
        certified=result.certified,
        generation=stats.generation,
        chunk_count=stats.chunks,
        churn=stats.chunk_churn,
        fitted_at=format_instant(utc(now)),
        auc=result.auc,
        auc_lower=result.auc_interval[0] if result.auc_interval else None,
        n_answerable=result.n_answerable,
        n_unanswerable=result.n_unanswerable,
        certified_reason=result.certified_reason,
        features=("dense",)
        + (("lexical_share",) if lexical_weight > 0 else ())
        + (("identifier_match",) if identifier_weight > 0 else ()),
        lexical_weight=lexical_weight,
        identifier_weight=identifier_weight,
        source=source,
        made=result.n_answerable + result.n_unanswerable if made is None else made,
    )


def fit_labelled(
    store: Store,
    embedder: Embedder,
    items: Sequence[tuple[str, bool, Sequence[str]]],
    counts: Callable[[], Counts],
    now: dt.datetime | None,
    candidates: int,
) -> tuple[Calibration, Fit]:
    """A calibration fitted on labelled (query, answerable, relevant files) items, with the
    identifier lookups made from the notes beside them (SPEC §7: so that a labelled set with
    few or no lookups of its own never switches the identifier evidence off; they only add
    evidence, `fit_labelled_evidence`). `counts` is asked once the searches are done: a
    large store's counts then come from the corpus its searcher holds, not from one read
    beside it."""
    probes = [
        Probe(query, answerable, "labelled", relevant=frozenset(relevant))
        for query, answerable, relevant in items
    ]
    lookups = identifier_probes(store)
    found = evidence(store, embedder, [*probes, *lookups], candidates)
    result, weights = fit_labelled_evidence(found[: len(probes)], found[len(probes) :])
    made = len(lookups)
    pairs = [(q, a) for q, a, _ in items]
    return record(counts(), embedder, result, weights, pairs, now, made), result


def fit_self(
    store: Store,
    embedder: Embedder,
    probes: Sequence[Probe],
    counts: Callable[[], Counts],
    now: dt.datetime | None,
    candidates: int,
) -> tuple[Calibration, Fit]:
    """A calibration fitted on questions recall made from the notes (`selfcal`), recorded with
    `source: self` (`counts` asked once the searches are done, as `fit_labelled` asks it).
    The made answerable questions are the notes' own words: they would buy a lexical weight a
    user's question does not earn, so the lexical weight stays fixed
    (`selfcal.LEXICAL_WEIGHT`), the identifier weight is fitted, and the threshold is placed
    by the unanswerable questions alone: midway between the off-topic questions' ceiling
    (`selfcal.PLACING`, `selfcal.CEILING`) and the near-topic questions' median
    (`calibration.NEAR_QUANTILE`); every question counts for its certification, which a
    token-hashing embedder never gets this way."""
    result, weights = fit_evidence(
        evidence(store, embedder, probes, candidates),
        [p.kind in selfcal.PLACING for p in probes],
        lexical_weights=(selfcal.LEXICAL_WEIGHT,),
        ceiling=selfcal.CEILING,
        near=[p.kind == "near_topic" for p in probes],
    )
    if isinstance(embedder, HashingEmbedder) and result.certified:
        # Its made questions share the notes' words; a token-hashing embedder matches nothing
        # else, so they cannot show how it meets a question in other words.
        result = dataclasses.replace(
            result,
            certified=False,
            certified_reason=(
                f"{result.certified_reason}, but a self-made calibration does not certify "
                f"{embedder.name}: its questions use the notes' own words, and token hashing "
                "matches nothing else; label your own questions (recall calibrate QUERIES)"
            ),
        )
    pairs = [(p.query, p.answerable) for p in probes]
    return record(counts(), embedder, result, weights, pairs, now, source="self"), result
