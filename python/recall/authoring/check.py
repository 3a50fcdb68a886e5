"""`recall check`: the write-time gate for a new or edited note (SPEC §8.4).

Owns: the checked files, the edges each already declares (and those other notes declare about
it), gathering every candidate predecessor the legs find with its reasons, ranking them with
the edit to suggest, and the gate: a note with candidates that declares no edge, no
`valid_until` and no retirement fails it.

Does not own: the legs that find candidates (`recall.authoring.predecessors`), reading the
corpus or resolving references (`recall.authoring.corpus`), or printing (`recall.cli.check`).
Reads files and, with `db`, opens the store read-only; a store that is missing is never
created, and one that refuses is reported, never raised.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from recall import _core
from recall.authoring.corpus import Corpus, Note, read_note, scan
from recall.authoring.predecessors import (
    SEMANTIC_CHARS,
    Lexical,
    Names,
    Reason,
    Relation,
    Semantic,
    closures,
    note_body,
    note_title,
    same_title,
    shown_note,
    versioned,
)
from recall.errors import UsageError
from recall.vocabularies import Declarations, Edge, declare, in_force
from recall.walk import shown

if TYPE_CHECKING:
    from recall.api import Memory

__all__ = [
    "Candidate",
    "CheckReport",
    "Declared",
    "FileCheck",
    "Reason",
    "check",
]

Gate = Literal["pass", "fail", "error"]


@dataclass(frozen=True)
class Candidate:
    """A note the checked file may replace (`predecessor`) or be replaced by (`successor`).
    `declared` is True when the two are already linked in the declared graph, through other
    notes or by an ambiguous edge; such a candidate does not fail the gate. `superseded_by`
    names the notes that already replace it (the edge may belong on one of those), `current`
    the notes at the end of its chains, in force."""

    note: str
    reasons: tuple[Reason, ...]
    relation: Relation
    declared: bool
    suggestion: str
    rank: float
    superseded_by: tuple[str, ...] = ()
    current: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "note": self.note,
            "relation": self.relation,
            "reasons": [r.to_dict() for r in self.reasons],
            "declared": self.declared,
            "superseded_by": list(self.superseded_by),
            "current": list(self.current),
            "suggestion": self.suggestion,
            "rank": round(self.rank, 4),
        }


@dataclass(frozen=True)
class Declared:
    """An edge in force between the checked file and a reference, seen from the file:
    `supersedes` (the file replaces it) or `superseded_by`. `declared_in` is the file itself
    or the corpus note that wrote the edge; `status` is how it resolves (SPEC §2.3)."""

    relation: Literal["supersedes", "superseded_by"]
    reference: str
    status: Literal["resolved", "dangling", "ambiguous", "self"]
    notes: tuple[str, ...]
    declared_in: str
    vocabulary: str
    line: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "reference": self.reference,
            "status": self.status,
            "notes": list(self.notes),
            "declared_in": self.declared_in,
            "vocabulary": self.vocabulary,
            "line": self.line,
            "text": self.text,
        }


@dataclass(frozen=True)
class FileCheck:
    """One checked file: what it declares, whether it has ended (`valid_until` or a retirement),
    its ranked candidates (`omitted` more beyond the limit), and the gate."""

    file: str
    title: str | None
    declared: tuple[Declared, ...]
    ended: str | None
    candidates: tuple[Candidate, ...]
    omitted: int
    gate: Gate
    problem: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "title": self.title,
            "declared": [d.to_dict() for d in self.declared],
            "ended": self.ended,
            "candidates": [c.to_dict() for c in self.candidates],
            "omitted": self.omitted,
            "gate": self.gate,
            "problem": self.problem,
            "notes": list(self.notes),
        }


@dataclass
class CheckReport:
    """Every checked file, the corpus size, and what the semantic leg did (None: no store
    given). Under `strict`, a file whose gate is not `pass` makes the run fail."""

    files: list[FileCheck] = field(default_factory=list)
    corpus_notes: int = 0
    semantic: str | None = None
    strict: bool = False

    @property
    def failed(self) -> list[FileCheck]:
        return [f for f in self.files if f.gate != "pass"]

    @property
    def exit_code(self) -> int:
        """SPEC §8.2: 1 when the gate failed under `strict`, else 0."""
        return 1 if self.strict and self.failed else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "strict": self.strict,
            "corpus_notes": self.corpus_notes,
            "semantic": self.semantic,
        }


def check(
    files: Iterable[str | os.PathLike[str]],
    corpus_paths: Iterable[str | os.PathLike[str]],
    *,
    db: str | os.PathLike[str] | None = None,
    vocabularies: str = "all",
    limit: int = 10,
    strict: bool = False,
    store: Memory | None = None,
) -> CheckReport:
    """Check each file (inside the corpus or not) against the notes under `corpus_paths`.
    The semantic leg searches `store` (an open memory, left open) or the store at `db`.

    Raises UsageError for a file or corpus path that does not exist, a folder given as a file,
    an unknown `vocabularies` setting or a `limit` below 1.
    """
    try:
        in_force(vocabularies)
    except ValueError as err:
        raise UsageError(f"recall check: {err}") from None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"recall check: limit must be a whole number of at least 1, got {limit}")
    given = [os.fspath(f) for f in files]
    for path in given:
        if not os.path.lexists(path):
            raise UsageError(f"recall check: {shown(path)} does not exist; pass note files")
        if os.path.isdir(path):
            raise UsageError(f"recall check: {shown(path)} is a folder; pass note files")
    corpus = scan(corpus_paths, vocabularies=vocabularies, command="recall check")
    subjects = _subjects(corpus, given)
    names = Names(corpus)
    lexical = Lexical(corpus, subjects)
    graph = _Graph(corpus)
    report = CheckReport(corpus_notes=len(corpus.notes), strict=strict)
    semantic = None
    if store is not None:
        semantic = Semantic(str(store.path), corpus, store)
    elif db is not None:
        semantic = Semantic(os.fspath(db), corpus)
    if semantic is not None:
        report.semantic = semantic.status
    for number, subject in enumerate(subjects):
        report.files.append(
            _check_one(corpus, subject, number, names, lexical, graph, semantic, limit)
        )
    if semantic is not None:
        semantic.close()
    return report


# -- the checked files --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Subject:
    """A checked file: its note in the corpus (`index`) or read on its own (`index` None)."""

    given: str
    index: int | None
    note: Note


def _subjects(corpus: Corpus, given: Sequence[str]) -> list[_Subject]:
    # A note's path lies under its root, which the walk resolved: it is real unless the note
    # is a symlink inside the corpus, and then the link's own path is the one given.
    by_path = {n.path: i for i, n in enumerate(corpus.notes)}
    subjects: list[_Subject] = []
    seen: set[str] = set()
    for path in given:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        index = by_path.get(real)
        if index is None:
            index = by_path.get(
                os.path.join(os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path))
            )
        if index is not None:
            subjects.append(_Subject(path, index, corpus.notes[index]))
            continue
        name = os.path.basename(path)
        text, problem = read_note(path)
        declarations = declare(name, text) if text is not None else None
        note = Note(
            root=os.path.dirname(real),
            rel=name,
            path=real,
            shown=shown(path),
            text=text,
            problem=problem,
            declarations=declarations,
            key=_core.resolution_key(name),
            alias=declarations.alias if declarations is not None else None,
        )
        subjects.append(_Subject(path, None, note))
    return subjects


def _check_one(
    corpus: Corpus,
    subject: _Subject,
    number: int,
    names: Names,
    lexical: Lexical,
    graph: _Graph,
    semantic: Semantic | None,
    limit: int,
) -> FileCheck:
    note = subject.note
    file = shown(subject.given)
    if note.text is None or note.declarations is None:
        return FileCheck(file, None, (), None, (), 0, "error", problem=note.problem)
    text, decl = note.text, note.declarations
    title = note_title(note.rel, text, decl)
    declared, linked = _declared(corpus, subject, graph)
    ended = _ended(decl, corpus.vocabularies)
    found: dict[int, list[Reason]] = {}
    messages: list[str] = []

    def add(index: int, reason: Reason) -> None:
        if index != subject.index and index not in linked.direct:
            found.setdefault(index, []).append(reason)

    for index, reason in closures(corpus, note, text, decl, messages):
        add(index, reason)
    for index, reason in versioned(corpus, names, note):
        add(index, reason)
    if title is not None:
        for index, reason in same_title(names, title):
            add(index, reason)
    for index, reason in lexical.nearest(number, subject.index):
        add(index, reason)
    store_only: list[Candidate] = []
    if semantic is not None:
        query = f"{title or ''}\n{note_body(text, decl)[:SEMANTIC_CHARS]}".strip()
        hits, message = semantic.nearest(query, note, subject.index, limit)
        if message is not None:
            messages.append(message)
        for target, reason in hits:
            if isinstance(target, int):
                add(target, reason)
            else:
                store_only.append(_candidate(target, None, [reason], False, note))

    candidates = [
        _candidate(
            corpus.notes[i].shown,
            corpus.notes[i],
            reasons,
            i in linked.further,
            note,
            shared=len(corpus.by_key.get(corpus.notes[i].key, ())) > 1
            or corpus.notes[i].key == note.key,
            superseded_by=tuple(
                sorted(shown_note(corpus.notes[j]) for j in graph.successors.get(i, ()))
            ),
            current=tuple(sorted(shown_note(corpus.notes[j]) for j in graph.current(i))),
        )
        for i, reasons in found.items()
    ]
    candidates.extend(store_only)
    candidates.sort(key=lambda c: (-c.rank, c.note))
    has_edge = any(d.status != "self" for d in declared)
    open_candidates = [c for c in candidates if not c.declared]
    gate: Gate = "fail" if open_candidates and not has_edge and ended is None else "pass"
    return FileCheck(
        file=file,
        title=title,
        declared=tuple(declared),
        ended=ended,
        candidates=tuple(candidates[:limit]),
        omitted=max(0, len(candidates) - limit),
        gate=gate,
        notes=tuple(messages),
    )


def _candidate(
    name: str,
    target: Note | None,
    reasons: list[Reason],
    declared: bool,
    subject: Note,
    *,
    shared: bool = False,
    superseded_by: tuple[str, ...] = (),
    current: tuple[str, ...] = (),
) -> Candidate:
    relation: Relation = "predecessor"
    # The strongest reason that has a direction decides it; closeness has none.
    for reason in sorted(reasons, key=lambda r: -r.weight):
        if reason.relation is not None:
            relation = reason.relation
            break
    rank = sum(r.weight * (r.score if r.score is not None else 1.0) for r in reasons)
    reference = os.path.basename(target.rel if target is not None else name)
    name = os.path.normpath(name) if target is not None else name
    if shared:
        # SPEC §2.3: a reference keeps only the file name, so no edge can name one of two
        # namesakes.
        suggestion = (
            f"rename {name} or its namesake first: supersedes: {reference} would be ambiguous"
        )
    elif relation == "predecessor":
        suggestion = f"supersedes: {reference}"
    else:
        suggestion = (
            f"in {name}: supersedes: {os.path.basename(subject.rel)} "
            "(or valid_until: YYYY-MM-DD here)"
        )
    return Candidate(
        note=name,
        reasons=tuple(reasons),
        relation=relation,
        declared=declared,
        suggestion=suggestion,
        rank=rank,
        superseded_by=superseded_by,
        current=current,
    )


# -- 1. declared edges --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Linked:
    """Notes joined to the checked file by an edge it or they declare (`direct`: never reported
    again as candidates) and notes reachable through further edges (`further`)."""

    direct: frozenset[int]
    further: frozenset[int]


class _Graph:
    """The corpus's resolved edges as an undirected adjacency, and every edge by its key."""

    def __init__(self, corpus: Corpus) -> None:
        self.adjacent: dict[int, set[int]] = {}
        self.successors: dict[int, set[int]] = {}
        self.by_key: dict[str, list[tuple[int, Edge]]] = {}
        for index in range(len(corpus.notes)):
            for edge in corpus.edges(index):
                self.by_key.setdefault(edge.key, []).append((index, edge))
                target = corpus.resolve(index, edge)
                if target.kind == "resolved":
                    other = target.notes[0]
                    self.adjacent.setdefault(index, set()).add(other)
                    self.adjacent.setdefault(other, set()).add(index)
                    old, new = (index, other) if edge.reversed else (other, index)
                    self.successors.setdefault(old, set()).add(new)

    def current(self, index: int) -> set[int]:
        """The notes at the end of `index`'s supersession chains (none when nothing replaces
        it; a cycle's notes are not ends)."""
        seen = {index}
        todo = list(self.successors.get(index, ()))
        ends: set[int] = set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            after = self.successors.get(node)
            if after:
                todo.extend(after)
            else:
                ends.add(node)
        return ends

    def reachable(self, start: Iterable[int], stop: int | None) -> set[int]:
        seen = set(start)
        todo = list(seen)
        while todo:
            for other in self.adjacent.get(todo.pop(), ()):
                if other not in seen and other != stop:
                    seen.add(other)
                    todo.append(other)
        return seen


def _declared(corpus: Corpus, subject: _Subject, graph: _Graph) -> tuple[list[Declared], _Linked]:
    note, index = subject.note, subject.index
    assert note.declarations is not None
    file = shown(subject.given)
    declared: list[Declared] = []
    direct: set[int] = set()
    ambiguous: set[int] = set()
    for edge in note.declarations.active_edges(corpus.vocabularies):
        matches = tuple(corpus.by_key.get(edge.key, ()))
        if index is not None:
            target = corpus.resolve(index, edge)
            status, matches = target.kind, target.notes
        elif edge.key in (note.key, note.alias):
            status = "self"  # SPEC §2.3: an authoring slip, ignored
        else:
            status = "resolved" if len(matches) == 1 else "ambiguous" if matches else "dangling"
        if status == "resolved":
            direct.update(matches)
        elif status == "ambiguous":
            ambiguous.update(m for m in matches if m != index)
        declared.append(
            Declared(
                relation="superseded_by" if edge.reversed else "supersedes",
                reference=edge.reference,
                status=status,
                notes=tuple(shown_note(corpus.notes[m]) for m in matches if m != index),
                declared_in=file,
                vocabulary=edge.origin.vocabulary,
                line=edge.origin.line,
                text=edge.origin.text,
            )
        )
    # Edges other notes declare about this one: the pair is already linked, whichever side
    # wrote it (an edited old note whose successor names it passes the gate).
    keys = {note.key} | ({note.alias} if note.alias else set())
    for key in sorted(keys):
        sharing = corpus.by_key.get(key, [])
        for declarer, edge in graph.by_key.get(key, []):
            if declarer == index:
                continue
            # Inside the corpus the key is shared by every note in `sharing`; outside it, this
            # file will join them once it is added.
            count = len(sharing) if index is not None else len(sharing) + 1
            incoming: Literal["resolved", "ambiguous"] = "resolved" if count == 1 else "ambiguous"
            if incoming == "resolved":
                direct.add(declarer)
            else:
                ambiguous.add(declarer)
            declared.append(
                Declared(
                    relation="supersedes" if edge.reversed else "superseded_by",
                    reference=edge.reference,
                    status=incoming,
                    notes=(shown_note(corpus.notes[declarer]),),
                    declared_in=shown_note(corpus.notes[declarer]),
                    vocabulary=edge.origin.vocabulary,
                    line=edge.origin.line,
                    text=edge.origin.text,
                )
            )
    further = graph.reachable(direct, index) - direct - ({index} if index is not None else set())
    return declared, _Linked(frozenset(direct), frozenset(further | ambiguous))


def _ended(decl: Declarations, vocabularies: frozenset[str]) -> str | None:
    fm = decl.frontmatter
    if "frontmatter" in vocabularies and fm is not None and fm.valid_until_raw is not None:
        return f"valid_until: {fm.valid_until_raw}"
    retired = decl.active_retirement(vocabularies)
    if retired is not None:
        return f"{retired.state} ({retired.origin.vocabulary}, line {retired.origin.line})"
    return None
