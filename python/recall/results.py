"""The judgment a search returns (SPEC §5.1, §5.4): typed hits and the result, assembled from
what the store answered, and the wording of abstention reasons.

Owns: the shapes users and the CLI/MCP read, `to_dict` (the `--json` shape), a store's hit rows
as `Hit`s, the result around them (abstention and its reason, the gap warning, staleness,
timings), and turning a verdict into a specific, human-readable reason. Does not own: deciding
verdicts (Rust trust layer) or whether to answer at all (`recall.refusals`, `recall.api`).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from recall import _core
from recall.instants import format_instant, parse_stored

if TYPE_CHECKING:
    from recall.rows import HitRow, SearchOutcome

__all__ = [
    "Hit",
    "Provenance",
    "Result",
    "Retrieval",
    "Staleness",
    "Validity",
    "abstention_reason",
    "assemble",
    "hit_of",
]

_T = TypeVar("_T")

#: SPEC §5.4: a store not refreshed for longer than this is reported stale.
MAX_AGE = dt.timedelta(days=2)


@dataclass(frozen=True)
class Provenance:
    source: str
    file: str
    chunk: int
    lines: tuple[int, int]
    heading_path: str
    indexed_at: str
    first_indexed_at: str


@dataclass(frozen=True)
class Retired:
    """A terminal state a header declared (SPEC §8.4): the note is `expired` from `since`
    (None: at every instant). `vocabulary`, `line` and `statement` say where it was written."""

    state: str
    since: str | None
    vocabulary: str
    line: int | None
    statement: str


@dataclass(frozen=True)
class Unread:
    """A statement the note makes about itself that recall could not act on (SPEC §2.5): a
    status it does not know, or a successor it names that no note matches. The note may not
    be current; read it before relying on it."""

    vocabulary: str
    line: int | None
    statement: str


@dataclass(frozen=True)
class Validity:
    valid_from: str | None
    valid_until: str | None
    superseded_by: str | None
    retired: Retired | None = None
    unread: tuple[Unread, ...] = ()
    #: A note served `ok` beside this one that looks like its update, with no declaration
    #: joining them (`recall.undeclared`); the verdict is unchanged.
    possibly_superseded_by: str | None = None


@dataclass(frozen=True)
class Retrieval:
    """How a hit was retrieved (SPEC §4): per-leg ranks (1-based, None = not in that leg's
    candidates) and each leg's reciprocal-rank contribution; `fused` is their sum."""

    dense_rank: int | None
    lexical_rank: int | None
    dense_rrf: float
    lexical_rrf: float
    fused: float


@dataclass(frozen=True)
class Hit:
    """One document's best passage and whether it may be relied on. Act only on `ok`."""

    verdict: str
    confidence: float
    score: float
    title: str
    text: str
    provenance: Provenance
    validity: Validity
    promoted: bool = False
    fetched: bool = False
    #: SPEC §5.3: the superseded file whose place and confidence this successor took.
    promoted_from: str | None = None
    #: SPEC §6: the retired file that is the best match by a clear margin, which turned this
    #: hit `not_entailed` (the question is about it, not about this on-topic neighbour).
    displaced_by: str | None = None
    #: SPEC §6: what the passage lacks of what the question asks for beyond its topic: the kind
    #: of value ("an amount of money", "a size in bytes") or a number it names ("2024"). An
    #: on-topic hit that lacks it is `not_entailed`.
    lacks: str | None = None
    #: SPEC §7 evidence: the share of the query's IDF mass this passage holds, and whether it
    #: holds every identifier the query asks for (a hit that does not is never `ok`).
    lexical: float = 0.0
    identifiers_held: bool = True
    #: Relevance proven: at or above the calibrated threshold and holding the asked identifiers,
    #: as the core judged it (a `superseded` hit that is proven hands its place to its successor).
    proven: bool = False
    #: None for a successor the trust layer fetched (SPEC §5.3).
    retrieval: Retrieval | None = None
    #: P(this passage answers the query) from the judge (SPEC §6); None when not judged.
    entailment: float | None = None
    #: Whether the note's file is as it was indexed, checked as the search ran for every hit
    #: that would be `ok`: `current`, `changed` or `missing` (its verdict is then
    #: `source_changed` or `source_missing`); None for a hit that is no answer either way, or
    #: where its folder is not on this machine.
    source: str | None = None

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


@dataclass(frozen=True)
class Staleness:
    newest_indexed_at: str | None
    age_seconds: float | None
    stale: bool


@dataclass(frozen=True)
class Result:
    """A judgment: `hits` (ok first), whether it abstained and why, and the trust context."""

    query: str
    hits: list[Hit]
    abstained: bool
    reason: str
    gap_warning: bool
    calibrated: bool
    calibration: dict[str, Any] | None
    generation: int
    staleness: Staleness
    trust_state: str
    mode: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: What the caller should know beside the verdicts: two `ok` hits that look like an update
    #: nobody declared (`recall.undeclared`), each naming both notes and the edge to declare.
    warnings: list[str] = field(default_factory=list)

    @property
    def ok_hits(self) -> list[Hit]:
        return [h for h in self.hits if h.ok]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for hit in data["hits"]:
            hit["provenance"]["lines"] = list(hit["provenance"]["lines"])
        return data


#: The verdict of a hit whose file changed or vanished since it was indexed, whatever the trust
#: layer judged: it was judged on a text that is no longer there.
SOURCE_VERDICTS = {"changed": "source_changed", "missing": "source_missing"}


def hit_of(raw: HitRow, source: str | None = None) -> Hit:
    """The public `Hit` of a store's hit row, its file in the state `source` (`recall.sources`)."""
    retired, legs, unread = raw["retired"], raw["retrieval"], raw["unread"]
    return _made(
        Hit,
        {
            "verdict": SOURCE_VERDICTS.get(source or "", raw["verdict"]),
            "confidence": raw["confidence"],
            "score": raw["score"],
            "title": raw["title"],
            "text": raw["text"],
            "provenance": _made(
                Provenance,
                {
                    "source": os.path.basename(raw["source"].rstrip("/\\")),
                    "file": raw["path"],
                    "chunk": raw["ordinal"],
                    "lines": (raw["line_start"], raw["line_end"]),
                    "heading_path": raw["heading_path"],
                    "indexed_at": raw["indexed_at"],
                    "first_indexed_at": raw["first_indexed_at"],
                },
            ),
            "validity": _made(
                Validity,
                {
                    "valid_from": raw["valid_from"],
                    "valid_until": raw["valid_until"],
                    "superseded_by": raw["superseded_by"],
                    "retired": Retired(*retired) if retired else None,
                    "unread": tuple(Unread(*u) for u in unread) if unread else (),
                    "possibly_superseded_by": None,
                },
            ),
            "promoted": raw["promoted"],
            "fetched": raw["fetched"],
            "promoted_from": raw["promoted_from"],
            "displaced_by": raw["displaced_by"],
            "lacks": raw["lacks"],
            "lexical": raw["lexical"],
            "identifiers_held": raw["identifiers_held"],
            "proven": raw["proven"],
            "retrieval": _made(Retrieval, legs) if legs else None,
            "entailment": None,
            "source": source,
        },
    )


_new = object.__new__


def _made(cls: type[_T], fields: Mapping[str, object]) -> _T:
    """The frozen dataclass `cls` holding `fields`, which name every one of its fields: what
    `cls(**fields)` makes, without the checked assignment its `__init__` makes of each field
    (a search builds a few dozen fields a hit)."""
    made = _new(cls)
    made.__dict__.update(fields)
    return made


def ok_first(hits: list[Hit]) -> list[Hit]:
    """SPEC §5.3: `ok` hits first, each group in its order."""
    if all(h.ok for h in hits[: sum(h.ok for h in hits)]):
        return hits
    return [h for h in hits if h.ok] + [h for h in hits if not h.ok]


@dataclass(frozen=True)
class Context:
    """What a result says besides its hits: the instants it was judged at, the calibration in
    use, how fresh the store is, whether trust was established, and how long each step took."""

    query: str
    now: dt.datetime
    known_as_of: dt.datetime | None
    threshold: float
    calibration: dict[str, Any] | None
    #: The store's newest indexed-at and last-run instants, as stored (None: never).
    refreshed: tuple[str | None, str | None]
    degraded: bool
    mode: str
    #: `time.perf_counter()` when the search began, and the steps timed outside the store.
    started: float
    embed_ms: float
    judge_ms: float


def assemble(
    raw: SearchOutcome, hits: list[Hit], context: Context, warnings: Sequence[str] = ()
) -> Result:
    """The result of a search: abstained when no hit is `ok`, with the cause named; the gap
    warning from the dense cosines alone (SPEC §4: a lexical match never suppresses it)."""
    abstained = not any(h.ok for h in hits)
    reason = ""
    if abstained:
        known = context.known_as_of
        reason = abstention_reason(
            hits,
            threshold=context.threshold,
            known_as_of=format_instant(known) if known is not None else None,
            identifiers=_core.identifiers(context.query),
        )
    dense = [score for _, score in raw["dense"]]
    # Stored instants sort as text: the latest one read back whole is shown as it is stored.
    instants = [(t, text) for text in context.refreshed if (t := parse_stored(text)) is not None]
    refreshed, shown = max(instants, default=(None, None))
    age = (context.now - refreshed).total_seconds() if refreshed else None
    timings = {
        "embed": round(context.embed_ms, 3),
        "load": round(raw["load_ms"], 3),
        "dense": round(raw["dense_ms"], 3),
        "lexical": round(raw["lexical_ms"], 3),
        "fuse": round(raw["fuse_ms"], 3),
        "trust": round(raw["trust_ms"], 3),
        "judge": round(context.judge_ms, 3),
    }
    timings["total"] = round((time.perf_counter() - context.started) * 1e3, 3)
    return Result(
        query=context.query,
        hits=hits,
        abstained=abstained,
        reason=reason,
        gap_warning=not dense or max(dense) < context.threshold,
        calibrated=context.calibration is not None,
        calibration=context.calibration,
        generation=int(raw["generation"]),
        staleness=Staleness(
            newest_indexed_at=shown,
            age_seconds=age,
            stale=age is None or age > MAX_AGE.total_seconds(),
        ),
        trust_state="degraded" if context.degraded else "trusted",
        mode=context.mode,
        timings_ms=timings,
        warnings=list(warnings),
    )


def abstention_reason(
    hits: list[Hit],
    *,
    threshold: float,
    known_as_of: str | None,
    identifiers: Sequence[str] = (),
) -> str:
    """SPEC §5.4: why nothing is `ok`, from the verdict of the best-ranked hit whose relevance
    the core proved (`Hit.proven`) or the judge weighed."""
    if not hits:
        return "no passage matched the query"
    if any(h.verdict == "unverified" for h in hits):
        # Development mode without calibration: nothing can be certified ok, whatever ranks first.
        return (
            "no calibration for this embedder: hits are unverified; "
            "run 'recall calibrate QUERIES' to fit one"
        )
    # The cause is the best-ranked hit whose relevance was proven (at or above the threshold, or
    # judged by the entailment model); when there is none, nothing in the store is close enough.
    proven = [h for h in hits if h.verdict == "not_entailed" or h.proven]
    if identifiers and not any(h.identifiers_held for h in hits):
        asked = ", ".join(identifiers)
        return f"no passage holds {asked}, which the question asks for: probable corpus gap"
    if not proven:
        best = max(h.score for h in hits)
        return (
            f"no match reaches the calibrated threshold {threshold:.3f} "
            f"(best cosine {best:.3f}): probable corpus gap"
        )
    top = proven[0]
    name = top.provenance.file
    v = top.validity
    if top.verdict == "superseded":
        successor = next((h for h in hits if h.provenance.file == v.superseded_by), None)
        if successor is not None and identifiers and not successor.identifiers_held:
            # SPEC §7 through promotion: the declared edge transfers relevance, not identifiers.
            return (
                f"the best match {name} is superseded by {v.superseded_by}, which does not hold "
                f"{', '.join(identifiers)} that the question asks for"
            )
        return f"the best match {name} is superseded by {v.superseded_by}, which did not qualify"
    if top.verdict == "expired" and v.retired is not None and v.valid_until is None:
        r = v.retired
        since = f" since {r.since}" if r.since else ""
        return (
            f"the best match {name} is {r.state}{since} "
            f"({r.vocabulary} line {r.line}: {r.statement})"
        )
    if top.verdict == "expired":
        return f"the best match {name} expired: valid until {v.valid_until}"
    if top.verdict == "not_yet_valid":
        return f"the best match {name} is not valid yet: valid from {v.valid_from}"
    if top.verdict == "invalid_metadata":
        return (
            f"the best match {name} has malformed or empty validity metadata; "
            "fix its frontmatter (recall lint) and re-index"
        )
    if top.verdict == "ambiguous_supersession":
        return (
            f"the best match {name} is named by a supersedes reference that matches several "
            "documents; disambiguate the corpus (unique file names or a more specific reference)"
        )
    if top.verdict == "not_yet_known":
        return f"the best match {name} was first indexed after the knowledge instant {known_as_of}"
    if top.verdict == "source_changed":
        return (
            f"the best match {name} changed since it was indexed; run 'recall index' "
            "(or keep 'recall watch' running) before relying on it"
        )
    if top.verdict == "source_missing":
        return (
            f"the best match {name} is no longer on disk (moved or deleted since it was "
            "indexed); run 'recall index' before relying on memory of it"
        )
    if top.verdict == "not_entailed" and top.lacks:
        return (
            f"the best match {name} does not hold {top.lacks}, which the question asks for "
            "(near miss)"
        )
    if top.verdict == "not_entailed":
        return f"the best match {name} does not answer the question (near miss)"
    return (
        f"no match reaches the calibrated threshold {threshold:.3f} "
        f"(best cosine {max(h.score for h in hits):.3f}): probable corpus gap"
    )
