"""Edge vocabularies: what a document declares about supersession and its own end, in the words
real corpora already use (SPEC §2.5, §8.4).

Owns: finding where a document speaks about itself, and what it says, in
- `frontmatter`: Validity Frontmatter 1.0 (`supersedes:`, `valid_from:`, `valid_until:`; parsed by
  `recall.frontmatter`), exact references (SPEC §2.3),
- `pep`: the RFC 822 preamble of a PEP-style `.rst` file (`Status:`, `Superseded-By:`,
  `Replaces:`, `PEP:`, `Title:`, a dated `Resolution:`),
- `madr`: front matter `status:`, `date:`, `superseded_by:` / `superseded-by:` / `replaces:`, and
  the `* Status:` / `* Date:` bullets of MADR 2,
- `nygard`: a "Status" section of an ADR, and status field lines in a note's opening
  (`Status: …`, `**Status:** …`, `- **Superseded by**: …`, a `| Status | … |` table row),
- `prose`: a sentence in the note's opening saying that this note is superseded, replaced or
  obsoleted by a named note ("This RFC has been superseded by [RFC 1974][]"),

turning them into edges (each with its vocabulary, line and the words written; partial and
unread statements kept with their standing, never in force), a retirement (a terminal state,
dated when the declaration carries a date) and the document's alias (the identifier its file
name or title carries: `#adr:5`, `#pep:8`) that numbered references resolve to; and the rule that
frontmatter wins where both speak. What a status line says is read by `recall.status`.

Does not own: resolving keys to documents (the graph), verdicts (a retirement is judged
`expired` by the Rust trust layer), or which vocabularies are in force for a store (a setting the
store keeps). Pure and total: no I/O, never raises.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from recall import _core, status
from recall.closures import comment_step, fence_step
from recall.frontmatter import FieldError, Frontmatter, parse
from recall.status import Statement

__all__ = [
    "ALL",
    "MAX_TARGETS",
    "PARTIAL",
    "SETTINGS",
    "UNREAD",
    "VOCABULARIES",
    "Declarations",
    "Edge",
    "Retirement",
    "Sidecar",
    "Statement",
    "declare",
    "read_sidecar",
    "in_force",
]

#: Every vocabulary, in the order their statements are reported.
VOCABULARIES = ("frontmatter", "pep", "madr", "sidecar", "nygard", "prose")
#: The `--vocabularies` settings and the vocabularies each one reads.
SETTINGS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "frontmatter": frozenset({"frontmatter"}),
    "all": frozenset(VOCABULARIES),
}
ALL = "all"
#: The most supersession targets one note declares that are read; a note naming more (a
#: `Superseded-By:` line of thousands of numbers) keeps the first ones (`recall lint` W004).
MAX_TARGETS = 64

#: The standing of a statement that is not a full edge (SPEC §2.5).
PARTIAL = "partial"
UNREAD = "unread"

_RST_SUFFIXES = (".rst",)
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")

# RFC 822: `Name: value`, continuation lines start with whitespace, a blank line ends it.
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)")
_PEP_NUMBER = re.compile(r"(?:pep[-_ ]?)?0*([0-9]{1,5})", re.IGNORECASE)
_PEP_SPACED = re.compile(r"\bpep[ \t]+([0-9])", re.IGNORECASE)
_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*")
_DIGIT = re.compile(r"[0-9]")


@dataclass(frozen=True)
class Edge:
    """A declared supersession. `reversed` is False when this document replaces the reference
    (`supersedes:`, `Replaces:`) and True when the reference replaces this document
    (`Superseded-By:`, `superseded by ADR-0005`). `key` is what the reference resolves by: the
    SPEC §2.3 key, or an identifier `#family:number` (`#adr:5`); alternatives are separated by a
    newline (a link's path key, then its file name's identifier)."""

    reference: str
    key: str
    reversed: bool
    origin: Statement
    overridden: bool = False
    #: None: a full edge. `partial` ("partly superseded by X") or `unread` (a status-like
    #: statement the reader could not classify): recorded and shown, never in force.
    standing: str | None = None


@dataclass(frozen=True)
class Retirement:
    """A terminal state (`withdrawn`, `rejected`, `deprecated`, `superseded`): the document is
    no longer in force from `since` (None: the state change is undated and holds at every
    instant)."""

    state: str
    since: datetime.date | None
    origin: Statement
    overridden: bool = False


@dataclass(frozen=True)
class Declarations:
    """Everything one document declares, with frontmatter's precedence already applied."""

    frontmatter: Frontmatter | None
    title: str | None
    alias: str | None
    edges: tuple[Edge, ...]
    retired: Retirement | None
    #: Every status statement read, those saying the note is in force included.
    statements: tuple[Statement, ...] = ()
    #: A status statement says the note is in force (`Accepted`) and none retires it.
    current: bool = False
    #: Edges declared beyond `MAX_TARGETS`, which are not read (`recall lint` W004).
    dropped: int = 0

    @property
    def errors(self) -> tuple[FieldError, ...]:
        return self.frontmatter.errors if self.frontmatter is not None else ()

    def active_edges(self, vocabularies: frozenset[str] = SETTINGS[ALL]) -> list[Edge]:
        """The edges in force under a `--vocabularies` setting."""
        return [
            e
            for e in self.edges
            if not e.overridden and e.standing is None and e.origin.vocabulary in vocabularies
        ]

    def standing(self, kind: str, vocabularies: frozenset[str] = SETTINGS[ALL]) -> list[Edge]:
        """The statements of one standing (`partial`, `unread`) under a setting."""
        return [
            e
            for e in self.edges
            if e.standing == kind and not e.overridden and e.origin.vocabulary in vocabularies
        ]

    def statement_lines(self) -> frozenset[int]:
        """Every line a vocabulary read as a statement (prose readers skip them)."""
        lines = {e.origin.line for e in self.edges}
        if self.retired is not None:
            lines.add(self.retired.origin.line)
        return frozenset(lines)

    def active_retirement(self, vocabularies: frozenset[str] = SETTINGS[ALL]) -> Retirement | None:
        r = self.retired
        if r is None or r.overridden or r.origin.vocabulary not in vocabularies:
            return None
        return r


def in_force(setting: str) -> frozenset[str]:
    """The vocabularies a `--vocabularies` setting reads; ValueError names the choices."""
    try:
        return SETTINGS[setting]
    except KeyError:
        raise ValueError(
            f"unknown vocabularies setting {setting!r}; choose one of {', '.join(SETTINGS)}"
        ) from None


def declare(path: str, text: str, sidecar: Sidecar | None = None) -> Declarations:
    """Read every vocabulary from one document; `path` (relative or not) picks the format by
    suffix and gives the alias its file name; `sidecar` is the metadata file that belongs to a
    markdown note (`read_sidecar`). Never raises."""
    lower = path.lower()
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if lower.endswith(_RST_SUFFIXES):
        return _bounded(_pep(name, text))
    if lower.endswith(_MARKDOWN_SUFFIXES):
        return _bounded(_markdown(name, text, sidecar))
    return Declarations(None, None, None, (), None)


@dataclass(frozen=True)
class Sidecar:
    """A metadata file that belongs to a note (vocabulary `sidecar`): a YAML or JSON mapping
    (`kep.yaml` beside a KEP's `README.md`) whose `status:`, successor, predecessor and reason
    keys are read as front matter's are. `name` is the file as shown (a statement names it);
    `lines` the 1-based line of each key; `comments` a key's YAML comment (`status: replaced #
    replaced by keps/sig-node/2133-…`), read with its value."""

    name: str
    fields: Mapping[str, str | tuple[str, ...]]
    lines: Mapping[str, int]
    comments: Mapping[str, str]


def read_sidecar(name: str, text: str) -> Sidecar | None:
    """A metadata file's mapping, or None when it holds none (not a mapping, not YAML or JSON
    this reader takes). Pure and total."""
    if name.lower().endswith(".json"):
        return _json_sidecar(name, text)
    fm = parse(f"---\n{text.rstrip()}\n---\n")
    if not fm.present or not fm.fields:
        return None
    lines = {key: line - 1 for key, line in fm.lines.items()}
    raw = text.split("\n")
    comments: dict[str, str] = {}
    for key in fm.fields:
        at = lines.get(key, 0)
        written = raw[at - 1] if 0 < at <= len(raw) else ""
        cut = written.find(" #")
        if cut >= 0 and written[cut + 2 :].strip():
            comments[key] = written[cut + 2 :].strip()
    return Sidecar(name, fm.fields, lines, comments)


def _json_sidecar(name: str, text: str) -> Sidecar | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fields: dict[str, str | tuple[str, ...]] = {}
    for key, value in data.items():
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            fields[key] = str(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            fields[key] = tuple(value)
    raw = text.split("\n")
    lines = {
        key: next((i for i, line in enumerate(raw, 1) if f'"{key}"' in line), 0) for key in fields
    }
    return Sidecar(name, fields, lines, {})


def _bounded(said: Declarations) -> Declarations:
    """At most `MAX_TARGETS` edges a note, in the order written; the rest are counted."""
    if len(said.edges) <= MAX_TARGETS:
        return said
    return replace(said, edges=said.edges[:MAX_TARGETS], dropped=len(said.edges) - MAX_TARGETS)


# -- markdown: frontmatter, MADR, Nygard sections, field lines, the opening's sentences ----------


@dataclass
class _Said:
    """One statement a vocabulary found, before it becomes edges and a retirement."""

    origin: Statement
    reading: status.Reading


def _markdown(name: str, text: str, sidecar: Sidecar | None = None) -> Declarations:
    from recall.opening import opening_sentences

    fm = parse(text)
    edges: list[Edge] = []
    supersedes_line = fm.lines.get("supersedes", 0)
    for ref in fm.supersedes:
        edges.append(
            Edge(
                ref,
                _core.resolution_key(ref),
                False,
                Statement("frontmatter", supersedes_line, f"supersedes: {ref}"),
            )
        )
    body_start = fm.body_line if fm.present else 1
    body = fm.body if fm.present else text
    declares = _core.may_declare(body)
    # Reference-style links are looked up only where a statement may use them.
    front = fm.fields and any(
        k.lower() in _FRONT_KEYS or _REASON_KEY.fullmatch(k) for k in fm.fields
    )
    definitions = status.link_definitions(text) if declares or front else {}
    said, date = _front_statements(fm.fields, fm.lines, definitions) if front else ([], None)
    if sidecar is not None:
        side, side_date = _front_statements(
            sidecar.fields, sidecar.lines, definitions, sidecar.name, sidecar.comments
        )
        said.extend(side)
        date = date or side_date
    body_date = None
    if declares:
        lines = text.split("\n")
        body_said, body_date, opening_end = _body_statements(lines, body_start, definitions)
        said.extend(body_said)
        consumed = frozenset(s.origin.line for s in said)
        said.extend(
            _Said(origin, reading)
            for origin, reading in opening_sentences(
                text, name, definitions, consumed, body_start, opening_end
            )
        )
    header_edges, retired = _assemble(said, date or body_date)
    # SPEC §8.4: frontmatter wins where both speak (a header's forward edges; the note's own
    # sentences are not a header).
    if fm.supersedes:
        header_edges = [
            replace(e, overridden=True)
            if not e.reversed and e.standing is None and e.origin.vocabulary != "prose"
            else e
            for e in header_edges
        ]
    if retired is not None and fm.valid_until_raw is not None:
        retired = replace(retired, overridden=True)
    edges.extend(header_edges)
    title = fm.fields.get("title")
    return Declarations(
        frontmatter=fm,
        title=title.strip() if isinstance(title, str) and title.strip() else None,
        alias=status.file_alias(name) or _title_alias(body),
        edges=tuple(edges),
        retired=retired,
        statements=tuple(s.origin for s in said),
        current=retired is None and any(s.reading.current for s in said),
    )


# Front matter keys that name this note's successor or predecessor (MADR, KEP and site
# generators write them besides Validity Frontmatter's `supersedes:`).
_SUCCESSOR_KEYS = ("superseded_by", "superseded-by", "supersededby", "replaced_by", "replaced-by")
_PREDECESSOR_KEYS = ("replaces",)
_FRONT_KEYS = frozenset({"status", "date", *_SUCCESSOR_KEYS, *_PREDECESSOR_KEYS})
# Front matter keys whose value says why the note ended, in words that may name what replaced
# it (EIP `withdrawal-reason: Superseded by EIP-7702`): read for a successor only.
_REASON_KEY = re.compile(r"(?:[a-z]+[-_])?(?:reason|resolution|notes?)", re.IGNORECASE)
# Values that name no note: `superseded-by: - n/a` (a KEP's way of saying none).
_NOTHING = frozenset({"", "n/a", "na", "none", "null", "nil", "-", "—", "~", "tbd", "tba", "no"})
# "The authors prefer [EIP-4750](…)": a reason that names the preferred note.
_PREFER = re.compile(r"\bprefer(?:s|red)?\b", re.IGNORECASE)


def _front_statements(
    mapping: Mapping[str, str | tuple[str, ...]],
    lines: Mapping[str, int],
    definitions: dict[str, str],
    sidecar: str | None = None,
    comments: Mapping[str, str] | None = None,
) -> tuple[list[_Said], datetime.date | None]:
    """The statements of a front matter block (vocabulary `madr`) or of a note's metadata file
    named `sidecar` (vocabulary `sidecar`, each statement naming the file)."""
    said: list[_Said] = []
    vocabulary = "madr" if sidecar is None else "sidecar"
    shown = "" if sidecar is None else f"{sidecar}: "
    comments = comments or {}
    fields = {key.lower(): key for key in mapping}
    value = mapping.get(fields.get("status", "status"))
    if isinstance(value, str) and value.strip():
        key = fields["status"]
        comment = comments.get(key)
        written = f"{key}: {value}" + (f" # {comment}" if comment else "")
        origin = Statement(vocabulary, lines.get(key, 0), shown + written)
        read = _unquote(value.strip()) + (f" ({comment})" if comment else "")
        said.append(_Said(origin, status.read(read, definitions)))
    for keys, successor in ((_SUCCESSOR_KEYS, True), (_PREDECESSOR_KEYS, False)):
        for lower in keys:
            if lower not in fields:
                continue
            key = fields[lower]
            raw = mapping[key]
            values = (raw,) if isinstance(raw, str) else raw
            refs = tuple(
                r
                for v in values
                if _unquote(v.strip()).strip().lower() not in _NOTHING
                for r in _named(_unquote(v.strip()))
            )
            if not refs:
                continue
            written = f"{shown}{key}: {', '.join(values)}"
            origin = Statement(vocabulary, lines.get(key, 0), written)
            reading = (
                status.Reading(state="superseded", successors=refs)
                if successor
                else status.Reading(predecessors=refs)
            )
            said.append(_Said(origin, reading))
    for key, raw in mapping.items():
        if isinstance(raw, str) and raw.strip() and _REASON_KEY.fullmatch(key):
            refs = _reason_successors(_unquote(raw.strip()), definitions)
            if refs:
                origin = Statement(vocabulary, lines.get(key, 0), f"{shown}{key}: {raw}")
                said.append(_Said(origin, status.Reading(state="superseded", successors=refs)))
    date = mapping.get(fields.get("date", "date"))
    return said, status.find_date(date) if isinstance(date, str) else None


def _reason_successors(value: str, definitions: dict[str, str]) -> tuple[status.Reference, ...]:
    """The notes a reason names as replacing its note: "Superseded by EIP-7702", "Withdrawn in
    favor of [EIP-2681](…)", "The authors prefer [EIP-4750](…)"; none for a partial statement."""
    reading = status.read(value, definitions, sentence=True)
    if reading.partial:
        return ()
    if reading.successors:
        return reading.successors
    prefer = _PREFER.search(value)
    return tuple(status.references(value[prefer.end() :], definitions)) if prefer else ()


def _named(value: str) -> tuple[status.Reference, ...]:
    """The notes a front matter value names: links and identifiers, else the value as a key."""
    refs = status.references(value)
    if refs:
        return tuple(refs)
    key = _core.resolution_key(value)
    alias = status.file_alias(key) if key else None
    # `/keps/sig-node/2133-kubelet-credential-providers`: the name, then the number it carries.
    keys = f"{key}\n{alias}" if alias and alias != key else key
    return (status.Reference(value, keys),) if key else ()


# A field line: `Status: Accepted`, `* Status: rejected`, `**Status:** Deprecated`,
# `- **Superseded by**: RFC-0025 (…)`, `Date: 2021-03-04`.
_FIELD = re.compile(
    r"[ \t]*(?:>[ \t]*)*(?P<bullet>[*+-][ \t]+)?(?:\*\*|__)?(?P<name>status|superseded[ _-]by"
    r"|replaced[ _-]by|date|decision[ _-]date)(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*"
    r"(?P<value>.*)",
    re.IGNORECASE,
)
_TABLE_ROW = re.compile(r"[ \t]*\|[ \t]*(?:\*\*)?(status)(?:\*\*)?[ \t]*\|(.*?)\|?[ \t]*$", re.I)
# A status section's later paragraphs count only when they open with a status or a supersession.
_STATUS_OPENING = frozenset(status.TERMINAL) | {
    "supersedes", "supercedes", "replaces", "obsoletes", "amended", "amends", "partly",
    "partially", "mostly", "status",
}  # fmt: skip
# Headings that open a status section ("## Status: Accepted" carries its value inline).
_STATUS_HEADINGS = frozenset({"status", "current status", "decision status", "adr status"})
#: How far into a note's body the opening reaches at most (lines).
_OPENING_LINES = 60
#: The opening ends where the third section holding prose begins (title block, status or summary,
#: first section).
_OPENING_SECTIONS = 3


def _body_statements(
    lines: list[str], body_start: int, definitions: dict[str, str]
) -> tuple[list[_Said], datetime.date | None, int]:
    """Status sections, field lines and dates of the body; and the last line of the opening."""
    said: list[_Said] = []
    date: datetime.date | None = None
    fence = ""  # the code fence open, "" outside one
    comment = False  # an HTML comment is open
    parents: list[int] = []  # the levels of the headings that enclose this line
    section: str | None = None  # "status" or "date" while one is open
    section_level = 0
    paragraph = 0  # paragraphs seen in the open status section
    blank_before = True
    spoke = False  # the open status section said something
    pending_unknown: _Said | None = None
    prose_sections = 0
    section_has_prose = False
    opening_end = min(len(lines), body_start + _OPENING_LINES)
    for number in range(body_start, len(lines) + 1):
        raw = lines[number - 1].rstrip("\r")
        stripped = raw.strip()
        # One character decides which pattern may match: most lines are plain prose.
        lead = stripped[:1]
        if comment or "<!--" in raw:
            comment, raw = comment_step(comment, raw)
            stripped = raw.strip()
            if not stripped:
                continue  # a comment holds no statement and ends no paragraph
            lead = stripped[:1]
        if fence or lead in ("`", "~"):
            fence, code = fence_step(fence, raw)
            if code:
                continue
        heading = _ATX.fullmatch(raw) if lead == "#" else None
        if heading is not None:
            level = len(heading.group(1))
            title = heading.group(2).lower()
            while parents and parents[-1] >= level:
                parents.pop()
            # A status heading nested in another section past the opening (an API's `### Status`
            # field deep in a design) is not the note's status; one under the title is.
            nested = len(parents) > 1 or (len(parents) == 1 and parents[0] > 1)
            parents.append(level)
            words = status.normalise(title) if "status" in title or "date" in title else ""
            if section_has_prose:
                prose_sections += 1
                section_has_prose = False
                if prose_sections == _OPENING_SECTIONS - 1 and number - 1 < opening_end:
                    opening_end = number - 1
            if section == "status" and pending_unknown is not None and not spoke:
                said.append(pending_unknown)
            pending_unknown = None
            inline_value = heading.group(2).lower().lstrip("*_ ").startswith("status:")
            deep = nested and number > opening_end
            if (words in _STATUS_HEADINGS or inline_value) and not deep:
                section, section_level, paragraph, spoke = "status", level, 0, False
                inline = heading.group(2).split(":", 1)
                if len(inline) == 2 and inline[1].strip():
                    reading = status.read(inline[1], definitions)
                    said.append(_Said(Statement("nygard", number, raw.strip()), reading))
                    spoke = True
            elif words in ("date", "decision date"):
                section, section_level = "date", level
            elif section is not None and level <= section_level:
                section = None
            continue
        if not stripped:
            blank_before = True
            continue
        section_has_prose = True
        if section == "date":
            date = date or status.find_date(stripped)
            continue
        if section == "status":
            if blank_before:
                paragraph += 1
            blank_before = False
            if paragraph == 1 or _opens_status(stripped):
                reading = status.read(stripped, definitions)
                origin = Statement("nygard", number, stripped)
                if reading.says_anything:
                    said.append(_Said(origin, reading))
                    spoke = True
                elif paragraph == 1 and pending_unknown is None:
                    pending_unknown = _Said(origin, reading)
            continue
        blank_before = False
        if number > opening_end or (":" not in raw and "|" not in raw):
            continue
        field = _FIELD.fullmatch(raw)
        table = _TABLE_ROW.fullmatch(raw) if field is None else None
        if field is None and table is None:
            continue
        name = (field.group("name") if field else table.group(1)).lower()  # type: ignore[union-attr]
        value = (field.group("value") if field else table.group(2)).strip()  # type: ignore[union-attr]
        if name in ("date", "decision date", "decision_date", "decision-date"):
            date = date or status.find_date(value)
            continue
        if not value:
            continue
        vocabulary = "madr" if field is not None and field.group("bullet") else "nygard"
        origin = Statement(vocabulary, number, stripped)
        if name == "status":
            said.append(_Said(origin, status.read(value, definitions)))
        else:
            reading = status.read(f"superseded by {value}", definitions)
            said.append(_Said(origin, reading))
    if section == "status" and pending_unknown is not None and not spoke:
        said.append(pending_unknown)
    return said, date, opening_end


def _opens_status(line: str) -> bool:
    words = status.normalise(line).split()
    return bool(words) and words[0] in _STATUS_OPENING


def _assemble(
    said: list[_Said], near: datetime.date | None
) -> tuple[list[Edge], Retirement | None]:
    """Edges and the retirement from the statements, in the order found: a terminal state the
    first statement gives wins; partial and unread statements are kept with their standing."""
    edges: list[Edge] = []
    retired: Retirement | None = None
    seen: set[tuple[str, bool, str | None]] = set()

    def add(edge: Edge) -> None:
        mark = (edge.key, edge.reversed, edge.standing)
        if mark not in seen or not edge.key:
            seen.add(mark)
            edges.append(edge)

    for item in said:
        r, origin = item.reading, item.origin
        if r.partial:
            for ref in r.successors or r.predecessors:
                add(Edge(ref.written, ref.key, bool(r.successors), origin, standing=PARTIAL))
            if not (r.successors or r.predecessors):
                add(Edge(origin.text, "", True, origin, standing=PARTIAL))
            continue
        if r.unknown:
            add(Edge(origin.text, "", False, origin, standing=UNREAD))
            continue
        for ref in r.successors:
            add(Edge(ref.written, ref.key, True, origin))
        for ref in r.predecessors:
            add(Edge(ref.written, ref.key, False, origin))
        if r.unresolved:
            add(Edge(r.unresolved, "", True, origin, standing=UNREAD))
        if r.state is not None and retired is None:
            state = "superseded" if r.successors else r.state
            retired = Retirement(state, r.date or near, origin)
    return edges, retired


def _title_alias(body: str) -> str | None:
    """The identifier a note's title opens with (`# ADR 0001 — Deployment topology`)."""
    for line in body.split("\n", 5)[:5]:
        if not line.lstrip(" ").startswith("#"):
            continue
        heading = _ATX.fullmatch(line.rstrip("\r"))
        if heading is not None:
            title = heading.group(2)
            return status.leading_identifier(title) if _DIGIT.search(title) else None
    return None


# -- PEP preambles ------------------------------------------------------------------------------


def _pep(name: str, text: str) -> Declarations:
    from recall.opening import opening_sentences

    headers = _preamble(text)
    if headers is None:
        return Declarations(None, None, status.file_alias(name), (), None)
    fields = {key.lower(): (value, line) for key, value, line in headers}
    said: list[_Said] = []
    if "status" in fields:
        value, line = fields["status"]
        origin = Statement("pep", line, f"{_written(headers, 'status')}: {value}")
        said.append(_Said(origin, status.read(value)))
    for key, successor in (("superseded-by", True), ("replaces", False)):
        if key in fields:
            value, line = fields[key]
            origin = Statement("pep", line, f"{_written(headers, key)}: {value}")
            refs = tuple(_pep_references(value))
            reading = (
                status.Reading(successors=refs) if successor else status.Reading(predecessors=refs)
            )
            said.append(_Said(origin, reading))
    # A PEP's resolution is dated (`Resolution: … 21-Feb-2022`); its status holds from then.
    resolved = status.find_date(fields["resolution"][0]) if "resolution" in fields else None
    lines = text.split("\n")
    consumed = frozenset(line for _, _, line in headers)
    opening_end = min(len(lines), headers[-1][2] + _OPENING_LINES)
    said.extend(
        _Said(origin, reading)
        for origin, reading in opening_sentences(
            text, name, {}, consumed, headers[-1][2] + 1, opening_end
        )
    )
    edges, retired = _assemble(said, resolved)
    alias = None
    if "pep" in fields:
        number = _PEP_NUMBER.fullmatch(fields["pep"][0].strip())
        if number is not None:
            alias = f"#pep:{int(number.group(1))}"
    title = fields.get("title", ("", 0))[0].strip() or None
    return Declarations(
        frontmatter=None,
        title=title,
        alias=alias or status.file_alias(name),
        edges=tuple(edges),
        retired=retired,
        statements=tuple(s.origin for s in said),
        current=retired is None and any(s.reading.current for s in said),
    )


def _written(headers: list[tuple[str, str, int]], key: str) -> str:
    return next(k for k, _, _ in headers if k.lower() == key)


def _preamble(text: str) -> list[tuple[str, str, int]] | None:
    """The header fields (name, value, line) of an RFC 822 preamble at the top of the text, or
    None when the text does not open with one (two fields at least, one of PEP/Title/Status)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip("\ufeff \t\r"):
        i += 1
    headers: list[tuple[str, str, int]] = []
    while i < len(lines):
        raw = lines[i].rstrip("\r").lstrip("\ufeff")
        if not raw.strip():
            break
        if raw[0] in " \t" and headers:
            name, value, line = headers[-1]
            headers[-1] = (name, f"{value} {raw.strip()}".strip(), line)
        else:
            match = _HEADER.fullmatch(raw)
            if match is None:
                break
            headers.append((match.group(1), match.group(2).strip(), i + 1))
        i += 1
    names = {name.lower() for name, _, _ in headers}
    if len(headers) < 2 or not names & {"pep", "title", "status"}:
        return None
    return headers


def _pep_references(value: str) -> Iterable[status.Reference]:
    for token in re.split(r"[,\s]+", _PEP_SPACED.sub(r"PEP-\1", value.strip())):
        token = token.strip()
        if not token:
            continue
        number = _PEP_NUMBER.fullmatch(token)
        if number is not None:
            yield status.Reference(token, f"#pep:{int(number.group(1))}")
        else:
            yield status.Reference(token, _core.resolution_key(token))


# -- values -------------------------------------------------------------------------------------


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1]
    return value
