"""`recall lint`: what is wrong with a folder of notes as written, before anything is indexed
(SPEC §8.4). No store, no embedder.

Owns: the rules and their codes (errors E001–E008, warnings W001–W004, infos I001–I002), the
wording of each finding and its suggested fix, and the report. Does not own: reading notes and
resolving references (`recall.authoring.corpus`), the vocabularies (`recall.vocabularies`),
closure phrases (`recall.closures`), or printing (`recall.cli.lint`).
"""

from __future__ import annotations

import difflib
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from recall.authoring.corpus import Corpus, Note, scan
from recall.closures import Closure, find_closures
from recall.errors import UsageError
from recall.opening import about_itself
from recall.vocabularies import MAX_TARGETS, PARTIAL, UNREAD, Edge, Statement, in_force
from recall.walk import MARKDOWN_SUFFIXES

__all__ = [
    "REFUSING",
    "RULES",
    "Finding",
    "LintReport",
    "file_name",
    "lint",
    "lint_corpus",
    "skip_lines",
    "statement_words",
]

Severity = Literal["error", "warning", "info"]

#: Every rule: code -> (slug, severity).
RULES: dict[str, tuple[str, Severity]] = {
    "E001": ("dangling-reference", "error"),
    "E002": ("self-reference", "error"),
    "E003": ("cycle", "error"),
    "E004": ("malformed-date", "error"),
    "E005": ("empty-window", "error"),
    "E006": ("ambiguous-target", "error"),
    "E007": ("unreadable-file", "error"),
    "E008": ("unreadable-frontmatter", "error"),
    "W001": ("versioned-siblings", "warning"),
    "W002": ("closure-prose", "warning"),
    "W003": ("unread-status", "warning"),
    "W004": ("too-many-targets", "warning"),
    "I001": ("overridden-header", "info"),
    "I002": ("partial-statement", "info"),
}

#: The rules whose note the indexer refuses (SPEC §2.6): a file or frontmatter it cannot read, a
#: date it cannot parse, a window that holds no instant.
REFUSING = frozenset({"E004", "E005", "E007", "E008"})

# `x-v1`, `x_v2`, `x.v3`, `x v4`: a stem that differs from its siblings only by the version.
_VERSIONED = re.compile(r"(?P<base>.*?\S)[-_. ]v(?P<version>[0-9]{1,6})", re.IGNORECASE)
_SUGGESTIONS = 3
_CANDIDATES = 10
_COMMON_GRAM = 200


@dataclass(frozen=True)
class Finding:
    """One problem: where it is, which rule, what is wrong and what would fix it."""

    code: str
    rule: str
    severity: Severity
    file: str
    line: int
    message: str
    fix: str
    #: The vocabulary of the statement the finding is about (`frontmatter`, `pep`, …), if any.
    vocabulary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "fix": self.fix,
            "vocabulary": self.vocabulary,
        }

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.code} {self.rule}: {self.message} (fix: {self.fix})"


@dataclass
class LintReport:
    """Findings sorted by file then line, how many files were read, and how long it took."""

    findings: list[Finding]
    files: int
    seconds: float
    vocabularies: str = "all"

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")

    @property
    def infos(self) -> int:
        return sum(1 for f in self.findings if f.severity == "info")

    @property
    def ok(self) -> bool:
        """True when no finding is an error (warnings do not fail a run)."""
        return self.errors == 0

    def counts(self) -> dict[str, int]:
        """Findings per code."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.code] = out.get(f.code, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": self.files,
            "errors": self.errors,
            "warnings": self.warnings,
            "infos": self.infos,
            "counts": self.counts(),
            "vocabularies": self.vocabularies,
            "seconds": round(self.seconds, 4),
            "findings": [f.to_dict() for f in self.findings],
        }


def lint(paths: Iterable[str | os.PathLike[str]], *, vocabularies: str = "all") -> LintReport:
    """Lint every note under `paths` (folders or files). Raises UsageError for a missing path or
    an unknown `vocabularies` setting; every problem in the notes is a finding."""
    start = time.perf_counter()
    paths = list(paths)
    if not paths:
        raise UsageError("recall lint: no path given; pass a folder of notes")
    try:
        in_force(vocabularies)
    except ValueError as err:
        raise UsageError(f"recall lint: {err}") from None
    corpus = scan(paths, vocabularies=vocabularies, command="recall lint")
    findings = lint_corpus(corpus)
    return LintReport(findings, len(corpus.notes), time.perf_counter() - start, vocabularies)


def lint_corpus(corpus: Corpus) -> list[Finding]:
    """Every finding for a scanned corpus, sorted by file, line and code."""
    graph = _Graph(corpus)
    findings: list[Finding] = []
    findings.extend(_unreadable(corpus))
    findings.extend(_dates(corpus))
    findings.extend(graph.edge_findings())
    findings.extend(graph.cycles())
    findings.extend(_overridden(corpus))
    findings.extend(_versioned_siblings(corpus, graph))
    findings.extend(_closure_prose(corpus, graph))
    findings.extend(_standing(corpus))
    findings.sort(key=lambda f: (f.file, f.line, f.code, f.message))
    return findings


def skip_lines(corpus: Corpus, index: int, prose: bool = True) -> frozenset[int]:
    """Lines of note `index` that a vocabulary in force already read as declarations: closure
    phrases on them are the declaration itself, not prose. Without `prose`, the note's own
    sentences stay prose (what `fix` turns into frontmatter)."""
    d = corpus.notes[index].declarations
    if d is None:
        return frozenset()
    read = corpus.vocabularies - ({"frontmatter"} if prose else {"frontmatter", "prose"})
    lines = {s.line for s in d.statements if s.vocabulary in read}
    lines.update(
        e.origin.line
        for e in d.edges
        if not e.overridden
        and e.origin.vocabulary in corpus.vocabularies
        and (prose or e.origin.vocabulary != "prose")
    )
    retired = d.active_retirement(corpus.vocabularies)
    if retired is not None and (prose or retired.origin.vocabulary != "prose"):
        lines.add(retired.origin.line)
    return frozenset(lines)


def _finding(
    code: str, file: str, line: int, message: str, fix: str, vocabulary: str | None = None
) -> Finding:
    rule, severity = RULES[code]
    return Finding(code, rule, severity, file, max(1, line), message, fix, vocabulary)


def file_name(note: Note) -> str:
    """The note's file name: what a `supersedes:` naming it writes (SPEC §2.3 key + suffix)."""
    return note.rel.rsplit("/", 1)[-1]


def statement_words(edge: Edge) -> str:
    """How the statement reads in its vocabulary: `supersedes`, `Superseded-By`, …"""
    origin = edge.origin
    if origin.vocabulary == "pep":
        return origin.text.split(":", 1)[0]
    return "superseded by" if edge.reversed else "supersedes"


def _where(origin: Statement) -> str:
    if origin.vocabulary == "frontmatter":
        return ""
    return f" ({origin.vocabulary} {'preamble' if origin.vocabulary == 'pep' else 'status'})"


# -- files and dates ----------------------------------------------------------------------------


def _unreadable(corpus: Corpus) -> Iterator[Finding]:
    for note in corpus.notes:
        if note.problem is not None:
            yield _finding(
                "E007",
                note.shown,
                1,
                f"cannot be read as a note: {note.problem}",
                "make it a readable UTF-8 text file under the size cap, or move it out of "
                "the folder",
            )
    for refused in corpus.refused:
        yield _finding(
            "E007",
            refused.path,
            1,
            f"cannot be read: {refused.reason}",
            "give the folder read permission, or move it out of the corpus",
        )


def _dates(corpus: Corpus) -> Iterator[Finding]:
    for note in corpus.notes:
        d = note.declarations
        fm = d.frontmatter if d is not None else None
        if fm is None or not fm.present:
            continue
        for err in fm.errors:
            if err.syntax:
                yield _finding(
                    "E008",
                    note.shown,
                    fm.lines.get(err.key, 1),
                    f"{err.key}: {err.message} (got {err.value!r})",
                    "fix the line as the message says; the note is refused until then",
                    "frontmatter",
                )
                continue
            yield _finding(
                "E004",
                note.shown,
                fm.lines.get(err.key, 1),
                f"{err.key}: {err.message} (got {err.value!r})",
                f"write {err.key} as YYYY-MM-DD, a real calendar date (e.g. 2026-03-01)",
                "frontmatter",
            )
        if fm.empty_window:
            yield _finding(
                "E005",
                note.shown,
                fm.lines.get("valid_from", 1),
                f"valid_from {fm.valid_from_raw} is after valid_until {fm.valid_until_raw}: "
                "the window is empty and search reports the note as invalid_metadata",
                "correct the dates, or swap them if they were written the wrong way round",
                "frontmatter",
            )


def _overridden(corpus: Corpus) -> Iterator[Finding]:
    for note in corpus.notes:
        d = note.declarations
        if d is None:
            continue
        for edge in d.edges:
            if edge.overridden and edge.origin.vocabulary in corpus.vocabularies:
                yield _finding(
                    "I001",
                    note.shown,
                    edge.origin.line,
                    f"{edge.origin.text!r}{_where(edge.origin)} is overridden by the "
                    "frontmatter's supersedes: (frontmatter wins where both speak)",
                    "list the reference in the frontmatter too, or remove the header statement",
                    edge.origin.vocabulary,
                )
        r = d.retired
        if r is not None and r.overridden and r.origin.vocabulary in corpus.vocabularies:
            yield _finding(
                "I001",
                note.shown,
                r.origin.line,
                f"{r.origin.text!r}{_where(r.origin)} is overridden by the frontmatter's "
                "valid_until: (frontmatter wins where both speak)",
                "make the two agree, or remove the header statement",
                r.origin.vocabulary,
            )


# -- the graph ----------------------------------------------------------------------------------


class _Graph:
    """Every edge in force, resolved: `succ[a]` holds (b, note declaring it, edge) for each
    statement that `a` supersedes `b`."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.succ: dict[int, list[tuple[int, int, Edge]]] = defaultdict(list)
        self.pairs: set[tuple[int, int]] = set()
        self.declares: set[int] = set()
        self.dangling: list[tuple[int, Edge]] = []
        self.selfs: list[tuple[int, Edge]] = []
        self.ambiguous: list[tuple[int, Edge, tuple[int, ...]]] = []
        for i in range(len(corpus.notes)):
            edges = corpus.edges(i)
            if edges:
                self.declares.add(i)
            for edge in edges:
                target = corpus.resolve(i, edge)
                if target.kind == "dangling":
                    self.dangling.append((i, edge))
                elif target.kind == "self":
                    self.selfs.append((i, edge))
                elif target.kind == "ambiguous":
                    self.ambiguous.append((i, edge, target.notes))
                else:
                    other = target.notes[0]
                    newer, older = (other, i) if edge.reversed else (i, other)
                    self.succ[newer].append((older, i, edge))
                    self.pairs.add((newer, older))
                    self.declares.add(other)

    def linked(self, a: int, b: int) -> bool:
        return (a, b) in self.pairs or (b, a) in self.pairs

    def edge_findings(self) -> Iterator[Finding]:
        notes = self.corpus.notes
        suggest = _Suggester(self.corpus) if self.dangling else None
        for i, edge in self.dangling:
            assert suggest is not None
            close = suggest(edge.key.split("\n", 1)[0], notes[i].key)
            fix = (
                f"did you mean {' or '.join(repr(c) for c in close)}? correct the reference"
                if close
                else "no note by that name or number: add the note it names, or correct the "
                "reference"
            )
            yield _finding(
                "E001",
                notes[i].shown,
                edge.origin.line,
                f"{statement_words(edge)} {edge.reference!r}{_where(edge.origin)} matches no note",
                fix,
                edge.origin.vocabulary,
            )
        for i, edge in self.selfs:
            yield _finding(
                "E002",
                notes[i].shown,
                edge.origin.line,
                f"{statement_words(edge)} {edge.reference!r}{_where(edge.origin)} names this "
                "note itself",
                "remove the reference, or name the note it was meant to",
                edge.origin.vocabulary,
            )
        for i, edge, matches in self.ambiguous:
            names = ", ".join(notes[m].shown for m in matches)
            yield _finding(
                "E006",
                notes[i].shown,
                edge.origin.line,
                f"{statement_words(edge)} {edge.reference!r}{_where(edge.origin)} matches "
                f"{len(matches)} notes: {names}",
                "references resolve by file name, so a folder does not tell them "
                "apart: rename one of them so its file name is unique, then reference that name"
                if edge.origin.vocabulary == "frontmatter"
                else "a number resolves in the note's own folder first, then up its tree; these "
                "share the nearest level: renumber one, or link the file itself",
                edge.origin.vocabulary,
            )

    def cycles(self) -> Iterator[Finding]:
        """One E003 per loop of notes that supersede each other (a strongly connected
        component), reported on its first note in file order, with one cycle through it."""
        notes = self.corpus.notes
        for component in _components(self.succ):
            members = set(component)
            first = min(component, key=lambda n: (notes[n].shown, n))
            path = _cycle_through(first, self.succ, members)
            steps = [notes[n].shown for n in path] + [notes[first].shown]
            _, declarer, edge = next(s for s in self.succ[path[0]] if s[0] == path[1 % len(path)])
            more = len(members) - len(path)
            tail = f" ({more} more notes are in the same loop)" if more > 0 else ""
            yield _finding(
                "E003",
                notes[first].shown,
                edge.origin.line if declarer == first else 1,
                "supersession cycle: " + " supersedes ".join(steps) + tail,
                "remove the statement that points back: a note cannot be both newer and older "
                "than another",
                edge.origin.vocabulary,
            )


def _components(succ: dict[int, list[tuple[int, int, Edge]]]) -> list[list[int]]:
    """Strongly connected components with two or more notes (Tarjan, iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    for root in sorted(succ):
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, pos = work.pop()
            if pos == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            nexts = succ.get(node, [])
            if pos < len(nexts):
                work.append((node, pos + 1))
                child = nexts[pos][0]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component: list[int] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _cycle_through(
    first: int, succ: dict[int, list[tuple[int, int, Edge]]], members: set[int]
) -> list[int]:
    """The shortest cycle from `first` back to itself inside one component (breadth first)."""
    parent: dict[int, int] = {}
    queue = [first]
    seen = {first}
    for node in queue:
        for child, _, _ in succ.get(node, []):
            if child not in members:
                continue
            if child == first:
                path = [node]
                while path[-1] != first:
                    path.append(parent[path[-1]])
                return path[::-1]
            if child not in seen:
                seen.add(child)
                parent[child] = node
                queue.append(child)
    return [first]


class _Suggester:
    """Close names for a dangling key: notes whose keys share three-letter runs with it, ranked
    by difflib, so a 10k-note folder is not compared name by name for every reference."""

    def __init__(self, corpus: Corpus) -> None:
        self.names: dict[str, str] = {}
        self.grams: dict[str, list[str]] = defaultdict(list)
        for key, indices in corpus.by_key.items():
            if key.startswith("#"):
                continue  # an identifier alias (`#adr:5`): numbers are not spelled alike
            note = corpus.notes[indices[0]]
            name = file_name(note) if note.key == key else key
            self.names[key] = name
            for gram in _grams(key.lower()):
                self.grams[gram].append(key)

    def __call__(self, key: str, declarer: str) -> list[str]:
        """Up to three file names close to `key`, never the declaring note's own."""
        shared: Counter[str] = Counter()
        # A run most names share (`-00`, `ote`) ranks nothing and costs a pass over them all.
        limit = max(_COMMON_GRAM, len(self.names) // 10)
        for gram in _grams(key.lower()):
            candidates = self.grams.get(gram, ())
            if len(candidates) <= limit:
                shared.update(candidates)
        shared.pop(declarer, None)
        best = [k for k, _ in shared.most_common(_CANDIDATES)]
        close = difflib.get_close_matches(key, best, n=_SUGGESTIONS, cutoff=0.6)
        return [self.names[k] for k in close]


def _grams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


# -- warnings -----------------------------------------------------------------------------------


def _versioned_siblings(corpus: Corpus, graph: _Graph) -> Iterator[Finding]:
    families: dict[tuple[str, str, str], dict[int, int]] = defaultdict(dict)
    for i, note in enumerate(corpus.notes):
        folder, _, name = note.rel.rpartition("/")
        stem = os.path.splitext(name)[0]
        match = _VERSIONED.fullmatch(stem)
        if match is None:
            continue
        version = int(match.group("version"))
        family = families[(note.root, folder, match.group("base").lower())]
        # Two files with one version (x-v1.md, x_v1.md) are not a succession: keep the first.
        family.setdefault(version, i)
    for family in families.values():
        if len(family) < 2:
            continue
        versions = sorted(family)
        for lower, higher in zip(versions, versions[1:]):
            old, new = family[lower], family[higher]
            if graph.linked(old, new):
                continue
            note = corpus.notes[new]
            old_name = file_name(corpus.notes[old])
            yield _finding(
                "W001",
                note.shown,
                1,
                f"{file_name(note)} looks like the next version of {old_name}, but neither "
                "declares an edge to the other",
                _declare_fix(note, old_name),
            )


def _declare_fix(note: Note, target: str) -> str:
    suffix = os.path.splitext(note.rel)[1].lower()
    if suffix in MARKDOWN_SUFFIXES:
        return f"add `supersedes: {target}` to its frontmatter"
    if suffix == ".rst":
        return f"add `Replaces: {target}` to its preamble"
    return f"declare that it replaces {target} (a .txt note has no frontmatter: use a .md note)"


def _closure_prose(corpus: Corpus, graph: _Graph) -> Iterator[Finding]:
    for i, note in enumerate(corpus.notes):
        d = note.declarations
        if note.text is None or d is None or i in graph.declares:
            continue
        if d.active_retirement(corpus.vocabularies) is not None:
            continue
        fm = d.frontmatter
        if fm is not None and fm.valid_until_raw is not None and _reads_frontmatter(corpus):
            continue
        headings = _heading_lines(note.text)
        current = d.current and any(s.vocabulary in corpus.vocabularies for s in d.statements)
        closures = [
            c
            for c in find_closures(note.text, note.rel, skip_lines(corpus, i))
            # A title naming a subject ("Remove deprecated APIs") narrates no closure, and in a
            # note whose status says it is in force, only a sentence about the note itself does.
            if c.refusal is None
            and c.line not in headings
            and (not current or about_itself(c.sentence, c.phrase))
        ]
        if not closures:
            continue
        first = closures[0]
        more = f" (and {len(closures) - 1} more)" if len(closures) > 1 else ""
        yield _finding(
            "W002",
            note.shown,
            first.line,
            f"prose says {first.phrase!r}{more} but the note declares no edge and no "
            f"valid_until: {_quoted(first.sentence)}",
            _closure_fix(corpus, note, first),
        )


_HEADING_LINE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


def _heading_lines(text: str) -> frozenset[int]:
    return frozenset(
        n for n, line in enumerate(text.split("\n"), 1) if _HEADING_LINE.match(line) is not None
    )


def _standing(corpus: Corpus) -> Iterator[Finding]:
    """SPEC §2.5: nothing unread passes silently (W003); partial statements are shown (I002)."""
    for note in corpus.notes:
        d = note.declarations
        if d is None:
            continue
        for edge in d.standing(UNREAD, corpus.vocabularies):
            origin = edge.origin
            if edge.reversed:
                message = (
                    f"{origin.text!r}{_where(origin)} names a successor recall cannot find "
                    f"({edge.reference!r}): the note is treated as retired and searches mark it "
                    "unread"
                )
                fix = "name the successor by its file or number: `Superseded by [ADR 7](0007-x.md)`"
            else:
                message = (
                    f"{origin.text!r}{_where(origin)} is not a status recall reads: searches mark "
                    "the note unread"
                )
                fix = f"write one of the statuses recall reads ({_KNOWN_STATUSES}), or a "
                fix += "`Superseded by` line naming the successor"
            yield _finding("W003", note.shown, origin.line, message, fix, origin.vocabulary)
        if d.dropped:
            written = len(d.edges) + d.dropped
            yield _finding(
                "W004",
                note.shown,
                d.edges[-1].origin.line,
                f"declares {written} supersession targets; recall reads the first "
                f"{MAX_TARGETS} and ignores {d.dropped}",
                f"name at most {MAX_TARGETS} notes per note, or split the declaration",
                d.edges[-1].origin.vocabulary,
            )
        for edge in d.standing(PARTIAL, corpus.vocabularies):
            origin = edge.origin
            named = f" ({edge.reference})" if edge.key else ""
            yield _finding(
                "I002",
                note.shown,
                origin.line,
                f"{origin.text!r}{_where(origin)} is a partial statement{named}: recorded and "
                "shown, never a full edge, so the note stays in force",
                "if the whole note is replaced, say so without 'partly' / 'in part'; otherwise "
                "nothing to do",
                origin.vocabulary,
            )


_KNOWN_STATUSES = "accepted, proposed, deprecated, rejected, withdrawn, superseded, …"


def _reads_frontmatter(corpus: Corpus) -> bool:
    return "frontmatter" in corpus.vocabularies


def _quoted(sentence: str, limit: int = 100) -> str:
    return f'"{sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"}"'


def _closure_fix(corpus: Corpus, note: Note, closure: Closure) -> str:
    until = "add `valid_until: YYYY-MM-DD` (the last day it held) to its frontmatter"
    if note.rel.lower().endswith(".txt"):
        until = "move it to a .md note with `valid_until: YYYY-MM-DD` in its frontmatter"
    if len(closure.references) != 1:
        return (
            until if not closure.references else f"declare the edge in the newer note, or {until}"
        )
    ref = closure.references[0]
    if closure.direction == "replaces":
        return _declare_fix(note, ref)
    if closure.direction == "replaced_by":
        found = corpus.find(ref)
        target = corpus.notes[found[0]].shown if len(found) == 1 else ref
        return f"add `supersedes: {file_name(note)}` to the frontmatter of {target}"
    return f"if {ref} replaced it, add `supersedes: {file_name(note)}` to {ref}; otherwise {until}"
