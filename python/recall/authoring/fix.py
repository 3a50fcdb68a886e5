"""`recall fix`: the `supersedes:` edges that a folder's own prose proves, proposed as edits to
Validity Frontmatter and written only on request (SPEC §8.4).

Owns: turning closure phrases into proposals when, and only when, they prove an edge (no
refusal, a known direction, exactly one reference that resolves to exactly one other note, no
edge already declared), the reason for every closure it does not propose, and the byte-exact
edit of a file's frontmatter: the UTF-8 BOM, the line endings and every other line are kept,
a `supersedes:` line is added (or an existing value extended), and the file is replaced
atomically with its mode kept. Writes Validity Frontmatter only, never header vocabularies.
Does not own: finding the phrases (`recall.closures`), reading notes and resolving
references (`recall.authoring.corpus`), or printing (`recall.cli.lint`).
"""

from __future__ import annotations

import difflib
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from recall.authoring.corpus import Corpus, Note, scan
from recall.authoring.lint import file_name, skip_lines
from recall.closures import Closure, find_closures
from recall.errors import UsageError
from recall.frontmatter import _strip_comment, parse
from recall.vocabularies import PARTIAL, in_force
from recall.walk import MARKDOWN_SUFFIXES
from recall.writing import write_whole

__all__ = [
    "REFUSALS",
    "EditError",
    "FixReport",
    "Proposal",
    "Refused",
    "add_supersedes",
    "fix",
    "plan",
]

#: Why a closure was not turned into an edit.
REFUSALS = (
    "reported_speech",
    "hedge",
    "partial_scope",
    "negated",
    "no_reference",
    "ambiguous_reference",
    "dangling_reference",
    "self_reference",
    "unknown_direction",
    "already_declared",
    "contradicts_declared",
    "not_markdown",
    "would_override_header",
    "cannot_edit",
)

_SUPERSEDES = "supersedes"
_EOL = re.compile(r"\r\n|\r|\n")
# The member lines of SPEC §2.1, as `recall.frontmatter` reads them.
_KEY_LINE = re.compile(r"(\w[\w.-]*):(?:[ \t](.*))?")
_ITEM_LINE = re.compile(r"([ \t]*-[ \t]+)(.*)")
# A value written without quotes that every reader takes as written.
_PLAIN = re.compile(r"[\w.+@()-](?:[\w.+@() -]*[\w.+@()-])?")


class EditError(Exception):
    """An edit that cannot be made so that the file says exactly what was proposed."""


@dataclass(frozen=True)
class Proposal:
    """Add `key: value` to the frontmatter of `file`, on the strength of `evidence`."""

    file: str
    path: str
    value: str
    evidence_file: str
    evidence_line: int
    phrase: str
    sentence: str
    direction: str
    key: str = _SUPERSEDES
    #: The 1-based line of `file` the edit lands on (0 until the edit is computed).
    line: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "key": self.key,
            "value": self.value,
            "direction": self.direction,
            "evidence": {
                "file": self.evidence_file,
                "line": self.evidence_line,
                "phrase": self.phrase,
                "sentence": self.sentence,
            },
        }


@dataclass(frozen=True)
class Refused:
    """A closure phrase `fix` does not act on, and why (`reason` is one of REFUSALS)."""

    file: str
    line: int
    reason: str
    phrase: str
    sentence: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "reason": self.reason,
            "phrase": self.phrase,
            "sentence": self.sentence,
            "detail": self.detail,
        }


@dataclass
class FixReport:
    """What `fix` proposes, what it refuses, and (with `apply`) what it wrote."""

    proposals: list[Proposal]
    refusals: list[Refused]
    files: int
    applied: bool
    diffs: dict[str, str] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "applied": self.applied,
            "files": self.files,
            "proposals": [p.to_dict() for p in self.proposals],
            "refusals": [r.to_dict() for r in self.refusals],
            "written": self.written,
            "failed": [{"file": f, "error": e} for f, e in self.failed],
            "seconds": round(self.seconds, 4),
        }


def fix(
    paths: Iterable[str | os.PathLike[str]], *, apply: bool = False, vocabularies: str = "all"
) -> FixReport:
    """Propose the edges the notes under `paths` prove; write them when `apply` is true.

    Raises UsageError for a missing path or an unknown `vocabularies` setting. A file that
    cannot be written is recorded in `failed`, never raised."""
    start = time.perf_counter()
    paths = list(paths)
    if not paths:
        raise UsageError("recall fix: no path given; pass a folder of notes")
    try:
        in_force(vocabularies)
    except ValueError as err:
        raise UsageError(f"recall fix: {err}") from None
    corpus = scan(paths, vocabularies=vocabularies, command="recall fix")
    proposals, refusals = plan(corpus)
    report = FixReport([], refusals, len(corpus.notes), apply)
    by_path: dict[str, list[Proposal]] = defaultdict(list)
    for p in proposals:
        by_path[p.path].append(p)
    for path, group in by_path.items():
        shown = group[0].file
        try:
            data = _read(path)
        except OSError as err:
            report.failed.append((shown, _why(err)))
            continue
        try:
            new, lines = add_supersedes(data, [p.value for p in group])
        except EditError as err:
            report.refusals.extend(
                Refused(
                    p.evidence_file,
                    p.evidence_line,
                    "cannot_edit",
                    p.phrase,
                    p.sentence,
                    f"{shown}: {err}",
                )
                for p in group
            )
            continue
        report.proposals.extend(_at(p, line) for p, line in zip(group, lines))
        report.diffs[shown] = _diff(shown, data, new)
        if apply:
            try:
                write_whole(path, new)
            except OSError as err:
                report.failed.append((shown, _why(err)))
                continue
            report.written.append(shown)
    report.proposals.sort(key=lambda p: (p.file, p.line))
    report.refusals.sort(key=lambda r: (r.file, r.line))
    report.seconds = time.perf_counter() - start
    return report


def _at(p: Proposal, line: int) -> Proposal:
    return Proposal(
        p.file,
        p.path,
        p.value,
        p.evidence_file,
        p.evidence_line,
        p.phrase,
        p.sentence,
        p.direction,
        p.key,
        line,
    )


def _why(err: Exception) -> str:
    if isinstance(err, OSError):
        return err.strerror or str(err)
    return str(err)


# -- what the prose proves ----------------------------------------------------------------------


def plan(corpus: Corpus) -> tuple[list[Proposal], list[Refused]]:
    """The proposals the notes' closure phrases prove, and every closure refused with why."""
    declared = _declared(corpus)
    proposals: dict[tuple[int, int], Proposal] = {}
    refusals: list[Refused] = []
    for i, note in enumerate(corpus.notes):
        if note.text is None:
            continue
        for closure in find_closures(note.text, note.rel, skip_lines(corpus, i, prose=False)):
            outcome = _judge(corpus, declared, i, closure)
            if isinstance(outcome, Refused):
                refusals.append(outcome)
            elif (outcome[0], outcome[1]) not in proposals:
                newer, older = outcome
                proposals[(newer, older)] = _proposal(corpus, i, newer, older, closure)
    # Two closures that prove opposite edges prove nothing.
    contradicted = {pair for pair in proposals if (pair[1], pair[0]) in proposals}
    for pair in sorted(contradicted):
        p = proposals.pop(pair)
        refusals.append(
            Refused(
                p.evidence_file,
                p.evidence_line,
                "contradicts_declared",
                p.phrase,
                p.sentence,
                "another sentence says the opposite",
            )
        )
    return list(proposals.values()), refusals


def _declared(corpus: Corpus) -> set[tuple[int, int]]:
    """(newer, older) for every resolved edge in force, and every frontmatter edge whatever the
    setting: fix writes frontmatter, so it never repeats what frontmatter already says. A note's
    own sentences (`prose`) are what fix turns into frontmatter, so they do not count."""
    pairs: set[tuple[int, int]] = set()
    for i, note in enumerate(corpus.notes):
        d = note.declarations
        if d is None:
            continue
        for edge in d.edges:
            vocabulary = edge.origin.vocabulary
            if (
                edge.overridden
                or edge.standing is not None
                or vocabulary == "prose"
                or (vocabulary not in corpus.vocabularies and vocabulary != "frontmatter")
            ):
                continue
            target = corpus.resolve(i, edge)
            if target.kind == "resolved":
                other = target.notes[0]
                pairs.add((other, i) if edge.reversed else (i, other))
    return pairs


def _partial_between(corpus: Corpus, a: int, b: int) -> str | None:
    """The note (shown) whose partial statement links `a` and `b`, if either says partly."""
    for one, other in ((a, b), (b, a)):
        d = corpus.notes[one].declarations
        if d is None:
            continue
        for edge in d.standing(PARTIAL):
            if edge.key and other in corpus.find(edge.reference, near=one):
                return corpus.notes[one].shown
    return None


def _judge(
    corpus: Corpus, declared: set[tuple[int, int]], i: int, closure: Closure
) -> tuple[int, int] | Refused:
    note = corpus.notes[i]

    def refuse(reason: str, detail: str) -> Refused:
        return Refused(note.shown, closure.line, reason, closure.phrase, closure.sentence, detail)

    if closure.refusal is not None:
        return refuse(closure.refusal, _REFUSAL_DETAIL[closure.refusal])
    refs = closure.references
    if not refs:
        return refuse("no_reference", "the sentence names no note")
    if len(refs) > 1:
        return refuse(
            "ambiguous_reference", f"the sentence names {len(refs)} references: {', '.join(refs)}"
        )
    ref = refs[0]
    if closure.direction is None:
        return refuse(
            "unknown_direction", f"the wording does not say which of it and {ref} is newer"
        )
    found = corpus.find(ref)
    if not found:
        return refuse("dangling_reference", f"{ref} matches no note")
    if len(found) > 1:
        names = ", ".join(corpus.notes[n].shown for n in found)
        return refuse("ambiguous_reference", f"{ref} matches {len(found)} notes: {names}")
    other = found[0]
    if other == i:
        return refuse("self_reference", f"{ref} is this note")
    newer, older = (i, other) if closure.direction == "replaces" else (other, i)
    partial = _partial_between(corpus, newer, older)
    if partial is not None:
        return refuse("partial_scope", f"{partial} says the replacement is partial")
    if (newer, older) in declared:
        return refuse("already_declared", f"the edge is declared ({_edge(corpus, newer, older)})")
    if (older, newer) in declared:
        return refuse(
            "contradicts_declared", f"the opposite edge is declared ({_edge(corpus, older, newer)})"
        )
    editor = corpus.notes[newer]
    if os.path.splitext(editor.rel)[1].lower() not in MARKDOWN_SUFFIXES:
        return refuse(
            "not_markdown",
            f"{editor.shown} would carry the edge but has no Validity Frontmatter (fix writes "
            "frontmatter only, never header vocabularies)",
        )
    # Frontmatter wins where both speak (SPEC §8.4): a new `supersedes:` would silence the
    # header's own forward edges, whatever this run's setting.
    d = editor.declarations
    headers = [] if d is None else [e for e in d.edges if not e.reversed and not e.overridden]
    if any(e.origin.vocabulary not in ("frontmatter", "prose") for e in headers):
        return refuse(
            "would_override_header",
            f"a frontmatter supersedes: in {editor.shown} would override its header's edges",
        )
    if len(corpus.find(file_name(corpus.notes[older]))) != 1:
        return refuse(
            "ambiguous_reference",
            f"{file_name(corpus.notes[older])} names more than one note, so a supersedes: "
            "naming it would not resolve",
        )
    return newer, older


_REFUSAL_DETAIL = {
    "reported_speech": "someone else's words, not the note's own statement",
    "hedge": "hedged or conditional: it does not say the change happened",
    "partial_scope": "only part of the note is replaced",
    "negated": "the sentence says it did not happen",
}


def _edge(corpus: Corpus, newer: int, older: int) -> str:
    return f"{corpus.notes[newer].shown} supersedes {corpus.notes[older].shown}"


def _proposal(corpus: Corpus, i: int, newer: int, older: int, closure: Closure) -> Proposal:
    editor: Note = corpus.notes[newer]
    return Proposal(
        file=editor.shown,
        path=os.path.realpath(editor.path),
        value=file_name(corpus.notes[older]),
        evidence_file=corpus.notes[i].shown,
        evidence_line=closure.line,
        phrase=closure.phrase,
        sentence=closure.sentence,
        direction=closure.direction or "",
    )


# -- the edit -----------------------------------------------------------------------------------


def add_supersedes(data: bytes, values: list[str]) -> tuple[bytes, list[int]]:
    """`data` with `values` added to its frontmatter's `supersedes:`, every other byte kept,
    and the 1-based line each value lands on. Raises EditError when the file is not UTF-8 or
    the edited file would not read back as exactly the old references plus `values`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise EditError(f"not UTF-8 text (byte {err.start})") from None
    n_bom = len(text) - len(text.lstrip("\ufeff"))
    lines = _split(text[n_bom:])
    landed = _edit(lines, values)
    new = text[:n_bom] + "".join(content + eol for content, eol in lines)
    _verify(text, new, values)
    return new.encode("utf-8"), landed


def _split(text: str) -> list[tuple[str, str]]:
    """(content, line ending) pairs that join back to exactly `text`."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _EOL.finditer(text):
        out.append((text[pos : m.start()], m.group(0)))
        pos = m.end()
    if pos < len(text) or not out:
        out.append((text[pos:], ""))
    return out


def line_ending(text: str) -> str:
    """The file's most common line ending (`\\n` when it has none)."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    if crlf and crlf >= lf and crlf >= cr:
        return "\r\n"
    return "\r" if cr > lf else "\n"


def _block(lines: list[tuple[str, str]]) -> tuple[int, int] | None:
    """(opening, closing) line indices of the frontmatter block, as SPEC §2.1 recognises it."""
    i = 0
    while i < len(lines) and not lines[i][0].strip():
        i += 1
    if i == len(lines) or lines[i][0].rstrip() != "---" or not lines[i][1]:
        return None
    has_mapping = False
    for j in range(i + 1, len(lines)):
        content = lines[j][0].rstrip()
        if content == "---":
            return (i, j) if has_mapping else None
        if _KEY_LINE.fullmatch(content) is not None:
            has_mapping = True
    return None


def _edit(lines: list[tuple[str, str]], values: list[str]) -> list[int]:
    """Edit `lines` in place; the 1-based line of each added value."""
    eol = line_ending("".join(e for _, e in lines))
    block = _block(lines)
    if block is None:
        # No block: a new one at the top, after any BOM (kept by the caller).
        lines[0:0] = [("---", eol), (f"{_SUPERSEDES}: {_flow(values)}", eol), ("---", eol)]
        return [2] * len(values)
    opening, closing = block
    eol = lines[opening][1]
    key_at = None
    for k in range(opening + 1, closing):
        m = _KEY_LINE.fullmatch(lines[k][0].rstrip())
        if m is not None and m.group(1) == _SUPERSEDES:
            key_at = k  # the last one wins, as the reader takes it
    if key_at is None:
        lines.insert(closing, (f"{_SUPERSEDES}: {_flow(values)}", eol))
        return [closing + 1] * len(values)
    content, ending = lines[key_at]
    colon = content.index(":") + 1
    after = content[colon:]
    value_start = colon + len(after) - len(after.lstrip(" \t"))
    value = _strip_comment(after.strip())
    if value:
        written = parse(f"---\n{_SUPERSEDES}: {value}\n---\n").fields.get(_SUPERSEDES)
        end = value_start + len(value)
        if isinstance(written, tuple) and written:
            # A flow sequence `[a, b]`: the new items go before its closing bracket.
            extra = ", " + ", ".join(_item(v) for v in values)
            lines[key_at] = (content[: end - 1] + extra + content[end - 1 :], ending)
        elif isinstance(written, tuple):
            lines[key_at] = (content[:value_start] + _flow(values) + content[end:], ending)
        else:
            # A scalar becomes a flow sequence of it and the new references.
            both = "[" + ", ".join([_item(value, written=True)] + [_item(v) for v in values]) + "]"
            lines[key_at] = (content[:value_start] + both + content[end:], ending)
        return [key_at + 1] * len(values)
    last_item = None
    for k in range(key_at + 1, closing):
        stripped = lines[k][0].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _ITEM_LINE.fullmatch(lines[k][0].rstrip()) is None:
            break
        last_item = k
    if last_item is None:
        # `supersedes:` with no value: the value goes after the colon (a comment stays after).
        lines[key_at] = (content[:colon] + " " + _flow(values) + content[colon:], ending)
        return [key_at + 1] * len(values)
    item = _ITEM_LINE.fullmatch(lines[last_item][0].rstrip())
    assert item is not None
    dash = item.group(1)
    item_eol = lines[last_item][1] or eol
    new_items = [(dash + _item(v), item_eol) for v in values]
    lines[last_item + 1 : last_item + 1] = new_items
    return [last_item + 2 + n for n in range(len(values))]


def _item(value: str, *, written: bool = False) -> str:
    """One reference as a YAML flow item. `written` values keep their quotes when they have
    them; anything a flow sequence would split or unwrap is quoted."""
    if written and len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value
    if _PLAIN.fullmatch(value) is not None:
        return value
    if '"' not in value:
        return f'"{value}"'
    if "'" not in value:
        return f"'{value}'"
    raise EditError(f"cannot write {value!r} as a YAML value (it holds both kinds of quote)")


def _flow(values: list[str]) -> str:
    if len(values) == 1:
        return _item(values[0])
    return "[" + ", ".join(_item(v) for v in values) + "]"


def _verify(old: str, new: str, values: list[str]) -> None:
    """The edited file reads back as the old one plus exactly `values`, and nothing else."""
    before = parse(_lf(old))
    after = parse(_lf(new))
    if list(after.supersedes) != list(before.supersedes) + values:
        raise EditError(
            "the edited frontmatter would not read back as the proposed supersedes: "
            f"(got {list(after.supersedes)!r}); edit it by hand"
        )
    rest_before = {k: v for k, v in before.fields.items() if k != _SUPERSEDES}
    rest_after = {k: v for k, v in after.fields.items() if k != _SUPERSEDES}
    if rest_before != rest_after or before.body != after.body:
        raise EditError("the edit would change more than supersedes:; edit it by hand")


def _lf(text: str) -> str:
    # SPEC §2.1 reads lines ended by `\n`; an old Mac file (`\r` only) is read the same way here.
    return _EOL.sub("\n", text)


# -- the files ----------------------------------------------------------------------------------


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _diff(shown: str, old: bytes, new: bytes) -> str:
    a = old.decode("utf-8").splitlines()
    b = new.decode("utf-8").splitlines()
    return "\n".join(difflib.unified_diff(a, b, fromfile=shown, tofile=shown, lineterm="", n=1))
