"""Closure prose: sentences of a note that narrate an end ("superseded by", "replaced by",
"deprecated", "no longer valid") and what they name (SPEC §8.4).

Owns: finding those phrases in a note's prose (never in its frontmatter, a PEP preamble, code
fences, inline code, or lines a vocabulary already read as a declaration), the sentence each sits
in, the references that sentence names, which way the wording points (this note was replaced,
or this note replaces), and why a phrase does not prove an edge: reported speech, a hedge, a
partial scope or a negation. Does not own: resolving references (`recall.authoring.corpus`),
rules (lint), proposals (fix, check). Pure: no I/O, never raises.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Literal

from recall import status
from recall.frontmatter import parse

__all__ = ["Closure", "Direction", "Refusal", "fence_step", "find_closures"]

Direction = Literal["replaced_by", "replaces"]
Refusal = Literal["reported_speech", "hedge", "partial_scope", "negated"]


@dataclass(frozen=True)
class Closure:
    """One closure phrase. `direction` is "replaced_by" when the note (or what it describes) was
    replaced by the reference, "replaces" when the note replaces it, None when the wording does
    not say. `refusal` is why the phrase proves no edge, None when nothing holds it back."""

    line: int
    phrase: str
    sentence: str
    direction: Direction | None
    references: tuple[str, ...]
    refusal: Refusal | None


# Alternatives are tried left to right at each position, so the longer phrase comes first.
# Written in lower case and matched against lower-cased text (`_choose`).
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<passive>deprecated\s+in\s+favou?r\s+of|(?:superseded|replaced|obsoleted)\s+by"
    r"|(?:made|rendered)\s+obsolete\s+by)"
    r"|(?P<active>supersedes|replaces|obsoletes)"
    r"|(?P<state>no\s+longer\s+(?:be\s+)?(?:valid|used|in\s+use|applies|apply|applicable"
    r"|current|accurate|true|relevant|maintained|supported|recommended|in\s+effect|in\s+force"
    r"|holds?|the\s+case|needed|required|correct|use|rely\s+on|follow)"
    r"|obsolete|deprecated|superseded|retired|withdrawn)"
    r"|(?P<base>supersede|replace)"
    r")\b"
)
_ANYCASE = re.compile(_PHRASE.pattern, re.I)

# Wording that keeps a phrase from proving anything. Each is searched in a part of the sentence
# chosen by `_refusal`.
_NEGATION = re.compile(
    r"\b(?:not|never|no|nor|neither|without|hardly|nothing|none|nobody)\b|n't\b", re.I
)
_SPEECH = re.compile(
    r"\b(?:said|says|say|told|tells|claims?|claimed|believes?|believed|thinks?|thought"
    r"|suggest(?:s|ed)|argu(?:es|ed)|mention(?:s|ed)|wrote|writes|stat(?:es|ed)\s+that"
    r"|reported|reports\s+that|heard|rumou?r(?:s|ed)?|allegedly|supposedly|insists?|insisted)\b",
    re.I,
)
_ACCORDING = re.compile(r"\baccording\s+to\b", re.I)
# "It was superseded, he said." (the speaker after the words)
_SPEECH_AFTER = re.compile(
    r",\s*(?:\S+\s+){0,3}(?:said|says|claimed|claims|wrote|writes|thinks|thought|believes"
    r"|reported|told\s+\w+|insisted|insists)\W*$",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:may|might|could|should|would|will|shall|probably|perhaps|possibly|likely|maybe"
    r"|eventually|(?:plan(?:s|ned|ning)?|intend(?:s|ed|ing)?|expect(?:s|ed|ing)?"
    r"|want(?:s|ed|ing)?|propos(?:e|es|ed|ing)|hop(?:e|es|ed|ing))\s+(?:to|that)"
    r"|(?:is|are|was|were|be|been)\s+proposed|going\s+to|consider(?:s|ed|ing)?"
    r"|seems?|appears?\s+to|apparently|hopefully|tentatively|pending|tbd|someday)\b|'ll\b",
    re.I,
)
# A directive before "no longer" ("should no longer be used") closes; it does not hedge.
_DIRECTIVE_TAIL = re.compile(r"\b(?:should|will|shall|can|must)\s*$|'ll\s*$", re.I)
_CONDITION = re.compile(r"\b(?:if|unless|whether|assuming|provided\s+that|in\s+case)\b", re.I)
_PARTIAL = re.compile(
    r"\b(?:sections?|subsections?|paragraphs?|chapters?|appendix|clauses?|parts?\s+of"
    r"|portions?|partly|partially|in\s+part|steps?\s+\d+|the\s+\w+\s+step|tables?\s+\d+"
    r"|items?\s+\d+|bullets?|the\s+rest\s+of|some\s+of)\b",
    re.I,
)
# The start of a clause: hedges and negations are read in the clause the phrase sits in.
_CLAUSE = re.compile(r"[;:\u2014]|\s-\s|\bbut\b|\bhowever\b|\bwhile\b|\bwhereas\b", re.I)
# "... superseded by this note", "[new](new.md) replaces it": the note itself is the object.
_SELF_AFTER = re.compile(r"^[\W_]*(?:this|the\s+present|the\s+current|it)\b", re.I)

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A link to a section of the note itself (`[Deprecated](#deprecated)`): navigation, never prose.
_SELF_LINK = re.compile(r"\[[^\[\]]*\]\(\s*#[^()\s]*\s*\)")

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]+|$)")
_QUOTE = re.compile(r"(?: {0,3}>[ \t]?)+")
_ITEM = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+")
_PREAMBLE_LINE = re.compile(r"[A-Za-z][A-Za-z0-9-]*:")
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]\u201d\u2019*_]*\s+")
_ABBREVIATION = re.compile(r"(?:^|\W)(?:e\.g|i\.e|etc|vs|cf|approx|no|nr|mr|mrs|dr|st|fig)$", re.I)
_SPACE = re.compile(r"\s+")
_DETERMINER = re.compile(
    r"\b(?:the|a|an|any|each|every|all|its|their|our|your|other|some|which|whose)\s+$", re.I
)
_QUOTES = ('"', "\u201c", "\u201d")

_MARKDOWN = (".md", ".markdown", ".mdx")


def find_closures(
    text: str,
    path: str,
    skip_lines: frozenset[int] = frozenset(),
    *,
    lines: tuple[int, int] | None = None,
    definitions: dict[str, str] | None = None,
) -> list[Closure]:
    """Every closure phrase in the prose of one note, in the order written (one per sentence).

    `path` picks the format by suffix (frontmatter for markdown, a PEP preamble for `.rst`);
    `skip_lines` are 1-based lines already read as declarations (a Nygard status line). With
    `lines` (first, last), only those lines of the body are read (the caller knows where it
    starts); `definitions` are the file's reference-style links when the caller has them."""
    if not _may_close(text):
        return []
    all_lines = text.split("\n")
    if lines is None:
        first = _first_body_line(text, all_lines, path.lower())
        last = len(all_lines)
    else:
        first, last = lines
    if definitions is None:
        definitions = status.link_definitions(text)
    lines_ = all_lines[:last]
    found: list[Closure] = []
    for block in _blocks(lines_, first, skip_lines):
        joined = block.text
        if not _may_close(joined):
            continue
        masked = _mask(joined)
        for start, end in _sentences(masked):
            if not _may_close(masked[start:end]):
                continue
            closure = _closure(joined[start:end], masked[start:end], start, block, definitions)
            if closure is not None:
                found.append(closure)
    return found


def _may_close(text: str) -> bool:
    """Whether the text can hold a closure phrase at all: substring tests on the lower-cased
    text, several times faster than one case-insensitive alternation (every `_PHRASE` word
    holds one of these)."""
    lower = text.lower()
    return (
        "supersed" in lower
        or "replac" in lower
        or "deprecat" in lower
        or "longer" in lower
        or "obsolet" in lower
        or "retired" in lower
        or "withdrawn" in lower
    )


# -- where the prose is -------------------------------------------------------------------------


def _first_body_line(text: str, lines: list[str], lower: str) -> int:
    if lower.endswith(_MARKDOWN):
        fm = parse(text)
        return fm.body_line if fm.present else 1
    if lower.endswith(".rst"):
        return _after_preamble(lines)
    return 1


def _after_preamble(lines: list[str]) -> int:
    """The first line after a PEP-style RFC 822 preamble (SPEC §8.4), 1 when there is none."""
    i = 0
    while i < len(lines) and not lines[i].strip("\ufeff \t\r"):
        i += 1
    headers = 0
    while i < len(lines):
        raw = lines[i].rstrip("\r").lstrip("\ufeff")
        if not raw.strip():
            break
        if raw[0] in " \t" and headers:
            pass
        elif _PREAMBLE_LINE.match(raw):
            headers += 1
        else:
            return 1
        i += 1
    return i + 1 if headers >= 2 else 1


@dataclass
class _Block:
    """A paragraph, heading, list item or table row, joined with single spaces; `starts` are
    the offsets in `text` where each source line begins and `numbers` their 1-based lines."""

    text: str
    starts: list[int]
    numbers: list[int]

    def line_at(self, offset: int) -> int:
        return self.numbers[bisect.bisect_right(self.starts, offset) - 1]


class _Builder:
    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.numbers: list[int] = []
        self.size = 0

    def add(self, content: str, number: int) -> None:
        if self.parts:
            self.size += 1
        self.starts.append(self.size)
        self.numbers.append(number)
        self.parts.append(content)
        self.size += len(content)

    def flush(self) -> None:
        if self.parts:
            self.blocks.append(_Block(" ".join(self.parts), self.starts, self.numbers))
        self.parts, self.starts, self.numbers, self.size = [], [], [], 0


def fence_step(fence: str, line: str) -> tuple[str, bool]:
    """CommonMark code fences, one line at a time: the fence open after `line` ("" for none)
    and whether `line` is code or a fence line rather than prose."""
    opened = _FENCE.match(line)
    if opened is not None and opened.group(1)[0] == "`" and "`" in line[opened.end() :]:
        opened = None  # a backtick fence's info string holds no backtick: ```x``` is code
    if fence:
        # A fence closes on a run of the same character, at least as long, alone on its line.
        closes = (
            opened is not None
            and opened.group(1)[0] == fence[0]
            and len(opened.group(1)) >= len(fence)
            and not line[opened.end() :].strip()
        )
        return ("" if closes else fence), True
    if opened is not None:
        return opened.group(1), True
    return "", False


def comment_step(comment: bool, line: str) -> tuple[bool, str]:
    """HTML comments, one line at a time: whether a comment is open after `line`, and the line
    with what comments hold blanked (a template's `<!-- when the KEP was retired … -->` is no
    prose and no status)."""
    if not comment and "<!--" not in line:
        return False, line
    out: list[str] = []
    at = 0
    while at < len(line):
        if comment:
            end = line.find("-->", at)
            if end < 0:
                out.append(" " * (len(line) - at))
                return True, "".join(out)
            out.append(" " * (end + 3 - at))
            at, comment = end + 3, False
        else:
            start = line.find("<!--", at)
            if start < 0:
                out.append(line[at:])
                break
            out.append(line[at:start])
            at, comment = start, True
    return comment, "".join(out)


def _blocks(lines: list[str], first: int, skip_lines: frozenset[int]) -> list[_Block]:
    builder = _Builder()
    fence = ""
    comment = False
    for number in range(first, len(lines) + 1):
        line = lines[number - 1].rstrip("\r")
        was = fence
        fence, code = fence_step(fence, line) if not comment else (fence, False)
        if code:
            if not was:
                builder.flush()
            continue
        comment, line = comment_step(comment, line)
        if number in skip_lines or not line.strip():
            builder.flush()
            continue
        quote = _QUOTE.match(line)
        if quote is not None:
            line = line[quote.end() :]
            if not line.strip():  # a `>` line alone ends a quoted paragraph
                builder.flush()
                continue
        heading = _HEADING.match(line)
        item = _ITEM.match(line) if heading is None else None
        if heading is not None or item is not None or line.lstrip().startswith("|"):
            builder.flush()
        if heading is not None:
            builder.add(line[heading.end() :].strip(), number)
            builder.flush()
            continue
        builder.add((line[item.end() :] if item is not None else line).strip(), number)
    builder.flush()
    return builder.blocks


def _mask(text: str) -> str:
    """The text with inline code and links to the note's own sections blanked and emphasis
    marks as spaces, offsets unchanged."""
    if "`" in text:
        text = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    if "](" in text:
        text = _SELF_LINK.sub(lambda m: " " * len(m.group(0)), text)
    if "*" in text:
        text = text.replace("*", " ")
    return text


def _sentences(masked: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for end in _SENTENCE_END.finditer(masked):
        # The abbreviations are short: the few characters before the stop decide.
        if _ABBREVIATION.search(masked[max(0, end.start() - 8) : end.start()]) is not None:
            continue
        spans.append((start, end.start() + len(end.group(0).rstrip())))
        start = end.end()
    if start < len(masked):
        spans.append((start, len(masked)))
    return spans


# -- one sentence -------------------------------------------------------------------------------


def _closure(
    sentence: str, masked: str, offset: int, block: _Block, definitions: dict[str, str]
) -> Closure | None:
    match = _choose(masked)
    if match is None:
        return None
    kind = match.lastgroup or "state"
    before = masked[: match.start()]
    after = masked[match.end() :]
    refusal = _refusal(masked, before, after, match)
    if kind == "base" and refusal is None:
        # "replace" alone is an ordinary verb; it counts only where the wording holds it back.
        return None
    references = _references(sentence, definitions)
    return Closure(
        line=block.line_at(offset + match.start()),
        phrase=_SPACE.sub(" ", match.group(0).lower()),
        sentence=_SPACE.sub(" ", sentence).strip(),
        direction=_direction(kind, references, match, after),
        references=tuple(ref for ref, _ in references),
        refusal=refusal,
    )


def _choose(masked: str) -> re.Match[str] | None:
    """The phrase that speaks for the sentence: a directional one, else a state, else a bare
    verb (which counts only when hedged)."""
    state: re.Match[str] | None = None
    base: re.Match[str] | None = None
    lower = masked.lower()
    # Matching the lower-cased text case-sensitively is several times faster than re.I; a
    # character whose lower case is longer (rare) would shift offsets, so it falls back.
    found = _PHRASE.finditer(lower) if len(lower) == len(masked) else _ANYCASE.finditer(masked)
    for match in found:
        kind = match.lastgroup
        if kind in ("passive", "active"):
            return match
        if kind == "state" and state is None and not _attributive(masked, match):
            state = match
        elif kind == "base" and base is None:
            base = match
    return state or base


def _attributive(masked: str, match: re.Match[str]) -> bool:
    """A state word after a determiner ("the superseded note", "a deprecated flag") names a
    kind of thing; it does not say that something ended."""
    if " " in match.group(0):
        return False
    return _DETERMINER.search(masked[max(0, match.start() - 24) : match.start()]) is not None


def _clause_before(before: str) -> str:
    bounds = list(_CLAUSE.finditer(before))
    return before[bounds[-1].end() :] if bounds else before


def _clause_after(after: str) -> str:
    first = _CLAUSE.search(after)
    return after[: first.start()] if first is not None else after


def _refusal(sentence: str, before: str, after: str, match: re.Match[str]) -> Refusal | None:
    clause = _clause_before(before)
    near = " ".join(clause.split()[-3:])
    if _NEGATION.search(near) is not None or clause.lower().endswith("non-"):
        return "negated"
    if _SPEECH.search(before) is not None or _ACCORDING.search(sentence) is not None:
        return "reported_speech"
    if _SPEECH_AFTER.search(after) is not None:
        return "reported_speech"
    if sum(before.count(q) for q in _QUOTES) % 2 == 1:
        return "reported_speech"
    hedged = clause
    if match.group(0).lower().startswith("no"):
        hedged = _DIRECTIVE_TAIL.sub("", clause)
    # The clause the phrase sits in, both sides: "replaces the retry section of X", "if".
    scope = f"{clause} {match.group(0)} {_clause_after(after)}"
    if _HEDGE.search(hedged) is not None or _CONDITION.search(scope) is not None:
        return "hedge"
    if _PARTIAL.search(scope) is not None:
        return "partial_scope"
    return None


def _direction(
    kind: str, references: list[tuple[str, int]], match: re.Match[str], after: str
) -> Direction | None:
    if kind == "state":
        return None
    named_before = any(pos < match.start() for _, pos in references)
    named_after = any(pos >= match.end() for _, pos in references)
    self_after = _SELF_AFTER.match(after) is not None
    if kind == "passive":
        # "X is superseded by Y": the note (or what it describes) was replaced by Y, unless the
        # object is the note itself: "[old](old.md) is superseded by this note".
        if named_after:
            return "replaced_by"
        if self_after:
            return "replaces"
        return None if named_before else "replaced_by"
    # "This note replaces Y"; "[new](new.md) replaces this note" reads the other way round.
    if named_after:
        return "replaces"
    if named_before:
        return "replaced_by" if self_after else None
    return "replaces"


def _references(sentence: str, definitions: dict[str, str]) -> list[tuple[str, int]]:
    """(reference as written, offset in the sentence), in the order written, each note once:
    every link form and identifier family the status reader knows (`recall.status`)."""
    return [(ref.written, pos) for ref, pos in status.references_at(sentence, definitions)]
