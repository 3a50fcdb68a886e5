"""The status reader: what one status line or sentence says about its note, read as real teams
write it (SPEC §2.5).

Owns, in one place for indexing, `lint`, `fix`, `check` and `explain`:
- normalising a line before it is read: strike-through dropped (`~~Accepted~~ Rejected` reads
  "rejected"), markdown emphasis, code marks, emoji and other symbols, brackets, case and
  punctuation ignored;
- the status words (`TERMINAL`: the note stopped being in force; `CURRENT`: it is in force) with
  their common misspellings, "superseded" with or without "by", partial statements;
- the references a line names, in every markdown link form (inline, reference-style with its
  definition anywhere in the file, autolink, wiki link, relative, site-absolute, `#anchor`,
  trailing `/`) or as a bare identifier;
- identifier families (`ADR-7`, `ADR007`, `DR008`, `RFC 1974`, `PEP 8`, `KEP-1234`, `#0005`) and
  numbered file names (`0005-x.md`, `adr-0005-x.md`, `DR008-x.md`, `1974-x.md`) as one key form,
  `#family:number`, compared numerically by the graph (`crates/judgment/src/graph.rs`);
- the date a declaration carries (`2021-05-01`, `21-Feb-2022`, `May 1, 2021`).

Does not own: where a status is written (`recall.vocabularies` finds the lines: PEP preambles,
MADR, Nygard sections, field lines, a note's opening sentences), resolving keys (the graph) or
verdicts. Pure and total: no I/O, never raises.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import unquote

from recall import _core

__all__ = [
    "CURRENT",
    "INACTIVE",
    "MAX_STATEMENT_CHARS",
    "Statement",
    "TERMINAL",
    "Reading",
    "Reference",
    "file_alias",
    "find_date",
    "identifier_key",
    "leading_identifier",
    "link_definitions",
    "normalise",
    "read",
    "reference_key",
    "references",
    "references_at",
]

#: The longest statement kept with an edge: the words are shown, not parsed again.
MAX_STATEMENT_CHARS = 300


@dataclass(frozen=True)
class Statement:
    """Where a declaration was written: its vocabulary, 1-based line and the words (at most
    `MAX_STATEMENT_CHARS`: every edge of a statement keeps them, so a long line must not be
    stored once per target)."""

    vocabulary: str
    line: int
    text: str

    def __post_init__(self) -> None:
        if len(self.text) > MAX_STATEMENT_CHARS:
            object.__setattr__(self, "text", self.text[: MAX_STATEMENT_CHARS - 1] + "…")


#: Terminal status words as written (misspellings included) -> the state recorded. A note whose
#: status holds one of these is no longer in force (SPEC §9: a retired note).
TERMINAL: dict[str, str] = {
    "superseded": "superseded",
    "superceded": "superseded",
    "superceeded": "superseded",
    "superseeded": "superseded",
    "supersceded": "superseded",
    "supersed": "superseded",
    "replaced": "replaced",
    "deprecated": "deprecated",
    "depreciated": "deprecated",
    "rejected": "rejected",
    "declined": "rejected",
    "withdrawn": "withdrawn",
    "obsolete": "obsolete",
    "obsoleted": "obsolete",
    "retired": "retired",
    "abandoned": "abandoned",
    "cancelled": "abandoned",
    "canceled": "abandoned",
    "discontinued": "abandoned",
    "archived": "retired",
    "sunset": "retired",
}
#: Status words of a note in force (one word, or two or three as written).
CURRENT = frozenset(
    {
        "proposed", "proposal", "accepted", "approved", "adopted", "agreed", "decided", "draft",
        "drafting", "active", "final", "implemented", "implementing", "review", "reviewing",
        "reviewed", "open", "done", "complete", "completed", "current", "living",
        "provisional", "pending", "discussion", "experimental", "trial", "planned",
        "wip", "stable", "valid", "ratified", "published", "ready", "started",
        "ongoing", "amended", "in progress", "in review", "under review",
        "under discussion", "in effect", "in force", "work in progress",
        "not started", "for review", "request for comments", "april fool", "implementable",
        "in discussion", "under consideration", "tentative", "trialling", "trialing",
        "scheduled for review", "awaiting review", "active review", "last call",
    }
)  # fmt: skip
#: Status words of a proposal nobody is moving (EIP `Stagnant`, Swift `Returned for revision`,
#: `Previewing`): a known state, not unread, and the note stays in force; nothing decided since
#: replaced what it says.
INACTIVE = frozenset(
    {
        "stagnant", "dormant", "inactive", "idle", "paused", "postponed", "deferred", "on hold",
        "returned for revision", "returned", "previewing",
    }
)  # fmt: skip
#: Terminal only as the word that opens a status value, never in a sentence or a later paragraph
#: ("Moved to the archive in 2020" narrates): `Moved` (an EIP now kept in another repository)
#: leaves a copy here that nobody keeps current.
_VALUE_TERMINAL = {"moved": "moved"}
_SUPERSEDED_FAMILY = frozenset(w for w, s in TERMINAL.items() if s == "superseded")
# Words that end a note in favour of another when followed by `by`, `with`, `in favour of`.
_PASSIVE = _SUPERSEDED_FAMILY | {"replaced", "obsoleted", "deprecated", "retired", "amended"}
# Words that end a note in favour of another only with `in favour of` ("withdrawn by its author"
# names who withdrew it, not what replaced it).
_FAVOURED = frozenset({"withdrawn", "rejected", "declined", "abandoned", "dropped", "archived"})
_ACTIVE = frozenset(
    {"supersedes", "supercedes", "superceeds", "supersceeds", "replaces", "obsoletes", "amends"}
)
_BY = frozenset({"by", "with", "for"})
_QUALIFIERS = frozenset({"partly", "partially", "mostly", "largely", "partial"})
_PARTIAL = _QUALIFIERS | {"part", "parts", "section", "sections", "portion", "portions"}
_NEGATION = frozenset({"not", "no", "never", "nor", "un"})
# Labels a status value may open with: `Status:`, `Note:`, `Update:`, `Current status`.
_LABELS = frozenset({"status", "state", "note", "notes", "update", "decision", "adr"})

_STRIKE = re.compile(r"~~.*?~~|<(del|s|strike)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_ARROW = re.compile(r"\s*(?:→|->|⇒|=>|➡\ufe0f?|⟶|»)\s*")
_INLINE_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?:<([^<>\n]*)>|([^)\s]*))(?:\s+[\"'(][^)]*)?\s*\)"
)
_REF_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\s?\[([^\[\]]*)\]")
_SHORTCUT = re.compile(r"(?<![\]\\])\[([^\[\]]+)\](?![\[(:])")
_AUTOLINK = re.compile(r"<((?:[a-z][a-z0-9+.-]*:)?[^<>\s]+)>", re.IGNORECASE)
_WIKI = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_DEFINITION = re.compile(r"[ ]{0,3}\[([^\[\]]+)\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$")
_FILE = re.compile(
    r"(?<![\w/.\-:])((?:[\w.\-]+/)*[\w.\-]*\w\.(?:md|markdown|mdx|rst|txt|html?))(?![\w/])", re.I
)
# Identifier families: a known family in any case, or any 2–6 capital letters joined by `-`.
_FAMILIES = "adr|dr|rfc|pep|kep|dep|jep|nep|sep|bip|eip|erc|tip|gep|spec|design|decision|record"
_IDENTIFIER = re.compile(
    rf"(?<![\w#/])(?:(?P<fam>(?i:{_FAMILIES}))[-_ #]?|(?P<cap>[A-Z]{{2,6}})-|(?P<hash>#))"
    r"0*(?P<num>[0-9]{1,6})(?![\w])"
)
_DIGIT = re.compile(r"[0-9]")
# One word wrapped in marks only: `Accepted`, `**Rejected**`, `` `Withdrawn` ``, `Final.`
_SINGLE_WORD = re.compile(r"[\s*_`.:!]*([A-Za-z]+)[\s*_`.:!]*")
_BARE_NUMBER = re.compile(r"#?0*([0-9]{1,6})")
# File names: `0005-x`, `adr-0005-x`, `ADR_5_x`, `DR008-x`, `1974-x`, `pep-0008`; never a date.
_FILE_NUMBER = re.compile(r"(?:(?P<fam>[A-Za-z]{2,6})[-_ ]?)?0*(?P<num>[0-9]{1,6})(?:[-_ .].*)?")
_DATE_PREFIX = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TOKEN = re.compile(r"([\U000F0000-\U000FFFFD])|[^\W_]+")
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_ISO_DATE = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")
_DMY_DATE = re.compile(r"(?<![0-9])([0-9]{1,2})[- ]([A-Za-z]{3})[A-Za-z]*\.?[- ]([0-9]{4})")
_MDY_DATE = re.compile(r"\b([A-Za-z]{3})[A-Za-z]*\.?[ ]([0-9]{1,2})(?:st|nd|rd|th)?,?[ ]([0-9]{4})")
# A status word opens its value: "Accepted", "Now deprecated", "⚠️ Deprecated (see below)".
_STATUS_WORDS_AT = 1
_ADVERBS = frozenset(
    {"now", "currently", "formally", "officially", "provisionally", "finally", "fully", "hereby",
     "already", "is", "was", "been", "has", "have", "partly", "partially", "mostly", "largely"}
)  # fmt: skip
_BY_TAIL = re.compile(
    r"\b(?:supers\w*|superc\w*|replaced|obsoleted|deprecated)\s+(?:by|with|in\s+favou?r\s+of)"
    r"\s+([^\n]*)$",
    re.IGNORECASE,
)
_EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*://|mailto:", re.IGNORECASE)
_ISSUE_LINK = re.compile(r"/(?:issues|pull)/([0-9]{1,6})/?$")
_SITE_SUFFIXES = (".html", ".htm")
_INDEX_NAMES = frozenset({"readme", "readme.md", "index", "index.md", "_index.md"})


@dataclass(frozen=True)
class Reference:
    """A note a status names: as written, and the key it resolves by. `key` may hold
    alternatives separated by a newline, tried in order by the graph: a link's path key, then
    the identifier its file name or text carries."""

    written: str
    key: str


@dataclass(frozen=True)
class Reading:
    """What one status line says. `state` is a terminal state (`TERMINAL`'s values) or None;
    `current` is True when a status word of a note in force was read; `successors` and
    `predecessors` are the notes named as replacing this one and as replaced by it; `partial`
    names a partial statement (never a full edge); `unknown` is True when the line reads as a
    status but no status word was found; `date` is the date the line carries."""

    state: str | None = None
    current: bool = False
    successors: tuple[Reference, ...] = ()
    predecessors: tuple[Reference, ...] = ()
    partial: bool = False
    unknown: bool = False
    date: datetime.date | None = None
    #: The words after "superseded by" when they name no note ("the platform team's guideline").
    unresolved: str | None = None
    #: An inactive status was read (`INACTIVE`: `Stagnant`, `Returned for revision`).
    inactive: bool = False

    @property
    def says_anything(self) -> bool:
        return bool(
            self.state
            or self.current
            or self.inactive
            or self.successors
            or self.predecessors
            or self.partial
        )


def normalise(line: str) -> str:
    """The words of a status line, lower case, one space apart: strike-through dropped; emphasis,
    code marks, emoji, symbols, brackets and punctuation gone."""
    return " ".join(_words(_STRIKE.sub(" ", line)))


def _words(text: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(_fold(text)) if m.group(1) is None]


def _fold(text: str) -> str:
    """Lower case. Symbols (emoji, arrows, variation selectors) need no mapping: they are not
    word characters, so `_TOKEN` splits on them as on punctuation."""
    return text.lower()


def link_definitions(text: str) -> dict[str, str]:
    """Reference-style link definitions anywhere in a file: normalised label -> target."""
    found: dict[str, str] = {}
    if "]:" not in text:
        return found
    for line in text.split("\n"):
        match = _DEFINITION.match(line.rstrip("\r"))
        if match is not None:
            found.setdefault(_label(match.group(1)), match.group(2))
    return found


def _label(text: str) -> str:
    return " ".join(text.split()).lower()


def identifier_key(text: str) -> str | None:
    """`#family:number` for a whole reference that is an identifier (`ADR-7`, `ADR007`,
    `RFC 1974`, `#0005`, `0019`), else None."""
    written = text.strip()
    match = _IDENTIFIER.fullmatch(written)
    if match is not None:
        return _id_key(match)
    bare = _BARE_NUMBER.fullmatch(written)
    return f"#:{int(bare.group(1))}" if bare is not None else None


def _id_key(match: re.Match[str]) -> str:
    family = (match.group("fam") or match.group("cap") or "").lower()
    return f"#{family}:{int(match.group('num'))}"


def leading_identifier(text: str) -> str | None:
    """`#family:number` of an identifier that opens the text (`ADR 0001 — Topology`)."""
    match = _IDENTIFIER.match(text.strip().lstrip("*_`[").strip())
    return _id_key(match) if match is not None else None


def reference_key(written: str) -> str:
    """The key a reference as written resolves by: an identifier (`RFC 1974` -> `#rfc:1974`),
    else a file name or link target with its file name's identifier as the alternative."""
    key = identifier_key(written)
    if key is not None:
        return key
    ref = _path_reference(written, "")
    return ref.key if ref is not None else ""


def file_alias(name: str) -> str | None:
    """The identifier a file name carries (`0005-x.md` -> `#:5`, `DR008-x.md` -> `#dr:8`,
    `adr-0005-x.md` -> `#adr:5`), None when it carries none. A date prefix is not a number."""
    stem = name.replace("\\", "/").rsplit("/", 1)[-1]
    if not _DIGIT.search(stem) or _DATE_PREFIX.match(stem):
        return None
    match = _FILE_NUMBER.fullmatch(stem)
    if match is None:
        return None
    return f"#{(match.group('fam') or '').lower()}:{int(match.group('num'))}"


def _path_reference(target: str, text: str) -> Reference | None:
    """A link's target as a reference: its path key, then the identifier of its file name or of
    the link text as the alternative. An external URL counts only by its text."""
    written = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    if _EXTERNAL.match(target) or not written:
        # A web page counts by its text; a repository's issue or pull request by its number
        # too, which names only a note whose folder carries it (`2433-x/README.md`, a KEP).
        issue = _ISSUE_LINK.search(written) if _EXTERNAL.match(target) else None
        named = identifier_key(_plain(text)) or (issue and leading_identifier(_plain(text)))
        keys = [k for k in (named, issue and f"#issue:{int(issue[1])}") if k]
        return Reference(text.strip() or target, "\n".join(keys)) if keys else None
    parts = written.rstrip("/").replace("\\", "/").rsplit("/", 2)
    last = parts[-1]
    if last.lower() in _INDEX_NAMES and len(parts) > 1 and parts[-2] not in ("", ".", ".."):
        # `…/1205-bound-tokens/README.md`: a folder-per-note tree's note is named by its folder.
        last = parts[-2]
    for suffix in _SITE_SUFFIXES:
        if last.lower().endswith(suffix):
            last = last[: -len(suffix)]
    # A relative link names one file from the declaring note's folder (`@` + the path), tried
    # first; then its file name (an index page's name says nothing), then its identifiers.
    keys = [] if written.startswith(("/", "\\")) else [f"@{written}"]
    if last.lower() not in _INDEX_NAMES:
        keys.append(_core.resolution_key(last))
    for alt in (file_alias(last), identifier_key(_plain(text))):
        if alt and alt not in keys:
            keys.append(alt)
    keys = [k for k in keys if k]
    return Reference(written, "\n".join(keys)) if keys else None


def _plain(text: str) -> str:
    return text.replace("`", "").replace("*", "").replace("_", " ").strip()


def references(text: str, definitions: dict[str, str] | None = None) -> list[Reference]:
    """Every note a piece of text names, in the order written, each once."""
    return [ref for ref, _ in references_at(text, definitions)]


def references_at(
    text: str, definitions: dict[str, str] | None = None
) -> list[tuple[Reference, int]]:
    """(reference, offset in `text`) for every note the text names, in order, each once."""
    masked, refs = _extract(text, definitions or {})
    found: list[tuple[Reference, int]] = []
    for m in _REF_CHAR.finditer(masked):
        if ord(m.group(0)) - _REF_BASE == len(found):
            found.append((refs[len(found)], m.start()))
    return found


_REF_BASE = 0xF0000  # a private-use plane: one character stands for one reference
_REF_CHAR = re.compile("[\U000f0000-\U000ffffd]")


def _is_ref(ch: str) -> bool:
    return ord(ch) >= _REF_BASE


def _extract(text: str, definitions: dict[str, str]) -> tuple[str, list[Reference]]:
    """The text with each reference's span replaced by one private-use character standing for
    it (then spaces, so offsets are kept), and the references in the order written, each note
    once: `x-v2.md` and `[[x-v2]]` in one line name one note, written as it first appears."""
    spans: list[tuple[int, Reference]] = []
    # The placeholder characters are the text's own too (icon fonts use that plane): a blank.
    if _REF_CHAR.search(text):
        text = _REF_CHAR.sub(" ", text)

    def mask(ref: Reference | None, match: re.Match[str]) -> str:
        if ref is not None:
            spans.append((match.start(), ref))
        # The placeholder keeps the text's length; the spans say what stood there.
        return "\x01" * (match.end() - match.start())

    if "[" in text:
        text = _WIKI.sub(lambda m: mask(_wiki(m.group(1)), m), text)
        text = _INLINE_LINK.sub(
            lambda m: mask(
                None if m.group(1) else _path_reference(m.group(3) or m.group(4), m.group(2)), m
            ),
            text,
        )
        text = _REF_LINK.sub(
            lambda m: mask(_defined(m.group(2) or m.group(1), m.group(1), definitions), m), text
        )
        text = _SHORTCUT.sub(lambda m: _shortcut(m, definitions, mask), text)
    if "<" in text:
        text = _AUTOLINK.sub(lambda m: mask(_path_reference(m.group(1), ""), m), text)
    if "." in text:
        text = _FILE.sub(lambda m: mask(_path_reference(m.group(1), ""), m), text)
    if _DIGIT.search(text):
        text = _IDENTIFIER.sub(lambda m: mask(Reference(m.group(0), _id_key(m)), m), text)
    if not spans:
        return text.replace("\x01", " "), []
    found: list[Reference] = []
    index: dict[str, int] = {}
    chars = list(text.replace("\x01", " "))
    for start, ref in sorted(spans, key=lambda s: s[0]):
        # One note by its name: `[[x-v2]]` and `x-v2.md` in one line are one reference, which
        # keeps the linked path when either names one.
        name = "\n".join(k for k in ref.key.split("\n") if not k.startswith("@"))
        if name not in index:
            index[name] = len(found)
            found.append(ref)
        elif ref.key.startswith("@") and not found[index[name]].key.startswith("@"):
            found[index[name]] = Reference(found[index[name]].written, ref.key)
        chars[start] = chr(_REF_BASE + index[name])
    return "".join(chars), found


def _wiki(name: str) -> Reference | None:
    key = _core.resolution_key(name)
    if not key:
        return None
    alt = file_alias(key)
    return Reference(f"[[{name.strip()}]]", f"{key}\n{alt}" if alt and alt != key else key)


def _defined(label: str, text: str, definitions: dict[str, str]) -> Reference | None:
    target = definitions.get(_label(label))
    if target is None:
        key = identifier_key(_plain(text))
        return Reference(text.strip(), key) if key else None
    return _path_reference(target, text)


def _shortcut(
    match: re.Match[str],
    definitions: dict[str, str],
    mask: Callable[[Reference | None, re.Match[str]], str],
) -> str:
    label = match.group(1)
    if _label(label) in definitions:
        return mask(_path_reference(definitions[_label(label)], label), match)
    # An undefined `[RFC 1974]` is its words: the identifier inside is read below.
    return f" {label} "


def find_date(text: str) -> datetime.date | None:
    """The first date written in the text (`2021-05-01`, `21-Feb-2022`, `May 1, 2021`)."""
    found: list[tuple[int, datetime.date]] = []
    for match in _ISO_DATE.finditer(text):
        date = _make_date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        if date is not None:
            found.append((match.start(), date))
    for match in _DMY_DATE.finditer(text):
        month = _MONTHS.get(match.group(2).lower())
        date = _make_date(int(match.group(3)), month or 0, int(match.group(1)))
        if date is not None:
            found.append((match.start(), date))
    for match in _MDY_DATE.finditer(text):
        month = _MONTHS.get(match.group(1).lower())
        date = _make_date(int(match.group(3)), month or 0, int(match.group(2)))
        if date is not None:
            found.append((match.start(), date))
    return min(found)[1] if found else None


def _make_date(year: int, month: int, day: int) -> datetime.date | None:
    try:
        return datetime.date(year, month, day)
    except ValueError:
        return None


def _without_dates(text: str) -> str:
    text = _ISO_DATE.sub(" ", text)
    text = _DMY_DATE.sub(" ", text)
    return _MDY_DATE.sub(" ", text)


def read(
    value: str, definitions: dict[str, str] | None = None, *, sentence: bool = False
) -> Reading:
    """Read one status value (`Superseded by [ADR 7](0007-x.md)`, `❌ Rejected`, `Accepted`).
    The status word opens a value (after labels such as `Status:`); with `sentence` it may
    stand anywhere ("This RFC is now deprecated."). Supersession is read anywhere. A value
    with no status word and no supersession is `unknown`."""
    # Most statuses are one word (`Accepted`, `**Rejected**`): read without the machinery.
    single = _SINGLE_WORD.fullmatch(value)
    if single is not None:
        word = single.group(1).lower()
        if word in TERMINAL or word in _VALUE_TERMINAL:
            return Reading(state=TERMINAL.get(word) or _VALUE_TERMINAL[word])
        if word in CURRENT:
            return Reading(current=True)
        if word in INACTIVE:
            return Reading(inactive=True)
    raw = _STRIKE.sub(" ", value)
    # A template's list of choices (`proposed | accepted | deprecated`) is no status; with the
    # choices not taken struck through, the one left is.
    unlinked = _WIKI.sub(" ", _INLINE_LINK.sub(" ", raw)) if "[" in raw else raw
    if len([c for c in unlinked.split("|") if c.strip(" \t[]*_`")]) > 1:
        return Reading(unknown=True)
    # `Proposed → Accepted → Deprecated`: the last step is the status.
    steps = [s for s in _ARROW.split(raw) if s.strip()]
    if len(steps) > 1:
        raw = steps[-1]
    # References first: a date inside a file name (`2026-05-23-x.md`) is the name's, not the
    # statement's.
    masked, refs = _extract(raw, definitions or {})
    date = find_date(masked)
    plain = _without_dates(masked)
    tokens = [
        (m.group(0), ord(m.group(1)) - _REF_BASE if m.group(1) is not None else None)
        for m in _TOKEN.finditer(_fold(plain))
    ]
    reading = _classify(tokens, refs, len(tokens) if sentence else _STATUS_WORDS_AT, sentence)
    if reading.unknown and "](" in raw:
        # `[Deprecated](../README.md#statuses)`: a status word linked to its definition; a
        # link to a section of the note itself (`[Deprecated](#deprecated)`) is navigation.
        unlinked = _INLINE_LINK.sub(
            lambda m: (
                " " if (m.group(3) or m.group(4) or "").startswith("#") else f" {m.group(2)} "
            ),
            raw,
        )
        if unlinked != raw:
            return read(unlinked, definitions, sentence=sentence)
    unresolved = None
    if reading.state is not None and not reading.successors and not reading.partial:
        tail = _BY_TAIL.search(plain)
        words = tail.group(1).strip(" \t.,;:!?*_`'\"()[]") if tail is not None else ""
        if words and not any(_is_ref(ch) for ch in words):
            if (
                len(words.split()) == 1
                and _core.resolution_key(words)
                and not _EXTERNAL.match(words)
            ):
                # `Superseded by new-retry-policy`: one bare name is a reference (SPEC §2.3 key).
                ref = Reference(words, _core.resolution_key(words))
                reading = Reading(reading.state, reading.current, (ref,), reading.predecessors)
            else:
                unresolved = words
    return replace(reading, date=date, unresolved=unresolved)


def _classify(
    tokens: list[tuple[str, int | None]], refs: list[Reference], window: int, sentence: bool
) -> Reading:
    words = [w for w, _ in tokens]
    start = 0
    while start < len(words) and tokens[start][1] is None:
        if words[start] == "current" and words[start + 1 : start + 2] == ["status"]:
            start += 1  # "Current status: …"
        elif words[start] not in _LABELS:
            break
        start += 1
    # The status word opens the value, after adverbs ("Now deprecated", "Partly superseded").
    first = start
    while first < len(words) and tokens[first][1] is None and words[first] in _ADVERBS:
        first += 1

    def after(i: int) -> tuple[Reference, ...]:
        return tuple(refs[ref] for _, ref in tokens[i + 1 :] if ref is not None)

    def negated(i: int) -> bool:
        return i > 0 and words[i - 1] in _NEGATION

    successors: tuple[Reference, ...] = ()
    predecessors: tuple[Reference, ...] = ()
    state: str | None = None
    current = False
    inactive = False
    partial = False
    for i in range(start, len(tokens)):
        word, ref = tokens[i]
        if ref is not None or negated(i):
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        favour = nxt == "in" and i + 3 < len(words) and words[i + 2] in ("favour", "favor")
        if not successors and (
            (word in _PASSIVE and (nxt in _BY or favour))
            or (word in _FAVOURED and favour)
            or (word in _SUPERSEDED_FAMILY and after(i))
        ):
            successors = after(i)
            state = state or TERMINAL.get(word, "superseded")
            partial = partial or word == "amended" or _partial_near(tokens, i)
        elif word in _ACTIVE and not predecessors:
            predecessors = after(i)
            partial = partial or word == "amends" or _partial_near(tokens, i)
        elif i - first >= window:
            continue
        elif word in TERMINAL and state is None:
            state = TERMINAL[word]
            partial = partial or (state == "superseded" and _partial_near(tokens, i))
        elif word in _VALUE_TERMINAL and state is None and not sentence:
            state = _VALUE_TERMINAL[word]
        elif not current and _current_at(words, i):
            current = True
        elif not inactive and _inactive_at(words, i):
            inactive = True
    if partial:
        return Reading(partial=True, successors=successors, predecessors=predecessors)
    if state is not None or successors or predecessors or current or inactive:
        return Reading(state, current, successors, predecessors, inactive=inactive and not current)
    return Reading(unknown=True)


def _partial_near(tokens: list[tuple[str, int | None]], i: int) -> bool:
    """A partial statement: `partly superseded`, `has mostly been superseded`, `superseded in
    part by`, `supersedes the retry section of X` (a scope word before the first reference)."""
    before = [w for w, ref in tokens[max(0, i - 3) : i] if ref is None]
    if any(w in _QUALIFIERS for w in before):
        return True
    seen_ref = 0
    for word, ref in tokens[i + 1 :]:
        if ref is not None:
            seen_ref += 1
            continue
        if seen_ref:
            # "Superseded by [ADR-0016](…) in part": the qualifier right after the reference.
            return (
                word in _QUALIFIERS
                or word == "in"
                and (_next_is(tokens, word, "part") or _next_is(tokens, word, "parts"))
            )
        if word in _PARTIAL:
            return True
    return False


def _next_is(tokens: list[tuple[str, int | None]], word: str, following: str) -> bool:
    words = [w for w, _ in tokens]
    return any(a == word and b == following for a, b in zip(words, words[1:]))


def _current_at(words: list[str], i: int) -> bool:
    return any(" ".join(words[i : i + size]) in CURRENT for size in (3, 2, 1))


def _inactive_at(words: list[str], i: int) -> bool:
    return any(" ".join(words[i : i + size]) in INACTIVE for size in (3, 2, 1))
