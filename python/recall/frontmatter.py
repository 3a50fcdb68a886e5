"""Validity Frontmatter 1.0: the leading metadata block of a markdown document.

Owns: recognising the frontmatter block (SPEC §2.1), splitting it from the body while recording
where the body starts in the original text (UTF-8 byte offset and line), reading member values
with the small YAML subset the vocabulary needs (scalars, one layer of quotes, flow and block
sequences, block scalars, comments, a flow value or quote continued on indented lines), telling
apart a value YAML cannot read (an unclosed bracket or quote, a leading `:`), and checking the
three keys of SPEC §2.2: `valid_from`, `valid_until` (strict `YYYY-MM-DD`) and `supersedes` (one
reference or several).

Does not own: resolving references to documents (SPEC §2.3: brackets, `.md` and directories are
kept exactly as written here), the supersession graph, refusing a document (the indexer turns
`Frontmatter.errors` into a per-file refusal, SPEC §2.5), verdicts such as `invalid_metadata`
for an empty window (SPEC §5.2), or choosing which files are indexed. It performs no I/O and
`parse` is total: it never raises, whatever the text.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["FieldError", "Frontmatter", "parse", "parse_date"]

_BOM = "\ufeff"
_FENCE = "---"
_VALID_FROM = "valid_from"
_VALID_UNTIL = "valid_until"
_SUPERSEDES = "supersedes"

# A mapping line is an unindented key of word characters, `-` or `.`, then `:` and a space or the
# end of the line (`key:value` and `https://...` are prose, not mappings). SPEC §2.1
_KEY_LINE = re.compile(r"(\w[\w.-]*):(?:[ \t](.*))?")
_ITEM_LINE = re.compile(r"[ \t]*-(?:[ \t](.*))?")
# ASCII digits only: `\d` would accept other scripts' digits, which are not `YYYY-MM-DD`. SPEC §2.2
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

_MSG_NOT_DATE = "not a YYYY-MM-DD date"
_MSG_NOT_CALENDAR = "not a real calendar date"
_MSG_EMPTY = "empty value, expected a YYYY-MM-DD date"
_MSG_LIST = "expected one date, got a list"
_MSG_UNCLOSED = "an unclosed {what}: YAML cannot read this value; close it, or quote the value"
_MSG_INDICATOR = (
    "starts with {mark!r}, which YAML reserves and cannot read as a value; quote the value"
)
_MSG_NOT_REFERENCE = "not a reference: it holds no letter or digit"
# Characters YAML reserves at the start of a plain value (`:` only before a space or the end).
_RESERVED_START = re.compile(r":(?=[ \t]|$)|[@`]")
_BLOCK_SCALAR = re.compile(r"[|>][+-]?[1-9]?[+-]?")


@dataclass(frozen=True)
class FieldError:
    """A frontmatter value the indexer must refuse the document for (SPEC §2.5). `syntax`: the
    value is not YAML at all (any key), rather than a malformed date."""

    key: str
    value: str
    message: str
    syntax: bool = False

    def __str__(self) -> str:
        return f"{self.key}: {self.message} (got {self.value!r})"


@dataclass(frozen=True)
class Frontmatter:
    """The parsed block, the body after it, and the checked Validity Frontmatter keys."""

    present: bool
    # Excluded from hashing only because a read-only mapping is unhashable; it still compares.
    fields: Mapping[str, str | tuple[str, ...]] = field(hash=False)
    body: str
    body_offset: int
    body_line: int
    valid_from_raw: str | None
    valid_until_raw: str | None
    valid_from: datetime.date | None
    valid_until: datetime.date | None
    supersedes: tuple[str, ...]
    errors: tuple[FieldError, ...]
    empty_window: bool
    #: 1-based line in the text where each key is written (the last one, for a duplicate key).
    lines: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}), hash=False)


def parse_date(value: str) -> datetime.date:
    """Parse a strict, zero-padded `YYYY-MM-DD` calendar date (SPEC §2.2).

    Raises ValueError naming the value for anything else: other layouts, times, surrounding
    whitespace, or dates that do not exist (2026-02-30).
    """
    parsed, message = _check_date(value)
    if parsed is None:
        raise ValueError(f"{message}: {value!r}")
    return parsed


def parse(text: str) -> Frontmatter:
    """Split `text` into its frontmatter block and body; never raises."""
    n_bom = 0
    while n_bom < len(text) and text[n_bom] == _BOM:
        n_bom += 1

    found = _find_block(text, n_bom)
    if found is None:
        return _without_block(text, n_bom)
    members, body_start, first_line = found

    fields, raws, lines, broken = _read_members(members, first_line)
    # A value YAML cannot read declares nothing: the document is refused (SPEC §2.5), and no
    # edge, date or title is taken from it.
    errors = [FieldError(key, value, message, syntax=True) for key, (value, message) in broken]
    _check_references(fields, raws, errors)
    valid_from = _date_field(_VALID_FROM, fields, raws, errors)
    valid_until = _date_field(_VALID_UNTIL, fields, raws, errors)
    # An empty window is recorded, not refused: search reports it as invalid_metadata. SPEC §2.2
    empty_window = valid_from is not None and valid_until is not None and valid_from > valid_until

    return Frontmatter(
        present=True,
        fields=MappingProxyType(fields),
        body=text[body_start:],
        body_offset=_utf8_len(text[:body_start]),
        body_line=text.count("\n", 0, body_start) + 1,
        valid_from_raw=_raw(_VALID_FROM, fields, raws),
        valid_until_raw=_raw(_VALID_UNTIL, fields, raws),
        valid_from=valid_from,
        valid_until=valid_until,
        supersedes=_references(fields.get(_SUPERSEDES)),
        errors=tuple(errors),
        empty_window=empty_window,
        lines=MappingProxyType(lines),
    )


def _without_block(text: str, n_bom: int) -> Frontmatter:
    # Leading BOMs are never body text; everything else, fences included, is. SPEC §2.1
    return Frontmatter(
        present=False,
        fields=MappingProxyType({}),
        body=text[n_bom:],
        body_offset=_utf8_len(text[:n_bom]),
        body_line=1,
        valid_from_raw=None,
        valid_until_raw=None,
        valid_from=None,
        valid_until=None,
        supersedes=(),
        errors=(),
        empty_window=False,
    )


def _utf8_len(text: str) -> int:
    # surrogatepass keeps parse total on strings holding lone surrogates.
    return len(text.encode("utf-8", "surrogatepass"))


def _find_block(text: str, pos: int) -> tuple[list[str], int, int] | None:
    """Member lines, the body's start index and the 1-based line of the first member, or None
    when the text opens with no block."""
    n = len(text)
    # Only `\n` ends a line, so `\r\n` files keep a trailing `\r` that rstrip() removes.
    while True:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos:end]
        if line.strip():
            break
        if nl < 0:
            return None
        pos = nl + 1
    if line.rstrip() != _FENCE or nl < 0:
        return None

    members: list[str] = []
    has_mapping = False
    first_line = text.count("\n", 0, nl) + 2
    pos = nl + 1
    while pos <= n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos:end].rstrip()
        if line == _FENCE:
            # Two thematic breaks around prose are not a block: the prose stays body. SPEC §2.1
            if not has_mapping:
                return None
            return members, (n if nl < 0 else nl + 1), first_line
        members.append(line)
        if not has_mapping and _KEY_LINE.fullmatch(line) is not None:
            has_mapping = True
        if nl < 0:
            break
        pos = nl + 1
    # No closing fence: the whole text is body. SPEC §2.1
    return None


def _read_members(
    members: list[str], first_line: int
) -> tuple[
    dict[str, str | tuple[str, ...]],
    dict[str, str],
    dict[str, int],
    list[tuple[str, tuple[str, str]]],
]:
    """Values by key (last duplicate wins), the written text of each sequence value, the line
    of each key, and the keys whose value YAML cannot read, with that value and why."""
    fields: dict[str, str | tuple[str, ...]] = {}
    raws: dict[str, str] = {}
    lines: dict[str, int] = {}
    broken: dict[str, tuple[str, str]] = {}
    # The key whose value was empty on its own line: only it can collect `- item` lines.
    open_key: str | None = None
    items: list[str] = []
    i = 0
    while i < len(members):
        line, number = members[i], first_line + i
        i += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key_match = _KEY_LINE.fullmatch(line)
        if key_match is not None:
            key = key_match.group(1)
            value = (key_match.group(2) or "").strip()
            # A flow value or a quote may go on over indented lines, a block scalar always does.
            taken = _continuation(members, i, value)
            i += len(taken)
            value = _joined(value, taken)
            lines[key] = number
            broken.pop(key, None)
            problem = _unreadable(value)
            if problem is not None:
                raws[key] = value
                fields.pop(key, None)
                broken[key] = (value, problem)
                open_key = None
                continue
            raws[key] = value
            if value:
                fields[key] = _scalar_or_flow(value)
                open_key = None
            else:
                fields[key] = ""
                open_key = key
                items = []
            continue
        item_match = _ITEM_LINE.fullmatch(line)
        if item_match is not None and open_key is not None:
            item = _strip_comment((item_match.group(1) or "").strip())
            items.append(_dequote(item))
            fields[open_key] = tuple(items)
            # A block sequence has no single written form; its raw text is shown in flow style.
            raws[open_key] = "[" + ", ".join(items) + "]"
            continue
        # Nested mappings and continuation lines are outside the subset SPEC §2 needs.
        open_key = None
    return fields, raws, lines, list(broken.items())


def _continuation(members: list[str], start: int, value: str) -> list[str]:
    """The indented lines from `start` that continue `value`: a block scalar's, or those of a
    flow value or quote left open, up to the line that closes it."""
    out: list[str] = []
    block = _BLOCK_SCALAR.fullmatch(_strip_comment(value)) is not None
    while start + len(out) < len(members) and (block or _opened(_joined(value, out))):
        line = members[start + len(out)]
        if line.strip() and not line[:1].isspace():
            break
        out.append(line)
    return out


def _joined(value: str, continued: list[str]) -> str:
    """`value` with its continuation lines: a literal block scalar (`|`) keeps its line breaks,
    everything else is folded onto one line (YAML folding), comments dropped."""
    head = _strip_comment(value)
    parts = [line.strip() for line in continued]
    if _BLOCK_SCALAR.fullmatch(head) is not None:
        kept = [p for p in parts if p] if head[0] == ">" else parts
        return ("\n" if head[0] == "|" else " ").join(kept).strip()
    if not continued:
        return head
    return _strip_comment(" ".join([value, *(p for p in parts if p)]))


def _scan(value: str) -> Iterator[tuple[int, str, int, int]]:
    """The characters of a YAML value outside quoted scalars, each with the depth of `[` and of
    `{` it is at, and at the end `(len(value), quote, ...)` with the quote left open (`'"'`,
    `"'"`, or `""` when none). A quote opens a scalar where an item may start: at the start, or
    after `[`, `{`, `,` or `:` and blanks; inside one, `\\` escapes in double quotes and `''` is a
    quote in single ones. The one quote scanner of this reader: what it reads as a comment and
    what it calls left open agree."""
    square = curly = 0
    quote = ""
    at_item_start = True
    i = 0
    n = len(value)
    while i < n:
        ch = value[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                if quote == "'" and value[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                quote = ""
            i += 1
            continue
        if ch in "\"'" and at_item_start:
            quote = ch
            at_item_start = False
            i += 1
            continue
        yield i, ch, square, curly
        if ch == "[":
            square += 1
        elif ch == "{":
            curly += 1
        elif ch == "]":
            square = max(0, square - 1)
        elif ch == "}":
            curly = max(0, curly - 1)
        if ch in "[{,:":
            at_item_start = True
        elif ch not in " \t":
            at_item_start = False
        i += 1
    yield n, quote, square, curly


def _opened(value: str) -> str | None:
    """What `value` leaves open, if it starts a flow collection or a quoted scalar and does not
    close it: `'['`, `'{'`, `'"'` or `"'"`; None when it is closed or plain."""
    if not value or value[0] not in "[{\"'":
        return None
    for i, ch, square, curly in _scan(value):
        if i == len(value):
            return ch or (value[0] if square + curly else None)
        # The outer bracket closes, or the opening quote closed before this character.
        if (ch in "]}" and square + curly <= 1) or (i > 0 and value[0] in "\"'"):
            return None
    return None


def _unreadable(value: str) -> str | None:
    """Why YAML cannot read `value`, or None when it can."""
    left_open = _opened(value)
    if left_open is not None:
        what = {"[": "'[' (a list)", "{": "'{' (a mapping)"}.get(left_open, f"quote ({left_open})")
        return _MSG_UNCLOSED.format(what=what)
    reserved = _RESERVED_START.match(value)
    if reserved is not None:
        return _MSG_INDICATOR.format(mark=reserved.group(0))
    return None


def _check_references(
    fields: Mapping[str, str | tuple[str, ...]],
    raws: Mapping[str, str],
    errors: list[FieldError],
) -> None:
    """A `supersedes` reference with no letter or digit (`supersedes: "-"`) names nothing any
    note could be: refused, never an edge (SPEC §2.3)."""
    value = fields.get(_SUPERSEDES)
    refs = (value,) if isinstance(value, str) else (value or ())
    for ref in refs:
        if ref.strip() and not any(ch.isalnum() for ch in ref):
            shown = _raw(_SUPERSEDES, fields, raws) or ref
            errors.append(FieldError(_SUPERSEDES, shown, _MSG_NOT_REFERENCE, syntax=True))
            return


def _strip_comment(value: str) -> str:
    """Drop a YAML comment: `#` after whitespace (or at the start), outside quotes and brackets.

    Brackets are exempt so a wiki link such as `[[Release #2]]` survives whole.
    """
    for i, ch, square, _ in _scan(value):
        if ch == "#" and square == 0 and (i == 0 or value[i - 1] in " \t"):
            return value[:i].rstrip()
    return value


def _is_quoted(value: str) -> bool:
    return len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]


def _dequote(value: str) -> str:
    # Exactly one layer of matching quotes; mismatched quotes are part of the value. SPEC §2.1
    return value[1:-1] if _is_quoted(value) else value


def _scalar_or_flow(value: str) -> str | tuple[str, ...]:
    """A non-empty value: a de-quoted scalar, or the items of a YAML flow sequence."""
    if _is_quoted(value):
        return value[1:-1]
    if len(value) < 2 or value[0] != "[" or value[-1] != "]":
        return value
    # `[[name]]` is one wiki-link reference, even with a comma in the name. SPEC §2.1
    if value.startswith("[[") and value.endswith("]]") and len(value) >= 4:
        inner = value[2:-2]
        if "[" not in inner and "]" not in inner:
            return value
    inner = value[1:-1]
    if not inner.strip():
        return ()
    parts = _split_flow(inner)
    if parts is None:
        return value
    # `[name]` (one unquoted item) is one reference, not a list; `["name"]` is a list. SPEC §2.1
    if len(parts) == 1 and not _is_quoted(parts[0]):
        return value
    return tuple(_dequote(part) for part in parts if part)


def _split_flow(inner: str) -> list[str] | None:
    """Split flow-sequence content on commas outside quotes and brackets; None if unbalanced."""
    parts: list[str] = []
    depth = 0
    quote = ""
    at_item_start = True
    start = 0
    i = 0
    n = len(inner)
    while i < n:
        ch = inner[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                if quote == "'" and i + 1 < n and inner[i + 1] == "'":
                    i += 2
                    continue
                quote = ""
            i += 1
            continue
        if ch in "\"'" and at_item_start:
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
            at_item_start = True
            i += 1
            continue
        if ch not in " \t":
            at_item_start = False
        i += 1
    if quote or depth != 0:
        return None
    parts.append(inner[start:].strip())
    return parts


def _raw(
    key: str, fields: Mapping[str, str | tuple[str, ...]], raws: Mapping[str, str]
) -> str | None:
    """A value as written after quote removal; a sequence keeps its written (flow) form."""
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    return raws.get(key, "")


def _check_date(value: str) -> tuple[datetime.date | None, str]:
    if _DATE.fullmatch(value) is None:
        return None, _MSG_NOT_DATE
    try:
        return datetime.date(int(value[0:4]), int(value[5:7]), int(value[8:10])), ""
    except ValueError:
        return None, _MSG_NOT_CALENDAR


def _date_field(
    key: str,
    fields: Mapping[str, str | tuple[str, ...]],
    raws: Mapping[str, str],
    errors: list[FieldError],
) -> datetime.date | None:
    """The key's date; a malformed one appends a FieldError and yields None. SPEC §2.2, §2.5"""
    if key not in fields:
        return None
    value = fields[key]
    if isinstance(value, tuple):
        errors.append(FieldError(key, _raw(key, fields, raws) or "", _MSG_LIST))
        return None
    if not value:
        # The author wrote the key and no date: refused like any other malformed date.
        errors.append(FieldError(key, value, _MSG_EMPTY))
        return None
    parsed, message = _check_date(value)
    if parsed is None:
        errors.append(FieldError(key, value, message))
    return parsed


def _references(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    # Blank references declare nothing, nor do those with no letter or digit (refused by
    # `_check_references`); the rest are kept as written for SPEC §2.3 resolution.
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else value
    return tuple(item for item in items if any(ch.isalnum() for ch in item))
