"""Heading-aware chunking: boundaries, fences, overlap, and exact source spans (SPEC §3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recall.chunking import MAX_HEADING_CHARS, Chunk, chunk
from recall.frontmatter import parse

# --- invariants shared by the table and the properties


def _fence_spans(body: str) -> list[tuple[int, int]]:
    """Char spans of fenced code blocks, from the opener's line start to the closer's last
    non-space char (the end of the stripped body when unclosed)."""
    spans: list[tuple[int, int]] = []
    opener: tuple[str, int] | None = None
    pos = 0
    for line in body.split("\n"):
        text = line.rstrip()
        stripped = text.lstrip(" \t")
        run = re.match(r"`{3,}|~{3,}", stripped)
        if opener is None:
            if run and not (run.group()[0] == "`" and "`" in stripped[run.end() :]):
                opener = (run.group(), pos)
        elif (
            run
            and run.end() == len(stripped)
            and run.group()[0] == opener[0][0]
            and len(run.group()) >= len(opener[0])
        ):
            spans.append((opener[1], pos + len(text)))
            opener = None
        pos += len(line) + 1
    if opener is not None:
        spans.append((opener[1], len(body.rstrip())))
    return spans


def _char_spans(body: str, chunks: list[Chunk], base_byte: int) -> list[tuple[int, int]]:
    raw = body.encode("utf-8")
    spans = []
    for c in chunks:
        start = len(raw[: c.byte_start - base_byte].decode("utf-8"))
        spans.append((start, start + len(c.text)))
    return spans


def _check(body: str, chunks: list[Chunk], base_byte: int = 0, base_line: int = 1) -> None:
    raw = body.encode("utf-8")
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        # The slice invariant: the text is exactly the bytes the span names. SPEC §3
        assert raw[c.byte_start - base_byte : c.byte_end - base_byte].decode("utf-8") == c.text
        before = raw[: c.byte_start - base_byte].count(b"\n")
        assert c.line_start == base_line + before
        assert c.line_end == c.line_start + c.text.count("\n")
        assert c.text.strip(), "whitespace-only chunk"
        assert c.text == c.text.rstrip()
        assert c.text.split("\n", 1)[0].strip(), "chunk starts with a blank line"
    starts = [c.byte_start for c in chunks]
    assert starts == sorted(set(starts)), "chunks out of order"

    spans = _char_spans(body, chunks, base_byte)
    covered = bytearray(len(body))
    for start, end in spans:
        covered[start:end] = b"\x01" * (end - start)
    lost = [i for i, ch in enumerate(body) if not ch.isspace() and not covered[i]]
    assert not lost, f"characters lost at {lost[:5]}"

    for f_start, f_end in _fence_spans(body):
        for start, end in spans:
            assert not f_start < start < f_end, "chunk starts inside a fence"
            assert not f_start < end < f_end, "chunk ends inside a fence"


def _texts(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def _paths(chunks: list[Chunk]) -> list[tuple[str, ...]]:
    return [c.heading_path for c in chunks]


SENTENCES = " ".join(f"Sentence number {i} says something." for i in range(40))

# --- table


@pytest.mark.parametrize(
    ("body", "texts", "paths"),
    [
        ("", [], []),
        ("  \n\t\n\r\n", [], []),
        ("One short note.\n", ["One short note."], [()]),
        (
            "\n\n  Indented start.\n\nSecond paragraph.\n\n",
            ["  Indented start.\n\nSecond paragraph."],
            [()],
        ),
        ("# Title\n\nBody text.\n", ["# Title\n\nBody text."], [("Title",)]),
        (
            "Intro.\n# A\na\n## B\nb\n## C\nc\n# D\nd\n",
            ["Intro.", "# A\na", "## B\nb", "## C\nc", "# D\nd"],
            [(), ("A",), ("A", "B"), ("A", "C"), ("D",)],
        ),
        (
            "# A\n## B\n### C\ntext\n## D\n",
            ["# A\n## B\n### C\ntext", "## D"],
            [("A", "B", "C"), ("A", "D")],
        ),
        ("# A\n# B\nb\n", ["# A", "# B\nb"], [("A",), ("B",)]),
        ("# A\n### C\nc\n## B\nb\n", ["# A\n### C\nc", "## B\nb"], [("A", "C"), ("A", "B")]),
        ("## Closing ##\nx\n", ["## Closing ##\nx"], [("Closing",)]),
        ("#hashtag is prose\n#5 too\n", ["#hashtag is prose\n#5 too"], [()]),
        (
            "    # indented code, not a heading\nx\n",
            ["    # indented code, not a heading\nx"],
            [()],
        ),
        ("####### seven is prose\n", ["####### seven is prose"], [()]),
        (
            "# A\n```\n# not a heading\n```\n# B\n",
            ["# A\n```\n# not a heading\n```", "# B"],
            [("A",), ("B",)],
        ),
        (
            "# A\n~~~\n```\n# no\n```\n~~~\nafter\n",
            ["# A\n~~~\n```\n# no\n```\n~~~\nafter"],
            [("A",)],
        ),
        ("````\n```\n# no\n````\n# yes\n", ["````\n```\n# no\n````", "# yes"], [(), ("yes",)]),
        (
            "# A\ntext\n```py\n# no\n\n# still code, unclosed\n\n",
            ["# A\ntext\n```py\n# no\n\n# still code, unclosed"],
            [("A",)],
        ),
        ("```inline``` code\n# H\n", ["```inline``` code", "# H"], [(), ("H",)]),
        (
            "# A\r\n\r\ntext\r\n## B\r\nb\r\n",
            ["# A\r\n\r\ntext", "## B\r\nb"],
            [("A",), ("A", "B")],
        ),
    ],
    ids=[
        "empty",
        "whitespace only",
        "one short paragraph",
        "blank lines trimmed, indentation kept",
        "title heading then text is one chunk",
        "every heading opens a chunk",
        "child headings under an empty heading join it",
        "sibling after an empty heading",
        "skipped level",
        "closing hashes",
        "no space after hash",
        "four-space indent",
        "seven hashes",
        "heading inside backtick fence",
        "tilde fence holding backticks",
        "closer must be as long as opener",
        "unclosed fence runs to the end",
        "inline code is not a fence",
        "CRLF",
    ],
)
def test_chunk_table(body: str, texts: list[str], paths: list[tuple[str, ...]]) -> None:
    chunks = chunk(body)
    assert _texts(chunks) == texts
    assert _paths(chunks) == paths
    _check(body, chunks)


def test_one_chunk_document_stays_one_chunk() -> None:
    body = ("word " * 160)[:799] + "."
    assert len(body) == 800
    (only,) = chunk(body)
    assert only.text == body.rstrip()
    assert (only.byte_start, only.byte_end, only.line_start, only.line_end) == (0, 800, 1, 1)


def test_small_blocks_are_packed_up_to_target() -> None:
    paragraphs = [f"Paragraph {i} " + "x" * 30 for i in range(10)]
    body = "\n\n".join(paragraphs)
    chunks = chunk(body, target=100)
    _check(body, chunks)
    assert _texts(chunks) == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 10, 2)]


def test_long_paragraph_split_with_overlap() -> None:
    body = "# H\n\n" + SENTENCES + "\n\nTail paragraph.\n"
    chunks = chunk(body, target=200, overlap=60)
    _check(body, chunks)
    assert len(chunks) > 5
    assert all(c.heading_path == ("H",) for c in chunks)
    assert chunks[0].text.startswith("# H\n")
    assert chunks[-1].text.endswith("Tail paragraph.")
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.byte_start < prev.byte_end, "consecutive pieces do not overlap"
        assert prev.byte_end - nxt.byte_start <= 60
    for c in chunks[:-1]:
        assert len(c.text) <= 200
        assert c.text.endswith("."), "cut not at a sentence end"
    for c in chunks[1:-1]:
        assert c.text.startswith("Sentence"), "overlap does not start on a sentence"


def test_long_paragraph_without_overlap() -> None:
    chunks = chunk(SENTENCES, target=150, overlap=0)
    _check(SENTENCES, chunks)
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.byte_start >= prev.byte_end


def test_unbreakable_token_is_cut_hard() -> None:
    body = "x" * 1000
    chunks = chunk(body, target=300, overlap=50)
    _check(body, chunks)
    assert all(len(c.text) <= 300 for c in chunks)


def test_long_code_fence_is_one_chunk() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}  # comment" for i in range(100)) + "\n```"
    body = "# Code\n\nBefore.\n\n" + code + "\n\nAfter.\n"
    chunks = chunk(body, target=200)
    _check(body, chunks)
    assert code in _texts(chunks)
    assert _texts(chunks)[0] == "# Code\n\nBefore."


def test_heading_keeps_its_long_fence() -> None:
    code = "~~~\n" + "line\n" * 100 + "~~~"
    body = "## Setup\n" + code + "\n"
    assert _texts(chunk(body, target=50)) == [body.rstrip()]


def test_base_offsets_are_applied() -> None:
    body = "# A\nalpha\n\n# B\nbeta\n"
    chunks = chunk(body, base_byte=100, base_line=7)
    _check(body, chunks, base_byte=100, base_line=7)
    assert [(c.byte_start, c.byte_end, c.line_start, c.line_end) for c in chunks] == [
        (100, 109, 7, 8),
        (111, 119, 10, 11),
    ]


def test_non_ascii_byte_offsets() -> None:
    body = "# Café ☕\n\nnaïve 日本語 text\n\n## Zürich\n\n😀 emoji\n"
    chunks = chunk(body)
    _check(body, chunks)
    raw = body.encode()
    second = chunks[1]
    assert second.text == "## Zürich\n\n😀 emoji"
    assert second.byte_start == raw.index("## Zürich".encode())
    assert second.byte_end == len(raw) - 1
    assert second.heading_path == ("Café ☕", "Zürich")


def test_long_non_ascii_paragraph() -> None:
    body = "Ünïcödé wörds hère. " * 300
    chunks = chunk(body, target=120, overlap=30)
    _check(body, chunks)


def test_with_frontmatter_offsets_index_the_original_file() -> None:
    source = "\ufeff---\nvalid_from: 2026-01-01\n---\n# Título\n\nCuerpo.\n\n## Dos\n\nMás.\n"
    fm = parse(source)
    chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
    raw = source.encode()
    lines = source.split("\n")
    for c in chunks:
        assert raw[c.byte_start : c.byte_end].decode() == c.text
        assert "\n".join(lines[c.line_start - 1 : c.line_end]).endswith(c.text)
    assert chunks[0].line_start == 4


@pytest.mark.parametrize(("target", "overlap"), [(0, 0), (-5, 10), (10, -1)])
def test_bad_parameters(target: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk("text", target=target, overlap=overlap)


def test_tiny_target_and_huge_overlap_still_progress() -> None:
    body = "a b c d e f g h i j k"
    for target in (1, 2, 3):
        chunks = chunk(body, target=target, overlap=1000)
        _check(body, chunks)


# --- properties

_PIECES = st.sampled_from(
    [
        "# Head\n",
        "## Sub\n",
        "### Deep\n",
        "#not\n",
        "```\n",
        "```py\n",
        "~~~\n",
        "````\n",
        "```x```\n",
        "\n",
        "\n\n",
        "\r\n",
        "  ",
        "\t",
        "- item\n",
        "1. step\n",
        "    ```\n",
        "A sentence. ",
        "Another one! ",
        "Why? ",
        "longword" * 20,
        "é",
        "日本",
        "😀",
        "\u2028",
        "\x0b",
        "\x85",
    ]
)
_MARKDOWN = st.lists(
    st.one_of(_PIECES, st.text(max_size=30), st.text(alphabet=" ab.\n", max_size=200)),
    max_size=60,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(_MARKDOWN, st.text()),
    target=st.integers(min_value=1, max_value=400),
    overlap=st.integers(min_value=0, max_value=200),
    base_byte=st.integers(min_value=0, max_value=10_000),
    base_line=st.integers(min_value=1, max_value=500),
)
def test_chunk_invariants(
    body: str, target: int, overlap: int, base_byte: int, base_line: int
) -> None:
    chunks = chunk(body, target=target, overlap=overlap, base_byte=base_byte, base_line=base_line)
    _check(body, chunks, base_byte=base_byte, base_line=base_line)
    assert bool(chunks) == bool(body.strip())


@settings(max_examples=300, deadline=None)
@given(body=st.text(alphabet=st.characters(blacklist_characters="#\x00"), max_size=800))
def test_heading_free_body_within_target_is_one_chunk(body: str) -> None:
    chunks = chunk(body, target=max(1, len(body)))
    if body.strip():
        assert len(chunks) == 1
        assert body.strip() in chunks[0].text
    else:
        assert chunks == []


def test_a_long_heading_is_kept_once_not_in_every_chunk_path() -> None:
    """SPEC §3: a chunk's heading path is bounded, so store size stays linear in the input."""
    heading = "word " * 80_000  # a 400 KB heading
    body = f"# {heading}\n\n" + "\n\n".join(f"Paragraph {i} " + "text " * 60 for i in range(200))
    chunks = chunk(body)
    assert len(chunks) > 10
    assert all(len(" > ".join(c.heading_path)) <= MAX_HEADING_CHARS for c in chunks)
    assert chunks[-1].heading_path[0].endswith("…")


def test_a_store_of_a_long_heading_stays_within_ten_times_its_input(tmp_path: Path) -> None:
    import recall

    notes = tmp_path / "notes"
    notes.mkdir()
    heading = "word " * 80_000
    text = f"# {heading}\n\n" + "\n\n".join(f"Paragraph {i} " + "text " * 60 for i in range(200))
    (notes / "long.md").write_text(text, encoding="utf-8")
    with recall.open(tmp_path / "m.db", embedder="hashing-64") as mem:
        assert mem.index(notes, calibrate=False).ok
    size = sum(p.stat().st_size for p in tmp_path.glob("m.db*"))
    assert size < 10 * len(text.encode())
