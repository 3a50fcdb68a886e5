"""Validity Frontmatter 1.0 parsing: block recognition, values, dates, references (SPEC §2)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recall.frontmatter import FieldError, Frontmatter, parse, parse_date

D = dt.date
BOM = "\ufeff"


def _err(key: str, value: str, message: str) -> tuple[FieldError, ...]:
    return (FieldError(key, value, message),)


NOT_DATE = "not a YYYY-MM-DD date"
NOT_CALENDAR = "not a real calendar date"
EMPTY = "empty value, expected a YYYY-MM-DD date"
LIST = "expected one date, got a list"
CLOSE_IT = "YAML cannot read this value; close it, or quote the value"
UNCLOSED_LIST = f"an unclosed '[' (a list): {CLOSE_IT}"
UNCLOSED_QUOTE = f'an unclosed quote ("): {CLOSE_IT}'
COLON = "starts with ':', which YAML reserves and cannot read as a value; quote the value"
AT_SIGN = "starts with '@', which YAML reserves and cannot read as a value; quote the value"
NOT_REFERENCE = "not a reference: it holds no letter or digit"

# (id, text, expected attributes). Attributes not named are not checked by that row.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    # --- the block (SPEC §2.1)
    (
        "plain block",
        "---\nvalid_from: 2026-01-02\n---\nBody\n",
        {
            "present": True,
            "body": "Body\n",
            "body_offset": 31,
            "body_line": 4,
            "valid_from": D(2026, 1, 2),
            "valid_from_raw": "2026-01-02",
            "errors": (),
        },
    ),
    (
        "no block",
        "Just prose.\n",
        {
            "present": False,
            "body": "Just prose.\n",
            "body_offset": 0,
            "body_line": 1,
            "fields": {},
            "supersedes": (),
            "valid_from_raw": None,
        },
    ),
    (
        "empty text",
        "",
        {"present": False, "body": "", "body_offset": 0, "body_line": 1},
    ),
    (
        "single BOM before block",
        BOM + "---\nk: v\n---\nB",
        {"present": True, "body": "B", "body_offset": 3 + 13, "body_line": 4, "fields": {"k": "v"}},
    ),
    (
        "several BOMs before block",
        BOM * 3 + "---\nk: v\n---\nB",
        {"present": True, "body": "B", "body_offset": 9 + 13, "body_line": 4},
    ),
    (
        "BOMs without block are dropped from the body",
        BOM * 2 + "# Title\n",
        {"present": False, "body": "# Title\n", "body_offset": 6, "body_line": 1},
    ),
    (
        "leading blank lines before the fence",
        "\n  \n\t\n---\nk: v\n---\nB",
        {"present": True, "body": "B", "body_offset": 19, "body_line": 7},
    ),
    (
        "BOM then blank lines",
        BOM + "\r\n\n---\nk: v\n---\nB",
        {"present": True, "body": "B", "body_offset": 3 + 3 + 13, "body_line": 6},
    ),
    (
        "CRLF line endings",
        "---\r\nvalid_from: 2026-01-02\r\nsupersedes: a.md\r\n---\r\nBody\r\n",
        {
            "present": True,
            "body": "Body\r\n",
            "body_line": 5,
            "body_offset": 52,
            "valid_from": D(2026, 1, 2),
            "supersedes": ("a.md",),
        },
    ),
    (
        "trailing whitespace on fences",
        "---  \nk: v\n--- \t\nB",
        {"present": True, "body": "B", "fields": {"k": "v"}},
    ),
    (
        "closing fence at end of text",
        "---\nk: v\n---",
        {"present": True, "body": "", "body_offset": 12, "body_line": 3},
    ),
    (
        "thematic-break pair around prose keeps the prose",
        "---\nSome prose between rules.\n---\nMore.\n",
        {
            "present": False,
            "body": "---\nSome prose between rules.\n---\nMore.\n",
            "body_offset": 0,
            "fields": {},
        },
    ),
    (
        "block of non-mapping lines is body",
        "---\n- a\nkey:value\nhttps://example.org\n---\nB\n",
        {"present": False, "body": "---\n- a\nkey:value\nhttps://example.org\n---\nB\n"},
    ),
    (
        "unclosed block is body",
        "---\nvalid_from: 2026-13-01\nno closing fence\n",
        {
            "present": False,
            "body": "---\nvalid_from: 2026-13-01\nno closing fence\n",
            "errors": (),
            "valid_from_raw": None,
        },
    ),
    (
        "unclosed block at end of text",
        "---",
        {"present": False, "body": "---"},
    ),
    (
        "fence not first: prose before it",
        "Intro\n---\nk: v\n---\n",
        {"present": False, "body": "Intro\n---\nk: v\n---\n"},
    ),
    (
        "four dashes are not a fence",
        "----\nk: v\n----\nB",
        {"present": False},
    ),
    (
        "indented fence is not a fence",
        " ---\nk: v\n---\nB",
        {"present": False},
    ),
    (
        "empty block with a key is still a block",
        "---\nk:\n---\nB",
        {"present": True, "body": "B", "fields": {"k": ""}},
    ),
    # --- values (SPEC §2.1)
    (
        "double quotes removed",
        '---\nsupersedes: "v1.md"\n---\n',
        {"supersedes": ("v1.md",), "fields": {"supersedes": "v1.md"}},
    ),
    (
        "single quotes removed",
        "---\nsupersedes: 'v1.md'\n---\n",
        {"supersedes": ("v1.md",)},
    ),
    (
        "only one layer of quotes removed",
        "---\nk: \"'x'\"\n---\n",
        {"fields": {"k": "'x'"}},
    ),
    (
        "an unmatched quote is not YAML: reported, not kept",
        "---\nk: \"x'\nj: 'y\n---\n",
        {
            "fields": {},
            "errors": (
                FieldError("k", "\"x'", UNCLOSED_QUOTE, syntax=True),
                FieldError("j", "'y", UNCLOSED_QUOTE.replace('(")', "(')"), syntax=True),
            ),
        },
    ),
    (
        "quoted flow text is a scalar",
        '---\nsupersedes: "[a.md, b.md]"\n---\n',
        {"supersedes": ("[a.md, b.md]",)},
    ),
    (
        "scalar wiki link is one reference",
        "---\nsupersedes: [[Old note]]\n---\n",
        {"supersedes": ("[[Old note]]",), "fields": {"supersedes": "[[Old note]]"}},
    ),
    (
        "wiki link with a comma is still one reference",
        "---\nsupersedes: [[Plans, 2025]]\n---\n",
        {"supersedes": ("[[Plans, 2025]]",)},
    ),
    (
        "scalar single-bracket reference",
        "---\nsupersedes: [old.md]\n---\n",
        {"supersedes": ("[old.md]",), "fields": {"supersedes": "[old.md]"}},
    ),
    (
        "quoted wiki link",
        '---\nsupersedes: "[[b]]"\n---\n',
        {"supersedes": ("[[b]]",)},
    ),
    (
        "flow list with mixed forms",
        "---\nsupersedes: [a.md, \"[[b]]\", 'c d.md', [[e, f]], [g]]\n---\n",
        {"supersedes": ("a.md", "[[b]]", "c d.md", "[[e, f]]", "[g]")},
    ),
    (
        "flow list of wiki links",
        "---\nsupersedes: [[[a]], [[b]]]\n---\n",
        {"supersedes": ("[[a]]", "[[b]]")},
    ),
    (
        "flow list: comma inside quotes does not split",
        '---\nsupersedes: ["a, b.md", c.md]\n---\n',
        {"supersedes": ("a, b.md", "c.md")},
    ),
    (
        "one quoted item in brackets is a list of one",
        '---\nsupersedes: ["[[b]]"]\n---\n',
        {"supersedes": ("[[b]]",), "fields": {"supersedes": ("[[b]]",)}},
    ),
    (
        "flow list trailing comma",
        "---\nsupersedes: [a.md, ]\n---\n",
        {"supersedes": ("a.md",)},
    ),
    (
        "empty flow list",
        "---\nsupersedes: []\n---\n",
        {"supersedes": (), "fields": {"supersedes": ()}},
    ),
    (
        "block list, unindented",
        '---\nsupersedes:\n- a.md\n- "[[b]]"\n---\n',
        {"supersedes": ("a.md", "[[b]]"), "fields": {"supersedes": ("a.md", "[[b]]")}},
    ),
    (
        "block list, indented, with comments",
        "---\nsupersedes:\n  # the old ones\n  - 'a.md'  # first\n  - [[b]]\nk: v\n---\n",
        {"supersedes": ("a.md", "[[b]]"), "fields": {"supersedes": ("a.md", "[[b]]"), "k": "v"}},
    ),
    (
        "empty supersedes",
        "---\nsupersedes:\n---\n",
        {"supersedes": (), "errors": ()},
    ),
    (
        "empty quoted supersedes",
        '---\nsupersedes: ""\n---\n',
        {"supersedes": ()},
    ),
    (
        "dash lines after a scalar are not items",
        "---\nsupersedes: a.md\n- b.md\n---\n",
        {"supersedes": ("a.md",)},
    ),
    (
        "comment lines ignored",
        "---\n# valid_from: 2026-99-99\nk: v\n  # indented comment\n---\n",
        {"fields": {"k": "v"}, "errors": (), "valid_from_raw": None},
    ),
    (
        "inline comment after a value",
        "---\nvalid_from: 2026-01-02 # set at review\nsupersedes: # none yet\n---\n",
        {"valid_from": D(2026, 1, 2), "supersedes": (), "errors": ()},
    ),
    (
        "hash inside a value is not a comment",
        "---\nsupersedes: [[Release #2]]\nk: a#b\n---\n",
        {"supersedes": ("[[Release #2]]",), "fields": {"supersedes": "[[Release #2]]", "k": "a#b"}},
    ),
    (
        "unknown keys kept",
        "---\ntitle: Rate limits\ntags: [a, b]\nx.y-z: 1\n---\n",
        {"fields": {"title": "Rate limits", "tags": ("a", "b"), "x.y-z": "1"}},
    ),
    (
        "duplicate keys: last wins",
        "---\nvalid_from: 2026-99-01\nvalid_from: 2026-01-01\n---\n",
        {"valid_from": D(2026, 1, 1), "errors": ()},
    ),
    (
        "nested mapping lines ignored",
        "---\nmeta:\n  owner: me\nk: v\n---\n",
        {"fields": {"meta": "", "k": "v"}},
    ),
    # --- dates (SPEC §2.2, §2.5)
    (
        "valid window",
        "---\nvalid_from: 2026-01-01\nvalid_until: '2026-12-31'\n---\n",
        {
            "valid_from": D(2026, 1, 1),
            "valid_until": D(2026, 12, 31),
            "empty_window": False,
            "errors": (),
            "valid_until_raw": "2026-12-31",
        },
    ),
    (
        "one-day window is not empty",
        "---\nvalid_from: 2026-03-04\nvalid_until: 2026-03-04\n---\n",
        {"empty_window": False, "errors": ()},
    ),
    (
        "empty window recorded, not an error",
        "---\nvalid_from: 2026-05-01\nvalid_until: 2026-04-30\n---\n",
        {"empty_window": True, "errors": (), "valid_from": D(2026, 5, 1)},
    ),
    (
        "leap day in a leap year",
        "---\nvalid_from: 2024-02-29\n---\n",
        {"valid_from": D(2024, 2, 29), "errors": ()},
    ),
    (
        "leap day in a common year",
        "---\nvalid_from: 2026-02-29\n---\n",
        {"valid_from": None, "errors": _err("valid_from", "2026-02-29", NOT_CALENDAR)},
    ),
    (
        "leap day in a century common year",
        "---\nvalid_until: 1900-02-29\n---\n",
        {"valid_until": None, "errors": _err("valid_until", "1900-02-29", NOT_CALENDAR)},
    ),
    (
        "Feb 30",
        "---\nvalid_until: 2026-02-30\n---\n",
        {"valid_until": None, "errors": _err("valid_until", "2026-02-30", NOT_CALENDAR)},
    ),
    (
        "month 13",
        "---\nvalid_from: 2026-13-01\n---\n",
        {"errors": _err("valid_from", "2026-13-01", NOT_CALENDAR)},
    ),
    (
        "year zero",
        "---\nvalid_from: 0000-01-01\n---\n",
        {"errors": _err("valid_from", "0000-01-01", NOT_CALENDAR)},
    ),
    (
        "not zero-padded",
        "---\nvalid_from: 2026-2-3\n---\n",
        {"valid_from": None, "errors": _err("valid_from", "2026-2-3", NOT_DATE)},
    ),
    (
        "with a time",
        "---\nvalid_from: 2026-02-03T00:00\n---\n",
        {"errors": _err("valid_from", "2026-02-03T00:00", NOT_DATE)},
    ),
    (
        "with a space-separated time",
        "---\nvalid_from: 2026-02-03 10:00\n---\n",
        {"errors": _err("valid_from", "2026-02-03 10:00", NOT_DATE)},
    ),
    (
        "slashes",
        "---\nvalid_from: 2026/02/03\n---\n",
        {"errors": _err("valid_from", "2026/02/03", NOT_DATE)},
    ),
    (
        "day first",
        "---\nvalid_from: 03-02-2026\n---\n",
        {"errors": _err("valid_from", "03-02-2026", NOT_DATE)},
    ),
    (
        "non-ASCII digits",
        "---\nvalid_from: \u0662\u0660\u0662\u0666-01-01\n---\n",
        {"errors": _err("valid_from", "\u0662\u0660\u0662\u0666-01-01", NOT_DATE)},
    ),
    (
        "whitespace inside quotes",
        "---\nvalid_from: ' 2026-01-01'\n---\n",
        {"errors": _err("valid_from", " 2026-01-01", NOT_DATE)},
    ),
    (
        "empty date",
        "---\nvalid_from:\n---\n",
        {"valid_from": None, "valid_from_raw": "", "errors": _err("valid_from", "", EMPTY)},
    ),
    (
        "empty quoted date",
        '---\nvalid_until: ""\n---\n',
        {"errors": _err("valid_until", "", EMPTY)},
    ),
    (
        "flow list date",
        "---\nvalid_from: [2026-01-01, 2026-02-01]\n---\n",
        {"valid_from": None, "errors": _err("valid_from", "[2026-01-01, 2026-02-01]", LIST)},
    ),
    (
        "block list date",
        "---\nvalid_until:\n  - 2026-01-01\n---\n",
        {
            "valid_until": None,
            "valid_until_raw": "[2026-01-01]",
            "errors": _err("valid_until", "[2026-01-01]", LIST),
        },
    ),
    (
        "two malformed dates, both reported, no empty window",
        "---\nvalid_from: tomorrow\nvalid_until: 2026-02-30\n---\n",
        {
            "errors": (
                FieldError("valid_from", "tomorrow", NOT_DATE),
                FieldError("valid_until", "2026-02-30", NOT_CALENDAR),
            ),
            "empty_window": False,
        },
    ),
    (
        "keys are case-sensitive",
        "---\nValid_From: nonsense\n---\n",
        {"errors": (), "fields": {"Valid_From": "nonsense"}},
    ),
    # --- values YAML cannot read: refused whatever the key, never an edge or a title
    (
        "unclosed flow list",
        "---\ntitle: [unclosed\n---\nB",
        {
            "fields": {},
            "errors": (FieldError("title", "[unclosed", UNCLOSED_LIST, syntax=True),),
            "body": "B",
        },
    ),
    (
        "a leading colon is no reference",
        "---\nsupersedes: : :\n---\n",
        {
            "supersedes": (),
            "errors": (FieldError("supersedes", ": :", COLON, syntax=True),),
        },
    ),
    (
        "a reference with no letter or digit",
        '---\nsupersedes: ["-", old.md]\n---\n',
        {
            "supersedes": ("old.md",),
            "errors": (FieldError("supersedes", '["-", old.md]', NOT_REFERENCE, syntax=True),),
        },
    ),
    (
        "an unclosed quote",
        '---\ntitle: "Half\n---\n',
        {"errors": (FieldError("title", '"Half', UNCLOSED_QUOTE, syntax=True),)},
    ),
    (
        "an apostrophe inside a list item is no quote",
        "---\nsupersedes: [old 'draft.md, b.md] # the drafts\n---\n",
        {"supersedes": ("old 'draft.md", "b.md"), "errors": ()},
    ),
    (
        "a flow list continued on indented lines",
        "---\nsupersedes: [a.md,\n  b.md]\nvalid_from: 2026-01-01\n---\n",
        {"supersedes": ("a.md", "b.md"), "valid_from": D(2026, 1, 1), "errors": ()},
    ),
    (
        "an unindented continuation is not YAML",
        "---\ntags: [a,\nb]\nsupersedes: x.md\n---\n",
        {
            "supersedes": ("x.md",),
            "errors": (FieldError("tags", "[a,", UNCLOSED_LIST, syntax=True),),
        },
    ),
    (
        "a quoted value folded over lines",
        '---\ntitle: "Queue\n  limits"\n---\n',
        {"fields": {"title": "Queue limits"}, "errors": ()},
    ),
    (
        "block scalars are read, not taken as '|'",
        "---\nsummary: |\n  one\n  two\ntitle: >-\n  Folded\n  title\nnote: |\n---\n",
        {"fields": {"summary": "one\ntwo", "title": "Folded title", "note": ""}, "errors": ()},
    ),
    (
        "a colon inside a plain title stays readable",
        "---\ntitle: ADR 5: Use Postgres\n---\n",
        {"fields": {"title": "ADR 5: Use Postgres"}, "errors": ()},
    ),
    (
        "a reserved first character",
        "---\ntitle: @home\n---\n",
        {"errors": (FieldError("title", "@home", AT_SIGN, syntax=True),)},
    ),
    # --- offsets (body_offset is in UTF-8 bytes of the original text, BOMs included)
    (
        "non-ASCII in the block shifts the byte offset",
        "---\ntitle: Café ☕\n---\nB",
        {"body": "B", "body_offset": len("---\ntitle: Café ☕\n---\n".encode()), "body_line": 4},
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_table(text: str, expected: dict[str, Any]) -> None:
    fm = parse(text)
    for name, want in expected.items():
        got = getattr(fm, name)
        if name == "fields":
            got = dict(got)
        assert got == want, f"{name}: {got!r} != {want!r}"
    _check_body_is_tail(text, fm)


def _check_body_is_tail(text: str, fm: Frontmatter) -> None:
    raw = text.encode("utf-8")
    assert raw[fm.body_offset :].decode("utf-8") == fm.body
    assert fm.body_line == raw[: fm.body_offset].count(b"\n") + 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2026-01-31", D(2026, 1, 31)), ("2024-02-29", D(2024, 2, 29)), ("0001-01-01", D(1, 1, 1))],
)
def test_parse_date_valid(value: str, expected: dt.date) -> None:
    assert parse_date(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "2026-1-01",
        "2026-01-1",
        "26-01-01",
        "2026-02-30",
        "2026-00-10",
        "2026-01-01 ",
        " 2026-01-01",
        "2026-01-01\n",
        "2026-01-01T00:00",
        "20260101",
        "2026_01_01",
        "abcd-ef-gh",
    ],
)
def test_parse_date_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="date"):
        parse_date(value)


def test_fields_are_read_only() -> None:
    fm = parse("---\nk: v\n---\n")
    with pytest.raises(TypeError):
        fm.fields["k"] = "w"  # type: ignore[index]


def test_field_error_str_names_key_and_value() -> None:
    (error,) = parse("---\nvalid_from: 2026-2-3\n---\n").errors
    assert "valid_from" in str(error) and "2026-2-3" in str(error)


# --- fuzzing: parse is total and the body is always the exact tail of the source (SPEC §11)

_FRAGMENTS = st.sampled_from(
    [
        "---",
        "---\n",
        "--- \r\n",
        "\n",
        "\r\n",
        " ",
        "\t",
        BOM,
        "#",
        "# c\n",
        "-",
        "- ",
        ":",
        "valid_from: ",
        "valid_until: ",
        "supersedes: ",
        "supersedes:\n",
        "title: ",
        "k:",
        "2026-01-01",
        "2026-02-29",
        "2024-02-29",
        "2026-13-40",
        "2026-1-1",
        "[",
        "]",
        "[[",
        "]]",
        "[[a]]",
        "[a.md, b]",
        "[]",
        ",",
        '"',
        "'",
        '"x"',
        "'y'",
        "\\",
        "é",
        "☕",
        "\x00",
        "a.md",
        "prose line",
        "  - item\n",
    ]
)
_FRONTMATTERISH = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=5)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), _FRONTMATTERISH))
def test_parse_never_raises_and_body_is_tail(text: str) -> None:
    fm = parse(text)
    _check_body_is_tail(text, fm)
    assert fm.present or fm.body == text.lstrip(BOM)
    for error in fm.errors:
        assert error.key in ("valid_from", "valid_until")
    if fm.valid_from is not None and fm.valid_until is not None:
        assert fm.empty_window == (fm.valid_from > fm.valid_until)
    else:
        assert not fm.empty_window
    assert all(ref.strip() for ref in fm.supersedes)


@settings(max_examples=300, deadline=None)
@given(st.dates(min_value=D(1, 1, 1), max_value=D(9999, 12, 31)))
def test_every_real_date_round_trips(day: dt.date) -> None:
    text = f"---\nvalid_from: {day.isoformat()}\nvalid_until: '{day.isoformat()}'\n---\n"
    fm = parse(text)
    assert fm.valid_from == fm.valid_until == day
    assert fm.errors == ()
    assert parse_date(day.isoformat()) == day


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_block_never_swallows_fence_free_prose(prose: str) -> None:
    # Two thematic breaks around text with no mapping line never hide that text. SPEC §2.1
    lines = [ln for ln in prose.split("\n") if ln.rstrip() != "---"]
    middle = "\n".join("> " + ln for ln in lines)
    text = f"---\n{middle}\n---\nafter\n"
    fm = parse(text)
    assert not fm.present
    assert fm.body == text
