"""Heading-aware chunking of a document body (SPEC §3).

Owns: cutting a body (the text after any frontmatter) into chunks of roughly `target`
characters that start at ATX headings, never split a fenced code block, and split only overlong
paragraphs (with a small overlap); recording each chunk's ordinal, its UTF-8 byte span and line
span in the original document, and its heading path.

Does not own: frontmatter (`recall.frontmatter` supplies the body and the `base_byte` /
`base_line` where it starts), embedding, storage, or choosing which files are indexed. It is
pure: no I/O, and the result depends only on its arguments.

Invariant: for every chunk `c`,
`body.encode()[c.byte_start - base_byte : c.byte_end - base_byte].decode() == c.text`; chunks are
in increasing `byte_start` order; together they cover every non-whitespace character; no chunk
starts or ends strictly inside a fenced code block; no chunk is whitespace only.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

__all__ = ["Chunk", "chunk"]

# CommonMark ATX heading: up to three spaces of indent, 1-6 `#`, then a space or the line end.
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t](.*))?")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
# Fences are recognised at any indent so that fences nested in list items are never split either.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_SENTENCE_END = frozenset(".!?\u3002\uff01\uff1f")
_CLOSERS = frozenset("\"')]}\u201d\u2019\u00bb")
# Granularity of the char -> UTF-8 byte offset table for non-ASCII bodies.
_BYTE_STEP = 256

_PARAGRAPH = 0
_FENCE = 1
_HEADING = 2


@dataclass(frozen=True)
class Chunk:
    """One retrievable slice of a document, located in the original file (SPEC §3)."""

    ordinal: int
    text: str
    byte_start: int
    byte_end: int
    line_start: int
    line_end: int
    heading_path: tuple[str, ...]


def chunk(
    body: str,
    *,
    target: int = 800,
    overlap: int = 100,
    base_byte: int = 0,
    base_line: int = 1,
) -> list[Chunk]:
    """Chunk `body`, whose first character sits at `base_byte` / `base_line` in its file."""
    if target < 1:
        raise ValueError(f"target must be at least 1, got {target}")
    if overlap < 0:
        raise ValueError(f"overlap must not be negative, got {overlap}")
    if not body.strip():
        return []

    lines = body.split("\n")
    line_starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    spans = _pack(body, _blocks(body, lines, line_starts), target, overlap)

    to_byte = _ByteOffsets(body)
    chunks: list[Chunk] = []
    for ordinal, (start, end, path) in enumerate(spans):
        chunks.append(
            Chunk(
                ordinal=ordinal,
                text=body[start:end],
                byte_start=base_byte + to_byte(start),
                byte_end=base_byte + to_byte(end),
                line_start=base_line - 1 + bisect_right(line_starts, start),
                line_end=base_line - 1 + bisect_right(line_starts, end - 1),
                heading_path=path,
            )
        )
    return chunks


_Block = tuple[int, int, int, int, str]
"""(kind, start, end, heading level, heading text): a char span from a line start to the end of
its last non-whitespace character."""


def _blocks(body: str, lines: list[str], line_starts: list[int]) -> list[_Block]:
    """Headings, fenced code blocks and paragraphs (runs of non-blank lines), in order."""
    blocks: list[_Block] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i].rstrip()
        if not line:
            i += 1
            continue
        first = line.lstrip()[0]
        if first == "#":
            heading = _heading(line)
            if heading is not None:
                level, title = heading
                start = line_starts[i]
                blocks.append((_HEADING, start, start + len(line), level, title))
                i += 1
                continue
        if first in "`~":
            fence = _fence_opener(line)
            if fence is not None:
                j = _fence_end(lines, i + 1, fence)
                # An unclosed fence runs to the end of the document.
                end = line_starts[j] + len(lines[j].rstrip()) if j < n else len(body.rstrip())
                blocks.append((_FENCE, line_starts[i], end, 0, ""))
                i = j + 1
                continue
        j = i + 1
        while j < n and not _ends_paragraph(lines[j]):
            j += 1
        last = j - 1
        blocks.append(
            (_PARAGRAPH, line_starts[i], line_starts[last] + len(lines[last].rstrip()), 0, "")
        )
        i = j
    return blocks


#: The longest heading a chunk's heading path keeps (every chunk under a heading carries its
#: path, so an unbounded heading would make the store grow with its length times the chunks).
MAX_HEADING_CHARS = 200


def _heading(line: str) -> tuple[int, str] | None:
    match = _ATX.fullmatch(line)
    if match is None:
        return None
    title = _ATX_CLOSING.sub("", (match.group(2) or "").strip()).strip()
    if len(title) > MAX_HEADING_CHARS:
        title = title[: MAX_HEADING_CHARS - 1].rstrip() + "…"
    return len(match.group(1)), title


def _fence_opener(line: str) -> str | None:
    match = _FENCE_OPEN.fullmatch(line)
    if match is None:
        return None
    fence = match.group(1)
    # A backtick "fence" whose info string holds a backtick is inline code (CommonMark).
    if fence[0] == "`" and "`" in match.group(2):
        return None
    return fence


def _fence_end(lines: list[str], i: int, fence: str) -> int:
    """Index of the closing line (same character, at least as long), or len(lines) if none."""
    for j in range(i, len(lines)):
        line = lines[j]
        if fence[0] not in line:
            continue
        match = _FENCE_CLOSE.fullmatch(line.rstrip())
        if (
            match is not None
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
        ):
            return j
    return len(lines)


def _ends_paragraph(line: str) -> bool:
    # Blank lines, headings and fence openers interrupt a paragraph (CommonMark).
    stripped = line.strip()
    if not stripped:
        return True
    first = stripped[0]
    if first == "#":
        return _heading(line.rstrip()) is not None
    if first in "`~":
        return _fence_opener(line.rstrip()) is not None
    return False


_Span = tuple[int, int, tuple[str, ...]]


def _pack(body: str, blocks: list[_Block], target: int, overlap: int) -> list[_Span]:
    """Greedily pack blocks into chunk spans, section by section."""
    spans: list[_Span] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    # The open chunk: start < 0 when none; `heading_level` > 0 while it holds only headings.
    start = -1
    end = -1
    heading_level = 0
    chunk_path: tuple[str, ...] = ()

    for kind, b_start, b_end, level, title in blocks:
        if kind == _HEADING:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = tuple(t for _, t in stack)
            if start >= 0 and 0 < heading_level < level:
                # A subheading right under an empty heading joins it: no title-only chunks.
                end = b_end
                heading_level = level
                chunk_path = path
                continue
            if start >= 0:
                spans.append((start, end, chunk_path))
            # SPEC §3: every heading opens a chunk, and its line belongs to that chunk.
            start, end, heading_level, chunk_path = b_start, b_end, level, path
            continue

        if start >= 0 and b_end - start <= target:
            end = b_end
            heading_level = 0
            continue
        if start >= 0 and heading_level == 0:
            spans.append((start, end, chunk_path))
            start = -1
        if start < 0:
            # A heading-only chunk keeps its first block, whatever that block's size.
            start, chunk_path = b_start, path
        heading_level = 0
        if kind == _PARAGRAPH and b_end - start > target:
            pieces = _split(body, start, b_end, target, overlap)
            spans.extend((p_start, p_end, chunk_path) for p_start, p_end in pieces[:-1])
            # The last piece stays open so that short blocks after it can join it.
            start = pieces[-1][0]
        # Fenced code is never split: an overlong fence is one chunk. SPEC §3
        end = b_end

    if start >= 0:
        spans.append((start, end, chunk_path))
    return spans


def _split(body: str, start: int, end: int, target: int, overlap: int) -> list[tuple[int, int]]:
    """Split one overlong paragraph span into overlapping pieces of about `target` chars.

    Pieces are trimmed of surrounding whitespace, start strictly later than their predecessor,
    and leave only whitespace uncovered; the last piece always ends at `end`.
    """
    pieces: list[tuple[int, int]] = []
    pos = _skip_space(body, start, end)
    while end - pos > target:
        cut = _find_cut(body, pos, pos + target, pos + max(1, target // 2))
        pieces.append((pos, _trim_end(body, pos, cut)))
        nxt = _skip_space(body, _overlap_start(body, pos, cut, overlap), end)
        if nxt <= pos:
            nxt = _skip_space(body, cut, end)
        pos = nxt
    pieces.append((pos, end))
    return pieces


def _find_cut(body: str, pos: int, limit: int, low: int) -> int:
    """A cut in [low, limit]: the last newline or sentence end, else the last whitespace.

    Without any whitespace in range (one huge token) the cut is hard, at `limit`.
    """
    fallback = -1
    for p in range(limit, low - 1, -1):
        ch = body[p]
        if ch == "\n":
            return p
        if ch.isspace():
            q = p - 1
            while q > pos and body[q] in _CLOSERS:
                q -= 1
            if body[q] in _SENTENCE_END:
                return p
            if fallback < 0:
                fallback = p
    return fallback if fallback >= 0 else limit


def _overlap_start(body: str, pos: int, cut: int, overlap: int) -> int:
    """The next piece's start, about `overlap` chars before the cut.

    A sentence start in the first half of that window is preferred, else the first word start.
    """
    p = max(cut - overlap, pos + 1)
    if p >= cut:
        return cut
    half = p + (cut - p) // 2
    word = -1
    for q in range(p, cut):
        if body[q].isspace() or not body[q - 1].isspace():
            continue
        if word < 0:
            word = q
        if q > half:
            break
        r = q - 1
        while r > pos and body[r].isspace():
            r -= 1
        while r > pos and body[r] in _CLOSERS:
            r -= 1
        if body[r] in _SENTENCE_END:
            return q
    return word if word >= 0 else cut


def _skip_space(body: str, pos: int, end: int) -> int:
    while pos < end and body[pos].isspace():
        pos += 1
    return pos


def _trim_end(body: str, start: int, end: int) -> int:
    while end > start and body[end - 1].isspace():
        end -= 1
    return end


class _ByteOffsets:
    """Char index -> UTF-8 byte offset without re-encoding the body per query.

    ASCII bodies map identically; otherwise a table of byte offsets every `_BYTE_STEP` chars
    bounds each query's encoding to under `_BYTE_STEP` chars.
    """

    def __init__(self, body: str) -> None:
        self._body = body
        self._ascii = body.isascii()
        self._table: list[int] = []
        if not self._ascii:
            total = 0
            self._table.append(0)
            for k in range(0, len(body), _BYTE_STEP):
                total += _utf8_len(body[k : k + _BYTE_STEP])
                self._table.append(total)

    def __call__(self, pos: int) -> int:
        if self._ascii:
            return pos
        k = pos // _BYTE_STEP
        return self._table[k] + _utf8_len(self._body[k * _BYTE_STEP : pos])


def _utf8_len(text: str) -> int:
    # surrogatepass keeps chunking total on strings holding lone surrogates.
    return len(text.encode("utf-8", "surrogatepass"))
