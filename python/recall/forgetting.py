"""Forgetting (SPEC §8.4): removing documents from the store while their files stay.

Owns: choosing the documents a `forget` names (files or folders on disk, stored paths, or
everything first indexed before a date), the report a dry run shows (chunks, and the notes whose
edges toward them will dangle), applying it in one write, and what the journal means, for every
backend: its entries (each forgotten document with its content hash and first indexing time),
the listing, undo, and what an index run takes from it (`held_back`: the files it skips until
they are brought back, and the first indexing time each brought-back one keeps). Does not own:
storing the entries (the store keeps them as given) or formatting.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from recall import churn
from recall.errors import UsageError
from recall.instants import format_instant, parse_stored, utc

if TYPE_CHECKING:
    from recall.rows import JournalRow
    from recall.store import Store

__all__ = [
    "ForgetReport",
    "Forgotten",
    "ForgottenDocument",
    "forget",
    "forgotten",
    "held_back",
    "undo",
]


@dataclass(frozen=True)
class ForgottenDocument:
    """A document a forget removes (or would remove): `referenced_by` lists the notes whose
    declared edges name it, which dangle once it is gone (and revive if it comes back)."""

    source: str
    path: str
    first_indexed_at: str
    chunks: int
    referenced_by: list[str]


@dataclass
class ForgetReport:
    """What `forget` did (`applied`) or would do (a dry run)."""

    applied: bool
    documents: list[ForgottenDocument] = field(default_factory=list)
    generation: int | None = None

    @property
    def chunks(self) -> int:
        return sum(d.chunks for d in self.documents)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunks"] = self.chunks
        return data


@dataclass(frozen=True)
class Forgotten:
    """One journal entry: a forgotten document, and when it was brought back (None: still
    forgotten)."""

    source: str
    path: str
    first_indexed_at: str
    forgotten_at: str
    undone_at: str | None


def _matches(documents: list[tuple[str, str, str]], given: str) -> list[tuple[str, str]]:
    """Documents a path names: a stored path as written, or a file or folder on disk."""
    target = os.path.realpath(os.path.abspath(given))
    found = []
    for source, path, _ in documents:
        full = os.path.join(source, path)
        if path == given or full == target or full.startswith(target.rstrip(os.sep) + os.sep):
            found.append((source, path))
    return found


def _select(
    store: Store, paths: Iterable[str], older_than: dt.datetime | None
) -> list[tuple[str, str]]:
    documents = store.document_list()
    chosen: dict[tuple[str, str], None] = {}
    for given in paths:
        found = _matches(documents, given)
        if not found:
            raise UsageError(
                f"recall forget: no indexed document matches {given}; give a file or folder "
                "that was indexed, or a path as 'recall search' shows it"
            )
        chosen.update(dict.fromkeys(found))
    if older_than is not None:
        cutoff = utc(older_than)
        for source, path, first in documents:
            when = parse_stored(first)
            if when is not None and when < cutoff:
                chosen[(source, path)] = None
    return list(chosen)


def _bound_begin(store: Store) -> None:
    embedder = store.stats()["embedder"]
    if embedder is None:
        raise UsageError("recall forget: the store has no documents; nothing to forget")
    name, dim, fingerprint = embedder
    store.begin(name, dim, fingerprint)


def forget(
    store: Store,
    paths: Iterable[str],
    *,
    older_than: dt.datetime | None,
    apply: bool,
    now: dt.datetime,
) -> ForgetReport:
    """Remove the documents `paths` name (and those first indexed before `older_than`) from the
    store; a dry run unless `apply`."""
    targets = _select(store, paths, older_than)
    plan = [
        ForgottenDocument(
            source=source,
            path=path,
            first_indexed_at=first,
            chunks=chunks,
            referenced_by=[p for s, p in referrers if (s, p) not in targets],
        )
        for source, path, first, chunks, referrers in store.forget_plan(targets)
    ]
    report = ForgetReport(applied=False, documents=plan)
    if not apply or not plan:
        return report
    first_of = {(d.source, d.path): d.first_indexed_at for d in plan}
    instant = format_instant(utc(now))
    _bound_begin(store)
    try:
        by_root: dict[str, list[str]] = {}
        for d in plan:
            by_root.setdefault(d.source, []).append(d.path)
        entries: list[JournalRow] = []
        for root, chosen in by_root.items():
            hashes = {path: digest for path, digest, *_ in store.known_documents(root)}
            entries.extend((root, p, hashes[p], first_of[root, p], instant, None) for p in chosen)
            store.remove_documents(root, chosen)
        store.write_journal(entries)
        churn.add(store, report.chunks)
        report.generation = store.commit(instant)
    except BaseException:
        store.rollback()
        raise
    report.applied = True
    return report


def forgotten(store: Store) -> list[Forgotten]:
    """The journal, oldest first."""
    return [_listed(entry) for entry in store.journal()]


def _listed(entry: JournalRow) -> Forgotten:
    source, path, _, first, at, undone = entry
    return Forgotten(source, path, first, at, undone)


def held_back(store: Store) -> tuple[set[tuple[str, str]], dict[tuple[str, str], str]]:
    """What the journal asks of an index run: the (root, path) of every document forgotten
    and not brought back, which the run skips; and the first indexing time of each one brought
    back, which the run gives the document when it indexes the file again (SPEC §2.4:
    transaction time is never lost), dropping its entry in the same write."""
    skipped: set[tuple[str, str]] = set()
    restored: dict[tuple[str, str], str] = {}
    for source, path, _, first, _, undone in store.journal():
        if undone is None:
            skipped.add((source, path))
        else:
            restored[source, path] = first
    return skipped, restored


def undo(store: Store, paths: Iterable[str], *, now: dt.datetime) -> list[Forgotten]:
    """Bring forgotten documents back (every one when `paths` is empty): the next index run
    indexes their files again, with their first indexing time. Returns those brought back."""
    entries = {(e[0], e[1]): e for e in store.journal() if e[5] is None}
    journal = [_listed(e) for e in entries.values()]
    wanted = list(paths)
    if wanted:
        chosen: list[Forgotten] = []
        for given in wanted:
            rows = [(f.source, f.path, f.first_indexed_at) for f in journal]
            found = set(_matches(rows, given))
            if not found:
                raise UsageError(
                    f"recall forget --undo: nothing forgotten matches {given}; "
                    "'recall forget --list' shows the journal"
                )
            chosen.extend(f for f in journal if (f.source, f.path) in found)
        journal = list(dict.fromkeys(chosen))
    if not journal:
        return []
    instant = format_instant(utc(now))
    _bound_begin(store)
    try:
        store.write_journal([(*entries[f.source, f.path][:5], instant) for f in journal])
        store.commit(instant)
    except BaseException:
        store.rollback()
        raise
    return journal
