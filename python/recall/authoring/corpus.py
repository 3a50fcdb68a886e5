"""A folder of notes as the authoring tools read it: every eligible file, its text, what it
declares, and how each declared reference resolves among the files (SPEC §2.3, §8.4).

Owns: reading the notes found by `recall.walk` (size cap, non-blocking open, UTF-8), running
`recall.vocabularies.declare` on each, the key and alias index, and resolving a declared edge to
documents exactly as the store's graph does: exact match on the key or alias, dangling,
self-reference, ambiguous. Does not own: rules (lint), proposals (fix, check) or the store.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from recall import _core, status
from recall.vocabularies import SETTINGS, Declarations, Edge, Sidecar, declare, read_sidecar
from recall.walk import MAX_FILE_BYTES, Skipped, discover, read_bounded, read_metadata, shown

__all__ = ["Corpus", "Note", "Target", "read_note", "scan"]


@dataclass(frozen=True)
class Note:
    """One eligible file. `text` and `declarations` are None when it could not be read as text,
    and `problem` says why."""

    root: str
    rel: str
    path: str
    shown: str
    text: str | None
    problem: str | None
    declarations: Declarations | None
    key: str
    alias: str | None


@dataclass(frozen=True)
class Target:
    """How one edge resolved: `resolved` (one note), `dangling` (none), `self` (the declarer) or
    `ambiguous` (two or more notes share the key)."""

    kind: Literal["resolved", "dangling", "self", "ambiguous"]
    notes: tuple[int, ...] = ()


@dataclass
class Corpus:
    """Notes in walk order, the files and folders that were skipped or refused, and the index
    from resolution key (and alias) to notes."""

    notes: list[Note] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    refused: list[Skipped] = field(default_factory=list)
    vocabularies: frozenset[str] = SETTINGS["all"]
    by_key: dict[str, list[int]] = field(default_factory=dict)
    _resolved: dict[tuple[int, Edge], Target] | None = field(default=None, repr=False)

    def add(self, note: Note) -> int:
        index = len(self.notes)
        self.notes.append(note)
        self.by_key.setdefault(note.key, []).append(index)
        if note.alias is not None and note.alias != note.key:
            self.by_key.setdefault(note.alias, []).append(index)
        self._resolved = None
        return index

    def edges(self, index: int) -> list[Edge]:
        """The edges note `index` declares that are in force under the corpus's setting."""
        d = self.notes[index].declarations
        return d.active_edges(self.vocabularies) if d is not None else []

    def resolve(self, index: int, edge: Edge) -> Target:
        """How one declared edge resolves, exactly as the store's graph resolves it (SPEC §2.3
        for frontmatter; §2.5 numbers and nearest folder first for the other vocabularies)."""
        if self._resolved is None:
            asked = [
                (i, e)
                for i, note in enumerate(self.notes)
                if note.declarations is not None
                for e in note.declarations.edges
                if e.standing is None
            ]
            found = self._resolve(
                [(i, e.key, e.origin.vocabulary != "frontmatter") for i, e in asked]
            )
            self._resolved = {(i, e): t for (i, e), t in zip(asked, found)}
        target = self._resolved.get((index, edge))
        if target is None:
            target = self._resolve([(index, edge.key, edge.origin.vocabulary != "frontmatter")])[0]
        return target

    def find(self, reference: str, near: int | None = None) -> list[int]:
        """Notes a reference written by a person names: a file name or link by its SPEC §2.3
        key, an identifier (`ADR-0005`, `RFC 1974`, `PEP 8`) by the number its note carries.
        With `near` (the note that writes it), nearest first as the graph resolves (SPEC §2.5);
        without, every match."""
        key = status.reference_key(reference)
        if not key:
            return []
        if near is not None:
            target = self._resolve([(near, key, True)])[0]
            return list(target.notes) if target.kind in ("resolved", "ambiguous") else []
        if not self.notes:
            return []
        # Unscoped, every match is listed whoever declares it.
        return sorted({n for k in key.split("\n") for n in self._resolve([(0, k, False)])[0].notes})

    def _resolve(self, edges: list[tuple[int, str, bool]]) -> list[Target]:
        documents = []
        for note in self.notes:
            folder, name = os.path.split(os.path.join(note.root, note.rel))
            documents.append((folder.replace(os.sep, "/"), name, note.key, note.alias))
        return [
            Target(kind, tuple(notes))  # type: ignore[arg-type]
            for kind, notes in _core.resolve_references(documents, edges)
        ]


def _sidecar(side: tuple[str, str]) -> Sidecar | None:
    """A note's metadata file as the index run reads it; None when it cannot be read."""
    data, _ = read_metadata(side[1])
    try:
        return read_sidecar(side[0], data.decode("utf-8")) if data is not None else None
    except UnicodeDecodeError:
        return None


def read_note(path: str) -> tuple[str | None, str | None]:
    """(text, None) or (None, the reason it cannot be read as a note)."""
    data, problem = read_bounded(
        path, MAX_FILE_BYTES, f"larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB cap"
    )
    if data is None:
        return None, problem
    if b"\x00" in data:
        return None, "not text (contains NUL bytes)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, f"not UTF-8 text (byte {err.start})"


def scan(
    paths: Iterable[str | os.PathLike[str]],
    *,
    vocabularies: str = "all",
    command: str = "recall lint",
) -> Corpus:
    """Read every eligible note under `paths` (folders or files). Raises UsageError when a path
    does not exist; everything else is recorded, never raised."""
    corpus = Corpus(vocabularies=SETTINGS[vocabularies])
    for given in paths:
        listing = discover(Path(given), command)
        corpus.skipped.extend(listing.skipped)
        corpus.refused.extend(listing.refused)
        root = str(listing.source)
        base = os.fspath(given) if listing.whole_folder else os.path.dirname(os.fspath(given))
        for rel, path in listing.paths():
            text, problem = read_note(path)
            side = listing.sidecars.get(rel)
            sidecar = _sidecar(side) if side is not None and text is not None else None
            declarations = declare(rel, text, sidecar) if text is not None else None
            corpus.add(
                Note(
                    root=root,
                    rel=rel,
                    path=path,
                    shown=shown(os.path.join(base, rel)) if base else shown(rel),
                    text=text,
                    problem=problem,
                    declarations=declarations,
                    key=_core.resolution_key(rel),
                    alias=declarations.alias if declarations is not None else None,
                )
            )
    return corpus
