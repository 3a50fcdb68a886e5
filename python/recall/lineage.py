"""The notes' lineage as a store holds it (SPEC §2.3–§2.5, §8.4): every stored note, what it
declares, how each declaration resolves, the chain it ends in, and where the trust layer stands
on it at an instant with no question asked.

Owns: reading the notes and their declarations out of a store (`Store.export` without bodies),
handing them to the core's corpus (`_core.Corpus`: the judgment crate's graph and windows, the
ones a search is judged with) and keeping, per note, the core's explanation of it; whether each
note's file is still the one indexed (`recall.sources`). Does not own: resolution, chains,
windows, retirements or verdicts (the core), or drawing them (`recall.report`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recall import _core
from recall.calibration import DEFAULT_SCALE, DEFAULT_THRESHOLD
from recall.instants import format_micros, micros
from recall.sources import state_of

if TYPE_CHECKING:
    from recall.rows import ExportedDocument
    from recall.store import Store

__all__ = ["Claim", "Note", "read"]

#: Documents read from the store per page.
_PAGE = 512
#: SPEC §5.2: the verdicts that stand before relevance is asked. A note judged with no passage
#: that gets none of them (it falls through to `low_confidence`) has nothing standing against
#: it: it is `current`.
_STANDING = frozenset(
    {
        "invalid_metadata",
        "not_yet_known",
        "ambiguous_supersession",
        "superseded",
        "expired",
        "not_yet_valid",
    }
)


@dataclass(frozen=True)
class Claim:
    """One reference a note declares, as the core resolved it: `resolution` is `resolved`,
    `dangling`, `self` or `ambiguous`, `targets` the stored paths it names; `reversed` when it
    names the declarer's successor (`Superseded-By:`); `recorded_at` the declarer's first
    indexing time, which dates the edge (SPEC §2.4)."""

    reference: str
    resolution: str
    targets: tuple[str, ...]
    recorded_at: str | None
    applies: bool
    reversed: bool
    vocabulary: str
    line: int | None
    statement: str


@dataclass(frozen=True)
class Note:
    """One stored note and where the trust layer stands on it.

    `standing` is the verdict the core gives the note at the instant with no question asked
    (`superseded`, `expired`, `not_yet_valid`, `ambiguous_supersession`, `invalid_metadata`,
    `not_yet_known`), or `current` when none of those stands against it. `retired` is the
    terminal state it declares, when in force: (state, since, vocabulary, line, statement).
    `file_state` says whether its file is still the one indexed (`current`, `changed`,
    `missing`), None where its folder is not on this machine."""

    id: int
    source: str
    path: str
    title: str
    key: str
    alias: str | None
    first_indexed_at: str
    indexed_at: str
    valid_from: str | None
    valid_until: str | None
    metadata_error: str | None
    standing: str
    superseded_by: str | None
    chain: tuple[str, ...]
    retired: tuple[str, str | None, str, int | None, str] | None
    claims: tuple[Claim, ...] = ()
    #: Declarations not in force: (kind, vocabulary, line, statement, why).
    ignored: tuple[tuple[str, str, int | None, str, str], ...] = ()
    file_state: str | None = None


def _corpus_row(d: ExportedDocument) -> tuple[Any, ...]:
    retired = d.get("retired")
    return (
        d["id"],
        d["source"],
        d["path"],
        d["key"],
        d["first_indexed_at"],
        d["valid_from_raw"],
        d["valid_until_raw"],
        d["metadata_error"] is not None,
        d.get("alias"),
        None if retired is None else (retired[0], retired[1], retired[2], retired[5]),
    )


def _claim(raw: dict[str, Any]) -> Claim:
    recorded = raw.get("recorded_at_us")
    return Claim(
        reference=str(raw["reference"]),
        resolution=str(raw["resolution"]),
        targets=tuple(str(t) for t in raw["targets"]),
        recorded_at=format_micros(recorded) if isinstance(recorded, int) else None,
        applies=bool(raw["applies"]),
        reversed=bool(raw["reversed"]),
        vocabulary=str(raw["vocabulary"]),
        line=raw["line"] if isinstance(raw["line"], int) else None,
        statement=str(raw["statement"]),
    )


def read(store: Store, *, now: dt.datetime, files: bool = True) -> list[Note]:
    """Every note `store` holds, in id order, judged at `now` (UTC) by the core with the
    store's vocabulary setting. With `files`, each note's file is looked at (size and time,
    then content where those disagree)."""
    documents: list[ExportedDocument] = []
    after = 0
    while page := store.export(after, _PAGE, bodies=False):
        after = page[-1]["id"]
        documents.extend(page)
    setting = store.meta("vocabularies") or "all"
    corpus = _core.Corpus(
        [_corpus_row(d) for d in documents],
        [(d["id"], edge) for d in documents for edge in d["edges"]],
        setting,
    )
    # No passage is judged: the policy's boundary plays no part in what is kept here.
    policy = _core.Policy(
        now_us=micros(now), threshold=DEFAULT_THRESHOLD, scale=DEFAULT_SCALE, unverified=False
    )
    notes = []
    for d in documents:
        explained = corpus.explain(
            d["id"],
            b"",
            text="",
            chunks=[],
            term_dfs=[],
            chunk_count=0,
            dense_rank=None,
            lexical_rank=None,
            declarations=[(e[3], e[4], e[5], e[6], e[7]) for e in d["edges"]],
            retired=d.get("retired"),
            vocabularies=setting,
            policy=policy,
        )
        if explained is None:  # every exported id is in the corpus built from them
            continue
        verdict = str(explained["verdict"])
        retired = explained.get("retired")
        stamp = (d["content_hash"], d["size_bytes"], d.get("mtime_ns"))
        notes.append(
            Note(
                id=d["id"],
                source=d["source"],
                path=d["path"],
                title=d["title"],
                key=d["key"],
                alias=d.get("alias"),
                first_indexed_at=d["first_indexed_at"],
                indexed_at=d["indexed_at"],
                valid_from=d["valid_from_raw"],
                valid_until=d["valid_until_raw"],
                metadata_error=d["metadata_error"],
                standing=verdict if verdict in _STANDING else "current",
                superseded_by=explained.get("superseded_by"),
                chain=tuple(explained.get("chain") or (d["path"],)),
                retired=None
                if retired is None
                else (
                    str(retired["state"]),
                    retired.get("since"),
                    str(retired["vocabulary"]),
                    retired.get("line"),
                    str(retired.get("statement") or ""),
                ),
                claims=tuple(_claim(c) for c in explained["claims_out"]),
                ignored=tuple(
                    (
                        str(i["kind"]),
                        str(i["vocabulary"]),
                        i.get("line"),
                        str(i.get("statement") or ""),
                        str(i["why"]),
                    )
                    for i in explained.get("ignored") or ()
                ),
                file_state=state_of(d["source"], d["path"], stamp) if files else None,
            )
        )
    return notes
