"""Edge vocabularies: what a document declares about supersession and its own end, in the words
real corpora already use (SPEC §8.4).

Owns: reading declarations from
- `frontmatter`: Validity Frontmatter 1.0 (`supersedes:`, `valid_from:`, `valid_until:`; parsed by
  `recall.frontmatter`),
- `pep`: the RFC 822 preamble of a PEP-style `.rst` file (`Status:`, `Superseded-By:`,
  `Replaces:`, `PEP:`, `Title:`),
- `madr`: MADR's `status:` / `date:` front matter keys, and the `* Status:` / `* Date:` bullets of
  MADR 2,
- `nygard`: the "Status" section of a Nygard-style ADR (`Superseded by [..](..)`, `Supersedes ..`,
  `Deprecated`, `Rejected`),

turning them into edges (each with its vocabulary, line and the words written), a retirement
(a terminal state: withdrawn, rejected, deprecated, superseded with no named successor) and the
document's alias (`pep-0008`, `adr-0005`) that numbered references resolve to; and the rule that
frontmatter wins where both speak: a frontmatter `supersedes:` overrides a header's forward edges,
a frontmatter `valid_until:` overrides a header's retirement. Overridden statements are kept,
marked, so `explain` and `lint` can show them.

Does not own: resolving keys to documents (the graph, `recall.authoring.corpus` for lint),
verdicts (a retirement is judged `expired` by the Rust trust layer), or which vocabularies are in
force for a store (a setting the store keeps). Pure and total: no I/O, never raises.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import unquote

from recall import _core
from recall.frontmatter import FieldError, Frontmatter, parse, parse_date

__all__ = [
    "ALL",
    "SETTINGS",
    "VOCABULARIES",
    "Declarations",
    "Edge",
    "Retirement",
    "Statement",
    "declare",
    "in_force",
]

#: Every vocabulary, in the order their statements are reported.
VOCABULARIES = ("frontmatter", "pep", "madr", "nygard")
#: The `--vocabularies` settings and the vocabularies each one reads.
SETTINGS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "frontmatter": frozenset({"frontmatter"}),
    "all": frozenset(VOCABULARIES),
}
ALL = "all"

#: Terminal states: the document stopped being in force (SPEC §9: a retired note).
TERMINAL = ("withdrawn", "rejected", "deprecated", "superseded")

_RST_SUFFIXES = (".rst",)
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")

# RFC 822: `Name: value`, continuation lines start with whitespace, a blank line ends it.
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)")
_PEP_NUMBER = re.compile(r"(?:pep[-_ ]?)?0*([0-9]{1,5})", re.IGNORECASE)
_PEP_SPACED = re.compile(r"\bpep[ \t]+([0-9])", re.IGNORECASE)
_PEP_FILE = re.compile(r"pep[-_]0*([0-9]{1,5})(?:\.[A-Za-z]+)?", re.IGNORECASE)
# ADR numbers: `ADR-0005`, `ADR 5`, `ADR#5`.
_ADR_NUMBER = re.compile(r"\badr[-_ #]?0*([0-9]{1,5})\b", re.IGNORECASE)
# ADR files: `0005-use-postgres.md`, `adr-0005-x.md`, `ADR_5_x.md`, `adr-0005.md`.
_ADR_FILE = re.compile(r"(?:adr[-_ ]?)?0*([0-9]{1,5})(?:[-_ .].*)?", re.IGNORECASE)
_LINK = re.compile(r"\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
_WIKI = re.compile(r"\[\[([^\[\]]+)\]\]")
_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_BULLET_FIELD = re.compile(r"[ \t]*[*+-][ \t]+(status|date)[ \t]*:[ \t]*(.*)", re.IGNORECASE)
_SUPERSEDED_BY = re.compile(r"superseded[ \t]+by\b[ \t:]*(.*)", re.IGNORECASE)
_SUPERSEDES = re.compile(r"supersedes\b[ \t:]*(.*)", re.IGNORECASE)
_STATE = re.compile(r"(withdrawn|rejected|deprecated|superseded)\b", re.IGNORECASE)
_DATE_IN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class Statement:
    """Where a declaration was written: its vocabulary, 1-based line and the words."""

    vocabulary: str
    line: int
    text: str


@dataclass(frozen=True)
class Edge:
    """A declared supersession. `reversed` is False when this document replaces the reference
    (`supersedes:`, `Replaces:`) and True when the reference replaces this document
    (`Superseded-By:`, `superseded by ADR-0005`). `key` is what the reference resolves by: the
    SPEC §2.3 key, or the alias a PEP or ADR number names."""

    reference: str
    key: str
    reversed: bool
    origin: Statement
    overridden: bool = False


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

    @property
    def errors(self) -> tuple[FieldError, ...]:
        return self.frontmatter.errors if self.frontmatter is not None else ()

    def active_edges(self, vocabularies: frozenset[str] = SETTINGS[ALL]) -> list[Edge]:
        """The edges in force under a `--vocabularies` setting."""
        return [e for e in self.edges if not e.overridden and e.origin.vocabulary in vocabularies]

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


def declare(path: str, text: str) -> Declarations:
    """Read every vocabulary from one document; `path` (relative or not) picks the format by
    suffix and gives the alias its file name. Never raises."""
    lower = path.lower()
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if lower.endswith(_RST_SUFFIXES):
        return _pep(name, text)
    if lower.endswith(_MARKDOWN_SUFFIXES):
        return _markdown(name, text)
    return Declarations(None, None, None, (), None)


# -- frontmatter + ADRs ------------------------------------------------------------------------


def _markdown(name: str, text: str) -> Declarations:
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
    header_edges, retired, is_adr = _adr(fm, text)
    # SPEC §8.4: frontmatter wins where both speak.
    if fm.supersedes:
        header_edges = [replace(e, overridden=True) if not e.reversed else e for e in header_edges]
    if retired is not None and fm.valid_until_raw is not None:
        retired = replace(retired, overridden=True)
    edges.extend(header_edges)
    alias = _adr_alias(name) if is_adr or name.lower().startswith("adr") else None
    title = fm.fields.get("title")
    return Declarations(
        frontmatter=fm,
        title=title.strip() if isinstance(title, str) and title.strip() else None,
        alias=alias,
        edges=tuple(edges),
        retired=retired,
    )


def _adr(fm: Frontmatter, text: str) -> tuple[list[Edge], Retirement | None, bool]:
    """MADR's status (front matter or MADR 2 bullets) and the Nygard Status section."""
    edges: list[Edge] = []
    retired: Retirement | None = None
    status = fm.fields.get("status")
    if isinstance(status, str) and status.strip():
        line = fm.lines.get("status", 0)
        date = _date(fm.fields.get("date"))
        found = _status_line(status, Statement("madr", line, f"status: {status}"), date)
        return found[0], found[1], True
    body_start = fm.body_line if fm.present else 1
    lines = text.split("\n")
    in_fence = False
    status_heading = 0  # the heading level of an open "Status" section, 0 when none is open
    madr_date: datetime.date | None = None
    madr_status: tuple[str, int] | None = None
    nygard: list[tuple[str, int]] = []
    for number in range(body_start, len(lines) + 1):
        raw = lines[number - 1].rstrip("\r")
        if _FENCE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = _ATX.fullmatch(raw)
        if heading is not None:
            level = len(heading.group(1))
            if heading.group(2).strip().lower() == "status":
                status_heading = level
            elif status_heading and level <= status_heading:
                status_heading = 0
            continue
        if status_heading:
            if raw.strip():
                nygard.append((raw.strip(), number))
            continue
        bullet = _BULLET_FIELD.fullmatch(raw)
        if bullet is not None and number - body_start < 40:
            if bullet.group(1).lower() == "status" and madr_status is None:
                madr_status = (bullet.group(2).strip(), number)
            elif bullet.group(1).lower() == "date":
                madr_date = _date(bullet.group(2).strip())
    if madr_status is not None:
        value, number = madr_status
        found = _status_line(value, Statement("madr", number, _line(lines, number)), madr_date)
        return found[0], found[1], True
    if not nygard:
        return edges, retired, False
    for value, number in nygard:
        found_edges, found_retired = _status_line(value, Statement("nygard", number, value), None)
        edges.extend(found_edges)
        if retired is None:
            retired = found_retired
    return edges, retired, True


def _line(lines: list[str], number: int) -> str:
    return lines[number - 1].rstrip("\r").strip()


def _status_line(
    value: str, origin: Statement, date: datetime.date | None
) -> tuple[list[Edge], Retirement | None]:
    """One status statement: `superseded by X`, `supersedes X`, or a terminal state."""
    text = _unquote(value.strip())
    # MADR's template lists the choices in brackets: `[proposed | accepted | …]` is no status.
    if "|" in text:
        return [], None
    by = _SUPERSEDED_BY.search(text)
    if by is not None:
        edges = [Edge(ref, key, True, origin) for ref, key in _references(by.group(1))]
        # The document has ended even when its successor is not in the corpus: a resolved
        # successor is judged `superseded` first, an unresolved one leaves it `expired`.
        return edges, Retirement("superseded", date, origin)
    forward = _SUPERSEDES.match(text)
    if forward is not None:
        return [Edge(ref, key, False, origin) for ref, key in _references(forward.group(1))], None
    state = _STATE.match(text)
    if state is not None:
        return [], Retirement(state.group(1).lower(), date, origin)
    return [], None


def _references(text: str) -> list[tuple[str, str]]:
    """(reference as written, resolution key) for each target a status names: markdown links
    first, then wiki links, then ADR numbers, else the words themselves as one reference."""
    found: list[tuple[str, str]] = []
    for _, target in _LINK.findall(text):
        if "://" in target or target.startswith(("mailto:", "#")):
            continue
        path = unquote(target.split("#", 1)[0])
        if path:
            found.append((path, _core.resolution_key(path)))
    if found:
        return found
    for name in _WIKI.findall(text):
        found.append((f"[[{name}]]", _core.resolution_key(name)))
    if found:
        return found
    for number in _ADR_NUMBER.findall(text):
        found.append((f"ADR-{int(number):04d}", f"adr-{int(number):04d}"))
    if found:
        return found
    words = text.strip().rstrip(".").strip()
    if words and len(words.split()) == 1:
        return [(words, _core.resolution_key(words))]
    return []


def _adr_alias(name: str) -> str | None:
    match = _ADR_FILE.fullmatch(name)
    return f"adr-{int(match.group(1)):04d}" if match else None


# -- PEP preambles ------------------------------------------------------------------------------


def _pep(name: str, text: str) -> Declarations:
    headers = _preamble(text)
    if headers is None:
        return Declarations(None, None, _pep_alias_of_file(name), (), None)
    fields = {key.lower(): (value, line) for key, value, line in headers}
    edges: list[Edge] = []
    for key, reversed_ in (("replaces", False), ("superseded-by", True)):
        if key in fields:
            value, line = fields[key]
            origin = Statement("pep", line, f"{_written(headers, key)}: {value}")
            for ref, rkey in _pep_references(value):
                edges.append(Edge(ref, rkey, reversed_, origin))
    retired: Retirement | None = None
    if "status" in fields:
        value, line = fields["status"]
        state = value.strip().lower()
        if state in TERMINAL:
            retired = Retirement(state, None, Statement("pep", line, f"Status: {value}"))
    alias = None
    if "pep" in fields:
        number = _PEP_NUMBER.fullmatch(fields["pep"][0].strip())
        if number is not None:
            alias = f"pep-{int(number.group(1)):04d}"
    title = fields.get("title", ("", 0))[0].strip() or None
    return Declarations(
        frontmatter=None,
        title=title,
        alias=alias or _pep_alias_of_file(name),
        edges=tuple(edges),
        retired=retired,
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


def _pep_references(value: str) -> Iterable[tuple[str, str]]:
    for token in re.split(r"[,\s]+", _PEP_SPACED.sub(r"PEP-\1", value.strip())):
        token = token.strip()
        if not token:
            continue
        number = _PEP_NUMBER.fullmatch(token)
        if number is not None:
            yield token, f"pep-{int(number.group(1)):04d}"
        else:
            yield token, _core.resolution_key(token)


def _pep_alias_of_file(name: str) -> str | None:
    match = _PEP_FILE.fullmatch(name)
    return f"pep-{int(match.group(1)):04d}" if match else None


# -- values -------------------------------------------------------------------------------------


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1]
    return value


def _date(value: object) -> datetime.date | None:
    if not isinstance(value, str):
        return None
    match = _DATE_IN.search(value)
    if match is None:
        return None
    try:
        return parse_date(match.group(0))
    except ValueError:
        return None
