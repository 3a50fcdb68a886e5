"""Closure phrases in a note's prose (SPEC §8.4): phrase, direction, references, refusals, and
the parts of a file that are never prose."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recall.closures import find_closures

# (sentence, phrase, direction, refusal, references)
SENTENCES = [
    # the note's own voice, with its direction
    ("This note replaces [old](old.md).", "replaces", "replaces", None, ("old.md",)),
    ("This note supersedes [[old]].", "supersedes", "replaces", None, ("[[old]]",)),
    (
        "This note is superseded by [new](new.md).",
        "superseded by",
        "replaced_by",
        None,
        ("new.md",),
    ),
    ("It was replaced by new.md last week.", "replaced by", "replaced_by", None, ("new.md",)),
    (
        "Deprecated in favour of [[v2]].",
        "deprecated in favour of",
        "replaced_by",
        None,
        ("[[v2]]",),
    ),
    ("Deprecated in favor of v2.md.", "deprecated in favor of", "replaced_by", None, ("v2.md",)),
    ("Superseded by ADR-0005.", "superseded by", "replaced_by", None, ("ADR-0005",)),
    ("This PEP was replaced by PEP 8.", "replaced by", "replaced_by", None, ("PEP 8",)),
    ("[new](new.md) replaces this note.", "replaces", "replaced_by", None, ("new.md",)),
    ("[old](old.md) is superseded by this note.", "superseded by", "replaces", None, ("old.md",)),
    ("The old flow is no longer used.", "no longer used", None, None, ()),
    ("You should no longer use it; see new.md.", "no longer use", None, None, ("new.md",)),
    ("This page is obsolete.", "obsolete", None, None, ()),
    ("The service was retired in March.", "retired", None, None, ()),
    ("The proposal was withdrawn.", "withdrawn", None, None, ()),
    ("We deprecated the v1 endpoint.", "deprecated", None, None, ()),
    ("See x-v1.md, which is obsolete.", "obsolete", None, None, ("x-v1.md",)),
    # one note named twice is one reference; links to the web are none
    (
        "It is superseded by x-v2.md, see [[x-v2]].",
        "superseded by",
        "replaced_by",
        None,
        ("x-v2.md",),
    ),
    ("Superseded by [docs](https://example.com/new.md).", "superseded by", "replaced_by", None, ()),
    ("This supersedes [a](a.md) and [b](b.md).", "supersedes", "replaces", None, ("a.md", "b.md")),
    # reported speech
    (
        "the team said [old](old.md) was superseded",
        "superseded",
        None,
        "reported_speech",
        ("old.md",),
    ),
    (
        "According to Bob, [old](old.md) is obsolete.",
        "obsolete",
        None,
        "reported_speech",
        ("old.md",),
    ),
    (
        "The team claims this replaces [old](old.md).",
        "replaces",
        "replaces",
        "reported_speech",
        ("old.md",),
    ),
    ("It was superseded, he said.", "superseded", None, "reported_speech", ()),
    (
        'The "superseded by [new](new.md)" label is wrong.',
        "superseded by",
        "replaced_by",
        "reported_speech",
        ("new.md",),
    ),
    # hedges
    ("this may replace [old](old.md)", "replace", "replaces", "hedge", ("old.md",)),
    ("This probably supersedes [old](old.md).", "supersedes", "replaces", "hedge", ("old.md",)),
    ("It will likely replace [old](old.md).", "replace", "replaces", "hedge", ("old.md",)),
    ("We plan to replace [old](old.md) next quarter.", "replace", "replaces", "hedge", ("old.md",)),
    ("We planned to replace [old](old.md).", "replace", "replaces", "hedge", ("old.md",)),
    ("They are hoping to retire it; it is deprecated.", "deprecated", None, None, ()),
    ("It will no longer be supported.", "no longer be supported", None, None, ()),
    ("It is proposed to supersede [old](old.md).", "supersede", "replaces", "hedge", ("old.md",)),
    (
        "If the flag is set this replaces [old](old.md).",
        "replaces",
        "replaces",
        "hedge",
        ("old.md",),
    ),
    ("This may no longer be valid.", "no longer be valid", None, "hedge", ()),
    # partial scope
    (
        "replaces the retry section of [old](old.md)",
        "replaces",
        "replaces",
        "partial_scope",
        ("old.md",),
    ),
    (
        "Part of [old](old.md) is superseded by this note.",
        "superseded by",
        "replaces",
        "partial_scope",
        ("old.md",),
    ),
    (
        "Step 3 of [old](old.md) is replaced by this note.",
        "replaced by",
        "replaces",
        "partial_scope",
        ("old.md",),
    ),
    (
        "This paragraph replaces the intro of [old](old.md).",
        "replaces",
        "replaces",
        "partial_scope",
        ("old.md",),
    ),
    # negation
    ("This note is not superseded.", "superseded", None, "negated", ()),
    ("It was never replaced by anything.", "replaced by", "replaced_by", "negated", ()),
    ("This note has not been superseded.", "superseded", None, "negated", ()),
    ("[old](old.md) isn't deprecated.", "deprecated", None, "negated", ("old.md",)),
    ("Nothing here is obsolete.", "obsolete", None, "negated", ()),
    ("This does not replace [old](old.md).", "replace", "replaces", "negated", ("old.md",)),
    ("Use the non-deprecated API.", "deprecated", None, "negated", ()),
]


@pytest.mark.parametrize(("sentence", "phrase", "direction", "refusal", "refs"), SENTENCES)
def test_sentence(
    sentence: str, phrase: str, direction: str | None, refusal: str | None, refs: tuple[str, ...]
) -> None:
    (closure,) = find_closures(f"# Note\n\n{sentence}\n", "note.md")
    assert (closure.phrase, closure.direction, closure.refusal) == (phrase, direction, refusal)
    assert closure.references == refs
    assert closure.line == 3
    assert closure.sentence == sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "We need to replace the battery.",
        "The replacement part arrived.",
        "Keep the superseded note for history.",
        "Remove any deprecated flags.",
        "The `deprecated` flag is fine.",
        "Set ``superseded by`` in the header.",
        "Nothing here closes anything.",
        "",
    ],
)
def test_no_closure(sentence: str) -> None:
    assert find_closures(f"{sentence}\n", "note.md") == []


def test_frontmatter_fences_inline_code_and_skipped_lines_are_not_prose() -> None:
    text = (
        "---\n"
        "supersedes: old.md\n"
        "note: this is deprecated\n"
        "---\n"
        "# Title\n"
        "\n"
        "```\n"
        "superseded by [x](x.md)\n"
        "```\n"
        "~~~~\n"
        "obsolete\n"
        "~~~~\n"
        "\n"
        "A long text that wraps\n"
        "over lines and is then superseded\n"
        "by [new](new.md). Another sentence that is obsolete.\n"
        "\n"
        "- item one is retired\n"
        "- item `deprecated` two\n"
        "\n"
        "## Status\n"
        "\n"
        "Superseded by ADR-0009\n"
    )
    found = find_closures(text, "a.md", frozenset({23}))
    assert [(c.line, c.phrase, c.references) for c in found] == [
        (15, "superseded by", ("new.md",)),
        (16, "obsolete", ()),
        (18, "retired", ()),
    ]
    assert found[0].sentence == (
        "A long text that wraps over lines and is then superseded by [new](new.md)."
    )
    # Without the skipped line, the status line is prose too.
    assert find_closures(text, "a.md")[-1].line == 23


def test_pep_preamble_is_not_prose() -> None:
    rst = (
        "PEP: 8\nTitle: Style\nStatus: Superseded\nSuperseded-By: 9\n\n"
        "Abstract\n========\n\nThis PEP is superseded by PEP 9.\n"
    )
    (closure,) = find_closures(rst, "pep-0008.rst")
    assert (closure.line, closure.references, closure.direction) == (9, ("PEP 9",), "replaced_by")


def test_frontmatter_only_for_markdown() -> None:
    text = "---\nstatus: deprecated\n---\nbody\n"
    assert find_closures(text, "a.md") == []
    # A .txt note has no frontmatter: the same lines are its body.
    assert [c.phrase for c in find_closures(text, "a.txt")] == ["deprecated"]


def test_crlf_and_bom() -> None:
    text = "\ufeff---\r\ntitle: x\r\n---\r\nThis note replaces [old](old.md).\r\n"
    (closure,) = find_closures(text, "a.md")
    assert (closure.line, closure.references) == (4, ("old.md",))


def test_one_closure_per_sentence_prefers_a_direction() -> None:
    (closure,) = find_closures("It is deprecated and superseded by [b](b.md).\n", "a.md")
    assert (closure.phrase, closure.direction) == ("superseded by", "replaced_by")


def test_clauses_are_read_apart() -> None:
    # A hedge or a condition in another clause does not hold the closure back.
    text = "This replaces [old](old.md); see it if you need history.\n"
    (closure,) = find_closures(text, "a.md")
    assert closure.refusal is None
    text = "We might revisit it later, but this note supersedes [old](old.md).\n"
    assert find_closures(text, "a.md")[0].refusal is None


def test_abbreviations_do_not_end_a_sentence() -> None:
    (closure,) = find_closures("The old cache, e.g. Redis, is replaced by [pg](pg.md).\n", "a.md")
    assert closure.sentence.startswith("The old cache, e.g. Redis")


@given(st.text(max_size=400))
def test_never_raises_and_lines_are_in_the_text(text: str) -> None:
    for closure in find_closures(text, "fuzz.md"):
        assert 1 <= closure.line <= text.count("\n") + 1
        assert closure.phrase.split()[0] in closure.sentence.lower()


@given(
    st.lists(
        st.sampled_from(
            ["superseded by ", "[a](a.md) ", "no longer valid", "\n", "```\n", "`x` ", ". ", "-"]
        ),
        max_size=30,
    )
)
def test_never_raises_on_closure_words(parts: list[str]) -> None:
    text = "".join(parts)
    for closure in find_closures(text, "fuzz.md"):
        assert closure.line >= 1
