"""`recall check`: the write-time gate for a new or edited note (SPEC §8.4).

Owns: finding every candidate predecessor of a note among a corpus's notes, each with the reasons
it was found (the edges the note already declares, closure phrases in its prose that name a note,
versioned file names, equal or near titles, lexical closeness under the store's own BM25 term
weights, and, given a store, semantic closeness), ranking them, and the gate: a note with
candidates that declares no edge, no `valid_until` and no retirement fails it.

Does not own: reading the corpus or resolving references (`recall.authoring.corpus`), finding
closure phrases (`recall.authoring.prose`), the store's search (`recall.api`), or printing
(`recall.cli.check`). Reads files and, with `db`, opens the store read-only; a store
that is missing is never created, and one that refuses is reported, never raised.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

from recall import _core
from recall.authoring.corpus import Corpus, Note, read_note, scan
from recall.errors import RecallError, UsageError
from recall.vocabularies import Declarations, Edge, declare, in_force
from recall.walk import shown

__all__ = [
    "LEXICAL_FLOOR",
    "LEXICAL_TOP",
    "TITLE_FLOOR",
    "Candidate",
    "CheckReport",
    "Declared",
    "FileCheck",
    "Reason",
    "check",
]

#: Lexical leg: a corpus note is reported when the TF-IDF cosine between its body and the checked
#: note's body is at least this (0 unrelated … 1 the same words in the same proportions). Notes on
#: the same topic by different authors sit around 0.1-0.25; a rewrite of the same note is 0.4 or
#: more.
LEXICAL_FLOOR = 0.3
#: Lexical leg: at most this many notes are reported per checked file.
LEXICAL_TOP = 5
#: Same-title leg: token Jaccard at or above this counts as the same title.
TITLE_FLOOR = 0.8
#: Semantic leg: characters of the body sent with the title as the query.
SEMANTIC_CHARS = 1000
#: Semantic leg: the floor when the store has no calibration (SPEC §5.6's uncalibrated default).
SEMANTIC_DEFAULT_FLOOR = 0.5

Kind = Literal["closure-phrase", "versioned-name", "same-title", "lexical", "semantic"]
Relation = Literal["predecessor", "successor"]
Gate = Literal["pass", "fail", "error"]

# Ranking: a candidate's rank is the sum over its reasons of weight × (score, or 1). A closure
# phrase or a version number is the author's own word; closeness is evidence only.
_WEIGHTS: dict[str, float] = {
    "closure-phrase": 3.0,
    "versioned-name": 2.5,
    "same-title": 2.0,
    "lexical": 1.0,
    "semantic": 1.0,
}
_REFUSED_WEIGHT = 1.0
_REFUSALS = {
    "reported_speech": "reported speech",
    "hedge": "hedged",
    "partial_scope": "partial scope",
    "negated": "negated",
}


@dataclass(frozen=True)
class Reason:
    """Why a note is a candidate: the leg that found it, in words, and its score where the leg
    has one (a cosine for `lexical` and `semantic`, a Jaccard for `same-title`). `relation` is
    the direction the reason points, when it points one (a closure phrase that holds, a version
    number); `weight` is its share of the candidate's rank."""

    kind: Kind
    detail: str
    score: float | None = None
    relation: Relation | None = None
    weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "detail": self.detail}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        return out


@dataclass(frozen=True)
class Candidate:
    """A note the checked file may replace (`predecessor`) or be replaced by (`successor`).
    `declared` is True when the two are already linked in the declared graph, through other
    notes or by an ambiguous edge; such a candidate does not fail the gate. `superseded_by`
    names the notes that already replace it (the edge may belong on one of those)."""

    note: str
    reasons: tuple[Reason, ...]
    relation: Relation
    declared: bool
    suggestion: str
    rank: float
    superseded_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "note": self.note,
            "relation": self.relation,
            "reasons": [r.to_dict() for r in self.reasons],
            "declared": self.declared,
            "superseded_by": list(self.superseded_by),
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
) -> CheckReport:
    """Check each file (inside the corpus or not) against the notes under `corpus_paths`.

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
    names = _Names(corpus)
    lexical = _Lexical(corpus, subjects)
    graph = _Graph(corpus)
    report = CheckReport(corpus_notes=len(corpus.notes), strict=strict)
    semantic = _Semantic(os.fspath(db), corpus) if db is not None else None
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
    names: _Names,
    lexical: _Lexical,
    graph: _Graph,
    semantic: _Semantic | None,
    limit: int,
) -> FileCheck:
    note = subject.note
    file = shown(subject.given)
    if note.text is None or note.declarations is None:
        return FileCheck(file, None, (), None, (), 0, "error", problem=note.problem)
    text, decl = note.text, note.declarations
    title = _title(note.rel, text, decl)
    declared, linked = _declared(corpus, subject, graph)
    ended = _ended(decl, corpus.vocabularies)
    found: dict[int, list[Reason]] = {}
    messages: list[str] = []

    def add(index: int, reason: Reason) -> None:
        if index != subject.index and index not in linked.direct:
            found.setdefault(index, []).append(reason)

    for index, reason in _closures(corpus, note, text, decl, messages):
        add(index, reason)
    for index, reason in _versioned(corpus, names, note):
        add(index, reason)
    if title is not None:
        for index, reason in _same_title(names, title):
            add(index, reason)
    for index, reason in lexical.nearest(number, subject.index):
        add(index, reason)
    store_only: list[Candidate] = []
    if semantic is not None:
        query = f"{title or ''}\n{_body(text, decl)[:SEMANTIC_CHARS]}".strip()
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
                sorted(_shown(corpus.notes[j]) for j in graph.successors.get(i, ()))
            ),
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
                notes=tuple(_shown(corpus.notes[m]) for m in matches if m != index),
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
                    notes=(_shown(corpus.notes[declarer]),),
                    declared_in=_shown(corpus.notes[declarer]),
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


def _shown(note: Note) -> str:
    return os.path.normpath(note.shown)


# -- 2. closure phrases -------------------------------------------------------------------------


def _lookup(corpus: Corpus, reference: str) -> list[int]:
    """The notes a reference written in prose names: a link target or file name by its SPEC §2.3
    key, `PEP 8` and `ADR-0005` by the alias their note carries."""
    target = unquote(reference.strip().split("#", 1)[0])
    if not target or "://" in target or target.startswith("mailto:"):
        return []
    return corpus.find(target)


def _closures(
    corpus: Corpus, note: Note, text: str, decl: Declarations, messages: list[str]
) -> list[tuple[int, Reason]]:
    from recall.authoring.prose import find_closures

    # Lines a header vocabulary declares on are read by it, not as prose; the note's own
    # sentences (`prose`) stay prose here, so the author sees every closure phrase.
    skip = {e.origin.line for e in decl.edges if e.origin.vocabulary != "prose"}
    if decl.retired is not None and decl.retired.origin.vocabulary != "prose":
        skip.add(decl.retired.origin.line)
    if decl.frontmatter is not None and decl.frontmatter.present:
        skip.update(range(1, decl.frontmatter.body_line))
    out: list[tuple[int, Reason]] = []
    for closure in find_closures(text, note.rel, frozenset(skip)):
        relation: Relation | None = None
        if closure.direction == "replaces":
            relation = "predecessor"
        elif closure.direction == "replaced_by":
            relation = "successor"
        label = _REFUSALS.get(closure.refusal or "", closure.refusal)
        for reference in closure.references:
            matches = _lookup(corpus, reference)
            if not matches:
                messages.append(
                    f"line {closure.line}: {closure.phrase!r} names {reference}, "
                    "which is not a note in the corpus"
                )
                continue
            detail = f"line {closure.line}: {_clip(closure.sentence)!r} names {reference}"
            if len(matches) > 1:
                detail += f" (ambiguous: {len(matches)} notes share that name)"
            if label:
                detail += f" [{label}]"
            weight = _REFUSED_WEIGHT if closure.refusal else _WEIGHTS["closure-phrase"]
            for index in matches:
                out.append(
                    (
                        index,
                        Reason(
                            "closure-phrase",
                            detail,
                            relation=None if closure.refusal else relation,
                            weight=weight,
                        ),
                    )
                )
    return out


def _clip(sentence: str, width: int = 120) -> str:
    flat = " ".join(sentence.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- 3. versioned names -------------------------------------------------------------------------

# `x-v2`, `x_v2`, `x.v3`, `x v2`, `xv2`, `x-version-2`, `x-2`, `x-1.2`.
_VERSIONED = re.compile(
    r"(?P<base>.*?[^\W_])(?:[-_. ]+(?P<v>v|ver|version)?[-_ ]?|(?P<vv>v))"
    r"(?P<number>[0-9]+(?:\.[0-9]+){0,2})",
    re.IGNORECASE,
)
# Numbered series, not versions: `adr-0005`, `pep-8`, `rfc-2119`.
_SERIES = frozenset({"adr", "pep", "rfc", "issue", "ticket", "memo", "note", "notes"})
_DATE_TAIL = re.compile(r"(?:^|[^0-9])[0-9]{4}(?:[-_.][0-9]{1,2})?$")


def _version(stem: str) -> tuple[str, tuple[int, ...] | None]:
    """(normalised base, version) of a file stem; version None when the stem carries none.

    A bare number is a version only when it is short and not zero-padded: `x-2` is, while
    `incident-2026`, `standup-2024-01-05` and `adr-0005` are dates and sequence numbers."""
    match = _VERSIONED.fullmatch(stem)
    if match is not None:
        base, number = match.group("base"), match.group("number")
        marked = bool(match.group("v") or match.group("vv"))
        parts = tuple(int(p) for p in number.split("."))
        padded = len(number) > 1 and number[0] == "0" and "." not in number
        looks_like_date = bool(_DATE_TAIL.search(base)) or len(number.split(".")[0]) >= 4
        norm = _norm_base(base)
        if (
            any(c.isalpha() for c in base)
            and norm not in _SERIES
            and (marked or not (padded or looks_like_date))
        ):
            return norm, parts
    return _norm_base(stem), None


def _norm_base(base: str) -> str:
    return re.sub(r"[-_. ]+", "-", base.casefold()).strip("-")


def _stem(rel: str) -> str:
    name = rel.replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.splitext(name)[0]


def _versioned(corpus: Corpus, names: _Names, note: Note) -> list[tuple[int, Reason]]:
    base, version = _version(_stem(note.rel))
    mine = version or (1,)
    weight = _WEIGHTS["versioned-name"]
    out: list[tuple[int, Reason]] = []
    for index in corpus.by_key.get(note.key, ()):
        other = corpus.notes[index]
        if other.path != note.path and other.key == note.key:
            name = os.path.basename(other.rel)
            detail = f"the same file name ({name}): a reference to it would be ambiguous"
            out.append((index, Reason("versioned-name", detail, weight=weight)))
    for index in names.by_base.get(base, ()):
        other = corpus.notes[index]
        other_version = names.versions[index]
        if other.path == note.path or other.key == note.key:
            continue
        if version is None and other_version is None:
            continue
        name = os.path.basename(other.rel)
        theirs = other_version or (1,)
        if theirs < mine:
            detail = f"an earlier version of the same name ({name})"
            relation: Relation = "predecessor"
        elif theirs > mine:
            detail = f"a later version of the same name ({name})"
            relation = "successor"
        else:
            detail = f"the same version, written differently ({name})"
            relation = "predecessor"
        out.append((index, Reason("versioned-name", detail, relation=relation, weight=weight)))
    return out


# -- 4. titles ----------------------------------------------------------------------------------

_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_SETEXT_H1 = re.compile(r" {0,3}=+[ \t]*")
_RST_ADORNMENT = re.compile(r"([=\-~^\"'`#*+:.])\1{2,}[ \t]*")
_TITLE_STOP = frozenset({"a", "an", "the", "of", "for", "to", "and", "in", "on", "with"})
_TITLE_VERSION = re.compile(r"v[0-9]+|version|rev|revision|revised|[0-9]{1,3}")


def _body(text: str, decl: Declarations) -> str:
    """The prose: without a frontmatter block, and without a PEP preamble (one was read when
    the declarations carry a title but no frontmatter)."""
    fm = decl.frontmatter
    if fm is not None:
        return fm.body if fm.present else text.lstrip("\ufeff")
    text = text.lstrip("\ufeff")
    if decl.title is not None:
        end = re.search(r"\n[ \t\r]*\n", text)
        return text[end.end() :] if end is not None else ""
    return text


def _title(rel: str, text: str, decl: Declarations | None) -> str | None:
    """Frontmatter `title:` or a PEP `Title:`, else the first level-1 heading of the body."""
    if decl is not None and decl.title:
        return decl.title
    body = _body(text, decl) if decl is not None else text
    lines = body.split("\n")
    rst = rel.lower().endswith(".rst")
    in_fence = False
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line.strip():
            continue
        nxt = lines[i + 1].rstrip("\r") if i + 1 < len(lines) else ""
        if rst:
            if _RST_ADORNMENT.fullmatch(line):
                continue
            if _RST_ADORNMENT.fullmatch(nxt) and len(nxt.strip()) >= len(line.strip()):
                return line.strip()
            continue
        heading = _ATX_H1.fullmatch(line)
        if heading is not None and heading.group(1).strip():
            return heading.group(1).strip()
        if _SETEXT_H1.fullmatch(nxt) and not line.startswith((" " * 4, "\t")):
            return line.strip()
    return None


def _title_tokens(title: str) -> frozenset[str]:
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", title).casefold())
    return frozenset(w for w in words if w not in _TITLE_STOP and not _TITLE_VERSION.fullmatch(w))


def _same_title(names: _Names, title: str) -> list[tuple[int, Reason]]:
    mine = _title_tokens(title)
    folded = _fold_title(title)
    out: list[tuple[int, Reason]] = []
    # Jaccard >= TITLE_FLOOR > 0 needs a shared token, so only notes sharing one are compared.
    near = {i for token in mine for i in names.by_token.get(token, ())}
    for index in sorted(near | set(names.by_title.get(folded, ()))):
        theirs_title = names.titles[index]
        assert theirs_title is not None
        if _fold_title(theirs_title) == folded:
            detail, score = f"the same title ({theirs_title!r})", 1.0
        else:
            theirs = names.tokens[index]
            score = len(mine & theirs) / len(mine | theirs)
            if score < TITLE_FLOOR:
                continue
            detail = f"a near title ({theirs_title!r})"
        out.append((index, Reason("same-title", detail, score, weight=_WEIGHTS["same-title"])))
    return out


def _fold_title(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title).casefold().split())


class _Names:
    """Every note's file-name version and title, read once per run, indexed by version base,
    folded title and title token."""

    def __init__(self, corpus: Corpus) -> None:
        self.versions: list[tuple[int, ...] | None] = []
        self.by_base: dict[str, list[int]] = {}
        self.titles: list[str | None] = []
        self.tokens: list[frozenset[str]] = []
        self.by_title: dict[str, list[int]] = {}
        self.by_token: dict[str, list[int]] = {}
        for index, note in enumerate(corpus.notes):
            base, version = _version(_stem(note.rel))
            self.versions.append(version)
            self.by_base.setdefault(base, []).append(index)
            title = _title(note.rel, note.text, note.declarations) if note.text else None
            tokens = _title_tokens(title) if title else frozenset()
            self.titles.append(title)
            self.tokens.append(tokens)
            if title:
                self.by_title.setdefault(_fold_title(title), []).append(index)
            for token in tokens:
                self.by_token.setdefault(token, []).append(index)


# -- 5. lexical closeness -----------------------------------------------------------------------


class _Lexical:
    """Cosine between the notes' bodies as the store's lexical leg weighs their terms
    (`_core.bm25_vectors`: the index's analyser and English stemming, each term's BM25 weight
    among these notes), so a note is close to another here exactly where a search for its words
    would find the other. Postings are kept only for the checked files' terms, so a query
    touches only the notes that share a term with it. Checked files outside the corpus count as
    documents for the weights only."""

    def __init__(self, corpus: Corpus, subjects: Sequence[_Subject]) -> None:
        self.corpus = corpus
        bodies = [
            _body(n.text, n.declarations) if n.text and n.declarations else "" for n in corpus.notes
        ]
        self.notes = len(bodies)
        outside: dict[int, int] = {}
        for i, s in enumerate(subjects):
            if s.index is None and s.note.text is not None and s.note.declarations is not None:
                outside[i] = len(bodies)
                bodies.append(_body(s.note.text, s.note.declarations))
        vectors = _core.bm25_vectors(bodies)
        self.weights: list[dict[str, float]] = [{t: w for t, w, _ in v} for v in vectors]
        #: Per text, each term's first word as written: what a reason names.
        self.words: list[dict[str, str]] = [{t: word for t, _, word in v} for v in vectors]
        self.queries: list[int | None] = [
            s.index if s.index is not None else outside.get(i) for i, s in enumerate(subjects)
        ]
        wanted = {t for q in self.queries if q is not None for t in self.weights[q]}
        self.postings: dict[str, tuple[array[int], array[float]]] = {
            term: (array("i"), array("d")) for term in wanted
        }
        self.norms = array("d", bytes(8 * self.notes))
        for doc in range(self.notes):
            for term, w in self.weights[doc].items():
                if term in self.postings:
                    ids, weights = self.postings[term]
                    ids.append(doc)
                    weights.append(w)
            self.norms[doc] = math.sqrt(sum(w * w for w in self.weights[doc].values()))

    def nearest(self, query: int, exclude: int | None) -> list[tuple[int, Reason]]:
        text = self.queries[query]
        if text is None:
            return []
        weights = self.weights[text]
        norm = math.sqrt(sum(w * w for w in weights.values()))
        if not norm:
            return []
        scores: dict[int, float] = {}
        for term, qw in weights.items():
            for doc, w in zip(*self.postings[term]):
                scores[doc] = scores.get(doc, 0.0) + qw * w
        ranked = sorted(
            (
                (dot / (norm * self.norms[doc]), doc)
                for doc, dot in scores.items()
                if doc != exclude and self.norms[doc]
            ),
            key=lambda p: (-p[0], p[1]),
        )
        out: list[tuple[int, Reason]] = []
        for cosine, doc in ranked[:LEXICAL_TOP]:
            if cosine < LEXICAL_FLOOR:
                break
            theirs = self.weights[doc]
            shared = sorted(
                (t for t in weights if t in theirs), key=lambda t: (-weights[t] * theirs[t], t)
            )[:6]
            named = ", ".join(self.words[text][t].casefold() for t in shared)
            detail = f"cosine {cosine:.2f}; shared terms: {named}"
            out.append((doc, Reason("lexical", detail, cosine, weight=_WEIGHTS["lexical"])))
        return out


# -- 6. semantic closeness ----------------------------------------------------------------------


class _Semantic:
    """The store's search in development mode (no calibration needed), read-only. The floor is
    the store's calibrated threshold when it has one, else SEMANTIC_DEFAULT_FLOOR."""

    def __init__(self, db: str, corpus: Corpus) -> None:
        self.db = db
        self.memory: Any = None
        self.corpus = corpus
        self.by_place = {
            (os.path.basename(n.root.rstrip("/\\")), n.rel): i for i, n in enumerate(corpus.notes)
        }
        if not os.path.exists(db):
            # SPEC §11: a read never creates a store.
            self.status = f"skipped: store {shown(db)} does not exist (run 'recall index' first)"
            return
        try:
            import recall

            memory = recall.open(db, read_only=True)
            documents = memory.stats().documents
        except (RecallError, OSError) as err:
            self.status = f"skipped: store {shown(db)} could not be read: {err}"
            return
        if not documents:
            memory.close()
            self.status = f"skipped: store {shown(db)} holds no documents"
            return
        self.memory = memory
        self.status = f"store {shown(db)} ({documents} documents)"

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
            self.memory = None

    def nearest(
        self, query: str, note: Note, exclude: int | None, limit: int
    ) -> tuple[list[tuple[int | str, Reason]], str | None]:
        if self.memory is None or not query:
            return [], None
        try:
            result = self.memory.search(query, k=min(100, limit + 5), mode="development")
        except (RecallError, OSError) as err:
            return [], f"semantic search skipped: {err}"
        floor = SEMANTIC_DEFAULT_FLOOR
        if result.calibrated and result.calibration:
            floor = float(result.calibration.get("threshold", floor))
        real = os.path.realpath(note.path)
        out: list[tuple[int | str, Reason]] = []
        seen: set[int | str] = set()
        for hit in result.hits:
            source, file = hit.provenance.source, hit.provenance.file
            target: int | str | None = self.by_place.get((source, file))
            if target is None:
                if real.replace("\\", "/").endswith(f"/{source}/{file}"):
                    continue
                # A document of the store that no --corpus path holds.
                target = f"{source}/{file}"
            if target == exclude or target in seen or hit.score < floor:
                continue
            seen.add(target)
            detail = f"cosine {hit.score:.2f} in {shown(self.db)}"
            if isinstance(target, str):
                detail += " (a document of the store that no --corpus path holds)"
            out.append((target, Reason("semantic", detail, hit.score, weight=_WEIGHTS["semantic"])))
        return out, None
