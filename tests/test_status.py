"""The status reader (SPEC §2.5), `recall.status`: status words and their misspellings in every
wrapping, link forms and bare identifiers as keys, file-name aliases, dates, partial and negated
statements; and, as properties, that a terminal status however it is dressed retires its note,
in the reader and in a store."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import recall
from recall.status import (
    CURRENT,
    INACTIVE,
    TERMINAL,
    Reading,
    file_alias,
    find_date,
    identifier_key,
    link_definitions,
    normalise,
    read,
    reference_key,
    references,
    references_at,
)
from recall.vocabularies import declare

# How a status value is dressed in real records; `{}` is the status word.
WRAPPINGS = {
    "emoji": "❌ {}",
    "bold": "**{}**",
    "code": "`{}`",
    "warning": "⚠️ {}",
    "struck-then-new": "~~Accepted~~ {}",
    "label": "Status: {}",
    "full-stop": "{}.",
}


def by_name(key: str) -> str:
    """A key without its exact-path alternative (`@0007-x.md`, tested on its own below): the
    name and identifiers a note is found by when no file sits at the linked path."""
    return "\n".join(k for k in key.split("\n") if not k.startswith("@"))


def successor_keys(reading: Reading) -> list[str]:
    return [by_name(ref.key) for ref in reading.successors]


def note_with_status(value: str) -> str:
    return f"# T\n\n## Status\n\n{value}\n\n## Context\n\nSome text about queues.\n"


# --- status words -------------------------------------------------------------------------------


@pytest.mark.parametrize("wrapping", list(WRAPPINGS.values()), ids=list(WRAPPINGS))
@pytest.mark.parametrize(("word", "state"), sorted(TERMINAL.items()), ids=sorted(TERMINAL))
def test_terminal_word_in_every_wrapping(word: str, state: str, wrapping: str) -> None:
    for written in (word, word.upper(), word.title()):
        reading = read(wrapping.format(written))
        assert (reading.state, reading.current, reading.partial, reading.unknown) == (
            state,
            False,
            False,
            False,
        ), wrapping.format(written)
        assert reading.successors == () and reading.predecessors == ()


def _documented(bullet: str) -> set[str]:
    """The words of one bullet of the README's wording section, as the reader's lists hold
    them (`cancelled / canceled`, `deprecated (depreciated)` give each word)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = readme.index(bullet)
    text = readme[start + len(bullet) : readme.index("\n- ", start)]
    text = " ".join(re.sub(r"`[^`]*`", " ", text.split(":", 1)[1].split(". ", 1)[0]).split())
    return {
        w
        for w in re.split(r"[^a-z ]+", text.lower().replace("also ", ""))
        for w in [w.strip()]
        if w
    }


def test_every_documented_status_word_is_read() -> None:
    """The README documents the words the reader knows; the reader's lists are what the tests
    above run over, so a word dropped from a list would drop its test too: this pins the lists
    to what users are told."""
    retiring = _documented("- Retirement words")
    assert retiring == set(TERMINAL) - {"supersed"}, retiring ^ (set(TERMINAL) - {"supersed"})
    inactive = _documented("- Inactive, a known state")
    assert inactive == INACTIVE - {"returned"}, inactive ^ INACTIVE
    assert _documented("- Notes in force") - {"and a few more"} <= CURRENT


@pytest.mark.parametrize("wrapping", list(WRAPPINGS.values()), ids=list(WRAPPINGS))
@pytest.mark.parametrize("word", sorted(CURRENT))
def test_current_word_in_every_wrapping(word: str, wrapping: str) -> None:
    reading = read(wrapping.format(word.title()))
    assert (reading.state, reading.current, reading.unknown) == (None, True, False)


@pytest.mark.parametrize(
    "value",
    ["Stagnant", "Dormant", "Inactive", "Returned for revision", "**Previewing**", "Postponed",
     "Deferred", "On hold", "Status: Stagnant"],
)  # fmt: skip
def test_inactive_statuses_are_known_and_in_force(value: str) -> None:
    """A proposal nobody is moving (EIP `Stagnant`, Swift `Returned for revision`) is a known
    state: read, never unread, and the note stays in force."""
    reading = read(value)
    assert reading.inactive and reading.says_anything
    assert (reading.state, reading.current, reading.unknown) == (None, False, False)
    found = declare("t.md", note_with_status(value))
    assert found.active_retirement() is None and found.standing("unread") == []


def test_moved_retires_the_copy_left_behind() -> None:
    """`Moved` (an EIP kept in another repository now): the copy here is no longer kept
    current, so it is not in force."""
    assert read("Moved").state == "moved"
    retired = declare("t.md", note_with_status("Moved")).active_retirement()
    assert retired is not None and retired.state == "moved"


def test_terminal_current_and_inactive_words_do_not_overlap() -> None:
    assert not set(TERMINAL) & CURRENT
    assert not (set(TERMINAL) | CURRENT) & INACTIVE
    assert set(TERMINAL.values()) <= set(TERMINAL)


@pytest.mark.parametrize(
    "value",
    [
        "🚧 Parked pending legal",
        "Parked",
        "TBD",
        "",
        "   ",
        "Status:",
        "**Status:**",
        # A template's list of choices with none taken.
        "proposed | accepted | deprecated",
        "See the discussion below",
    ],
)
def test_unknown_values(value: str) -> None:
    reading = read(value)
    assert reading.unknown
    assert (reading.state, reading.current, reading.partial) == (None, False, False)
    assert reading.successors == () and reading.predecessors == ()
    assert not reading.says_anything


@pytest.mark.parametrize(
    ("value", "state", "current"),
    [
        # The choices not taken are struck through: the one left is the status.
        ("**Proposed** | ~~Accepted~~ | ~~Deprecated~~ | ~~Superceded~~", None, True),
        ("~~Accepted~~ Rejected", "rejected", False),
        ("<del>Accepted</del> Withdrawn", "withdrawn", False),
        # A history of states: the last step is the status.
        ("Proposed → Accepted → Deprecated", "deprecated", False),
        ("Rejected -> Accepted", None, True),
        ("Now deprecated", "deprecated", False),
        ("Deprecated (see below)", "deprecated", False),
        ("Superseded", "superseded", False),
        ("**Status:** Deprecated", "deprecated", False),
        ("Accepted, amended later", None, True),
    ],
)
def test_status_values(value: str, state: str | None, current: bool) -> None:
    reading = read(value)
    assert (reading.state, reading.current, reading.unknown) == (state, current, False)


@pytest.mark.parametrize(
    ("value", "sentence", "state"),
    [
        # In a sentence the status word may stand anywhere; in a status value it opens it.
        ("This RFC is now deprecated.", True, "deprecated"),
        ("This RFC is now deprecated.", False, None),
        ("The proposal was withdrawn by its author.", True, "withdrawn"),
    ],
)
def test_status_word_in_a_sentence(value: str, sentence: bool, state: str | None) -> None:
    assert read(value, sentence=sentence).state == state


# --- negation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "current"),
    [
        ("not superseded", False),
        ("Status: not superseded", False),
        ("Not superseded by ADR-5", False),
        ("Never deprecated", False),
        ("Accepted (not superseded)", True),
    ],
)
def test_negation_retires_nothing(value: str, current: bool) -> None:
    reading = read(value)
    assert reading.state is None and reading.current == current
    assert reading.successors == () and not reading.partial
    found = declare("t.md", note_with_status(value))
    assert found.active_retirement() is None and found.active_edges() == []


# --- supersession and links ---------------------------------------------------------------------

DEFINITIONS = link_definitions(
    "Body text.\n\n"
    "[adr7]: 0007-use-x.md\n"
    "[ADR024]: ./ADR024-web-framework-selection.md\n"
    '[RFC 1974]: https://example.org/rfcs/1974 "the RFC"\n'
)


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        # inline relative links: the path key, then the file name's and the text's identifiers
        ("Superseded by [ADR 4](0004-nats.md)", ["0004-nats\n#:4\n#adr:4"]),
        ("Superseded by [RFC 2972](../text/2972-scoped.md)", ["2972-scoped\n#:2972\n#rfc:2972"]),
        ("⌛️ Superseded [0019](0019-session-cache.md)", ["0019-session-cache\n#:19"]),
        ("Replaced by [DR014](DR014-thanos.md)", ["DR014-thanos\n#dr:14"]),
        ('Superseded by [ADR 9](0009-x.md "the title")', ["0009-x\n#:9\n#adr:9"]),
        # a `#anchor` on the target is dropped; an in-page anchor counts by the link text
        ("Superseded by [x](./0009-mtls.md#decision)", ["0009-mtls\n#:9"]),
        ("Superseded by [ADR 7](#adr-7)", ["#adr:7"]),
        # reference-style, its definition anywhere in the file
        ("Superseded by [ADR 7][adr7]", ["0007-use-x\n#:7\n#adr:7"]),
        ("Superceded by [ADR024][]", ["ADR024-web-framework-selection\n#adr:24"]),
        ("Superseded by [ADR024]", ["ADR024-web-framework-selection\n#adr:24"]),
        # a definition that is an external URL: the label names the local record
        ("Superseded by [RFC 1974][]", ["#rfc:1974"]),
        # an undefined `[PEP 8]` is its words
        ("Superseded by [PEP 8]", ["#pep:8"]),
        # autolinks: a relative file, and a URL beside the identifier that names the record
        ("SUPERSEDED BY <ADR-0016-card-vault.md>", ["ADR-0016-card-vault\n#adr:16"]),
        ("Superseded by ADR 9, see <https://example.org/adr/0009>.", ["#adr:9"]),
        # site-absolute, directory style with a trailing slash, or a rendered page
        ("Superseded by [ADR021](/decision_records/ADR021-rds/)", ["ADR021-rds\n#adr:21"]),
        ("Superseded by [x](/adr/0007-x.html)", ["0007-x\n#:7"]),
        # wiki links, with a heading or an alias
        ("Superseded by [[ADR-0009-rendering]]", ["ADR-0009-rendering\n#adr:9"]),
        ("Superseded by [[ADR-0009-rendering#Decision]]", ["ADR-0009-rendering\n#adr:9"]),
        ("Superseded by [[ADR-0009-rendering|ADR 9]]", ["ADR-0009-rendering\n#adr:9"]),
        # bare identifiers
        ("Superseded by ADR-7", ["#adr:7"]),
        ("Superseded by ADR-21", ["#adr:21"]),
        ("Superseded by ADR-0019", ["#adr:19"]),
        ("Superseded by ADR007", ["#adr:7"]),
        ("Obsoleted by ADR024", ["#adr:24"]),
        ("Superseded by ADR 7", ["#adr:7"]),
        ("Superseded by ADR 0010", ["#adr:10"]),
        ("Superseded by adr-0005", ["#adr:5"]),
        ("Superseded by DR008", ["#dr:8"]),
        ("Superseded by RFC 1974", ["#rfc:1974"]),
        ("Superseded by RFC-1974", ["#rfc:1974"]),
        ("Superseded by PEP 8", ["#pep:8"]),
        ("Superseded by KEP-1234", ["#kep:1234"]),
        ("superseded by #0006", ["#:6"]),
        ("Superseded by ABC-12", ["#abc:12"]),
        # spellings, `in favour of`, several successors, a bare note name
        ("Superceeded by ADR-7 on 2023-06-12.", ["#adr:7"]),
        ("Deprecated in favour of ADR-21", ["#adr:21"]),
        # a proposal withdrawn or rejected in favour of another names its successor
        ("Withdrawn in favor of [EIP-2681](./eip-2681.md)", ["eip-2681\n#eip:2681"]),
        ("Rejected in favour of ADR-9", ["#adr:9"]),
        ("Abandoned in favor of RFC 1974", ["#rfc:1974"]),
        ("Superseded by ADR-7 and ADR-9", ["#adr:7", "#adr:9"]),
        ("Superseded by new-retry-policy", ["new-retry-policy"]),
        ("~~Accepted~~ Superseded by [ADR-9](./0009-mtls.md#decision)", ["0009-mtls\n#:9\n#adr:9"]),
    ],
)  # fmt: skip
def test_successor_keys(value: str, keys: list[str]) -> None:
    reading = read(value, DEFINITIONS)
    assert successor_keys(reading) == keys
    assert reading.state is not None and not reading.partial and not reading.unknown
    assert reading.predecessors == ()


@pytest.mark.parametrize(
    "value",
    ["Withdrawn by its author, see ADR-9", "Rejected by the board (ADR-9 explains)"],
)
def test_withdrawn_or_rejected_by_someone_names_no_successor(value: str) -> None:
    reading = read(value)
    assert reading.state in ("withdrawn", "rejected") and reading.successors == ()


@pytest.mark.parametrize(
    "value",
    [
        "Superseded by [the policy](https://example.org/policy)",
        "Superseded by <https://example.org/adr/0009>",
        "Superseded by [the new approach](#new-approach)",
    ],
)
def test_a_link_naming_no_note_is_no_successor(value: str) -> None:
    reading = read(value)
    assert reading.state == "superseded"
    assert reading.successors == ()
    found = declare("t.md", note_with_status(value))
    assert found.active_edges() == []
    assert found.active_retirement() is not None


def test_unnamed_successor_is_kept_as_words() -> None:
    reading = read("Superseded by the platform team's new guideline")
    assert reading.state == "superseded" and reading.successors == ()
    assert reading.unresolved == "the platform team's new guideline"
    (edge,) = declare("t.md", note_with_status("Superseded by the platform team's guide")).edges
    assert edge.standing == "unread"


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        ("Supersedes [ADR-0001](0001-use-kafka.md)", ["0001-use-kafka\n#:1\n#adr:1"]),
        ("Supersedes ADR-3 and ADR-4", ["#adr:3", "#adr:4"]),
        ("Replaces [ADR 2](0002-x.md)", ["0002-x\n#:2\n#adr:2"]),
        ("Obsoletes RFC 1234", ["#rfc:1234"]),
    ],
)
def test_forward_edges_name_predecessors(value: str, keys: list[str]) -> None:
    reading = read(value)
    assert [by_name(ref.key) for ref in reading.predecessors] == keys
    assert reading.state is None and reading.successors == () and not reading.partial


def test_one_note_named_twice_is_one_edge() -> None:
    found = declare("t.md", note_with_status("Superseded by [[x-v2]] (x-v2.md)"))
    assert [(e.key, e.reversed) for e in found.active_edges()] == [("@x-v2.md\nx-v2", True)]


# --- partial statements -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "sentence", "successors", "predecessors"),
    [
        ("Partly superseded by ADR-5", False, ["#adr:5"], []),
        ("Partially superseded by ADR-5", False, ["#adr:5"], []),
        ("Mostly superseded by ADR-5", False, ["#adr:5"], []),
        ("Superseded in part by ADR-5", False, ["#adr:5"], []),
        ("Superseded by [x](x.md) in part", False, ["x"], []),
        ("Superseded by [ADR-0016](ADR-0016-x.md) in part: x", False, ["ADR-0016-x\n#adr:16"], []),
        ("Superseded by ADR-5, in part", False, ["#adr:5"], []),
        ("Superseded by ADR-5 (partially)", False, ["#adr:5"], []),
        ("Accepted, amended by [DR014](DR014-x.md) for retention", False, ["DR014-x\n#dr:14"], []),
        ("Amends ADR-3", False, [], ["#adr:3"]),
        ("supersedes the retry section of ADR-3", False, [], ["#adr:3"]),
        ("This record supersedes the retry section of ADR-3.", True, [], ["#adr:3"]),
        ("⚠ This RFC has mostly been superseded ⚠", True, [], []),
    ],
)  # fmt: skip
def test_partial_statement(
    value: str, sentence: bool, successors: list[str], predecessors: list[str]
) -> None:
    reading = read(value, sentence=sentence)
    assert reading.partial
    assert reading.state is None, "a partial statement retires nothing"
    assert successor_keys(reading) == successors
    assert [by_name(ref.key) for ref in reading.predecessors] == predecessors


@pytest.mark.parametrize(
    "value",
    [
        "Partly superseded by ADR-5",
        "Superseded by [x](x.md) in part",
        "Accepted, amended by [DR014](DR014-thanos.md) for retention",
        "supersedes the retry section of ADR-3",
    ],
)
def test_partial_statement_is_never_a_full_edge(value: str) -> None:
    found = declare("t.md", note_with_status(value))
    assert found.active_edges() == [] and found.active_retirement() is None
    assert [e.standing for e in found.edges] == ["partial"]
    assert [e.origin.line for e in found.standing("partial")] == [5]


# --- identifiers, file names, references ----------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("ADR-7", "#adr:7"),
        ("ADR007", "#adr:7"),
        ("ADR 7", "#adr:7"),
        ("adr 7", "#adr:7"),
        ("  ADR-7 ", "#adr:7"),
        ("ADR-0019", "#adr:19"),
        ("DR008", "#dr:8"),
        ("RFC 1974", "#rfc:1974"),
        ("RFC-1974", "#rfc:1974"),
        ("RFC1974", "#rfc:1974"),
        ("PEP 8", "#pep:8"),
        ("pep8", "#pep:8"),
        ("KEP-1234", "#kep:1234"),
        ("ABC-12", "#abc:12"),
        ("#0005", "#:5"),
        ("0019", "#:19"),
        # not a whole identifier
        ("ADR-", None),
        ("ADR-7x", None),
        ("ADR-7 and ADR-9", None),
        ("x", None),
        ("", None),
        ("1234567", None),
    ],
)
def test_identifier_key(written: str, key: str | None) -> None:
    assert identifier_key(written) == key


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("RFC 1974", "#rfc:1974"),
        ("0007-use-x.md", "0007-use-x\n#:7"),
        ("docs/adr/ADR-0005-x.md", "ADR-0005-x\n#adr:5"),
        ("notes.md", "notes"),
    ],
)
def test_reference_key(written: str, key: str) -> None:
    assert by_name(reference_key(written)) == key


@pytest.mark.parametrize(
    ("name", "alias"),
    [
        ("0005-x.md", "#:5"),
        ("0005.md", "#:5"),
        ("adr-0005-x.md", "#adr:5"),
        ("ADR-0005-x.md", "#adr:5"),
        ("ADR_5_x.md", "#adr:5"),
        ("ADR021-managed-postgres-on-rds.md", "#adr:21"),
        ("DR008-x.md", "#dr:8"),
        ("1974-x.md", "#:1974"),
        ("pep-0008.rst", "#pep:8"),
        ("docs/adr/0012-foo.md", "#:12"),
        ("docs\\adr\\0012-foo.md", "#:12"),
        # no number, or a date that is no number
        ("2021-05-01-x.md", None),
        ("README.md", None),
        ("index.md", None),
        ("x-v2.md", None),
    ],
)
def test_file_alias(name: str, alias: str | None) -> None:
    assert file_alias(name) == alias


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("2021-05-01", dt.date(2021, 5, 1)),
        ("Superceeded by ADR-7 on 2023-06-12.", dt.date(2023, 6, 12)),
        ("Superseded by ADR 0010 (2026-09-28).", dt.date(2026, 9, 28)),
        ("Resolution: https://example.org/msg (21-Feb-2022)", dt.date(2022, 2, 21)),
        ("1-Jan-2020", dt.date(2020, 1, 1)),
        ("21 February 2022", dt.date(2022, 2, 21)),
        ("May 1, 2021", dt.date(2021, 5, 1)),
        ("May 1st 2021", dt.date(2021, 5, 1)),
        ("Sept. 3, 2020", dt.date(2020, 9, 3)),
        # the first date written
        ("Jan 5, 2020, then 2019-01-01", dt.date(2020, 1, 5)),
        # no date
        ("2021-02-30", None),
        ("2021-13-01", None),
        ("ADR-2021", None),
        ("no date here", None),
        ("", None),
    ],
)
def test_find_date(text: str, date: dt.date | None) -> None:
    assert find_date(text) == date


@pytest.mark.parametrize(
    ("value", "date", "keys"),
    [
        ("Superseded by ADR 0010 (2026-09-28).", dt.date(2026, 9, 28), ["#adr:10"]),
        ("Superseded on 2021-05-01 by [DR10](DR10-x.md)", dt.date(2021, 5, 1), ["DR10-x\n#dr:10"]),
        ("Deprecated", None, []),
    ],
)  # fmt: skip
def test_a_date_is_no_identifier(value: str, date: dt.date | None, keys: list[str]) -> None:
    reading = read(value)
    assert reading.date == date and successor_keys(reading) == keys


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("~~Accepted~~ **Superseded** by `ADR-7` ⚠️!", "superseded by adr 7"),
        ("<del>Accepted</del> Rejected", "rejected"),
        ("❌ _Rejected_.", "rejected"),
        ("", ""),
    ],
)
def test_normalise(line: str, words: str) -> None:
    assert normalise(line) == words


def test_references_in_order_each_once() -> None:
    text = "see ADR-7, RFC 1974 and [x](0005-x.md) and ADR-7 again"
    assert [(r.written, by_name(r.key)) for r in references(text)] == [
        ("ADR-7", "#adr:7"),
        ("RFC 1974", "#rfc:1974"),
        ("0005-x.md", "0005-x\n#:5"),
    ]
    assert references("no reference at all") == []


def test_references_at_offsets() -> None:
    text = "Superseded by ADR-7 and [y](0009-y.md)"
    found = references_at(text)
    assert [(by_name(r.key), offset) for r, offset in found] == [
        ("#adr:7", 14),
        ("0009-y\n#:9", 24),
    ]
    assert text[14:].startswith("ADR-7") and text[24:].startswith("[y](0009-y.md)")


def test_link_definitions() -> None:
    text = (
        "Body [ADR024][].\n"
        "[ADR024]: ./ADR024-x.md\n"
        '  [Foo  Bar]: <http://example.org/x> "title"\n'
        "    [indented]: code.md\n"
        "[ADR024]: the-second-is-ignored.md\n"
    )
    assert link_definitions(text) == {"adr024": "./ADR024-x.md", "foo bar": "http://example.org/x"}
    assert link_definitions("no definitions") == {}


# --- totality -----------------------------------------------------------------------------------


# A character of the private-use plane the reader marks references with (icon fonts such as
# Nerd Fonts draw from it).
ICON = "\U000f0000"


@given(st.text())
@example(f"Superseded by {ICON}")
@example(f"Superseded by ADR-7 {ICON}\U000f0001")
def test_the_reader_never_raises(text: str) -> None:
    reading = read(text, link_definitions(text), sentence=True)
    assert isinstance(reading, Reading)
    assert isinstance(normalise(text), str)
    assert all(isinstance(ref.key, str) for ref in references(text))
    find_date(text)
    file_alias(text)
    identifier_key(text)


@given(st.text())
@example(note_with_status(f"Superseded by {ICON}"))
def test_declare_never_raises(text: str) -> None:
    for name in ("t.md", "pep-0001.rst"):
        found = declare(name, text)
        assert all(e.origin.line >= 1 for e in found.edges)


# --- properties: a terminal status however dressed ------------------------------------------------

EMPHASIS = ("*", "**", "_", "__")
CODE = ("`", "``", "```")
SYMBOLS = ("❌", "⚠️", "⛔", "🚫", "⌛️", "🗑️", "✖")
PUNCTUATION = tuple(".,;:!?()[]-—…'\"")


@st.composite
def dressed_terminal(draw: st.DrawFn) -> tuple[str, str]:
    """(status word as in `TERMINAL`, the word in any case wrapped in layers of emphasis, code
    marks, a symbol and punctuation)."""
    word = draw(st.sampled_from(sorted(TERMINAL)))
    text = "".join(ch.upper() if draw(st.booleans()) else ch for ch in word)
    for layer in draw(
        st.lists(st.sampled_from(("emphasis", "code", "symbol", "punct")), max_size=5)
    ):
        if layer == "emphasis":
            mark = draw(st.sampled_from(EMPHASIS))
            text = f"{mark}{text}{mark}"
        elif layer == "code":
            mark = draw(st.sampled_from(CODE))
            text = f"{mark}{text}{mark}"
        elif layer == "symbol":
            symbol = draw(st.sampled_from(SYMBOLS)) + draw(st.sampled_from(("", " ")))
            text = symbol + text if draw(st.booleans()) else text + symbol[::-1]
        else:
            mark = draw(st.sampled_from(PUNCTUATION))
            text = mark + text if draw(st.booleans()) else text + mark
    return word, text


@given(dressed_terminal())
@example(("rejected", "❌ **Rejected**."))
@example(("superceded", "⌛️ `SUPERCEDED`"))
# A code span of three backticks opening the line (CommonMark: no fence, its info string would
# hold a backtick).
@example(("rejected", "```Rejected```"))
def test_dressed_terminal_status_retires(case: tuple[str, str]) -> None:
    word, value = case
    found = declare("t.md", note_with_status(value))
    retired = found.active_retirement()
    assert retired is not None, value
    assert (retired.state, retired.origin.line) == (TERMINAL[word], 5)
    assert found.active_edges() == [] and not found.current


@settings(max_examples=25)
@given(dressed_terminal())
def test_dressed_terminal_status_is_expired_in_search(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]
) -> None:
    _, value = case
    root = tmp_path_factory.mktemp("dressed")
    notes = root / "notes"
    notes.mkdir()
    (notes / "t.md").write_text(note_with_status(value), encoding="utf-8")
    (notes / "u.md").write_text("# U\n\nOther text about queues.\n", encoding="utf-8")
    now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with recall.open(root / "m.db", embedder="hashing-512") as mem:
        mem.index(notes, now=now)
        res = mem.search("some text about queues", k=5, now=now, mode="development")
    (hit,) = [h for h in res.hits if h.provenance.file == "t.md"]
    assert hit.verdict == "expired", value
    assert hit.validity.retired is not None and hit.validity.retired.line == 5


@pytest.mark.parametrize(
    ("value", "state"),
    [
        ("Status: [Deprecated](../README.md#deprecated)", "deprecated"),
        ("[**Rejected**](glossary.md#rejected)", "rejected"),
    ],
)
def test_a_status_word_linked_to_its_definition(value: str, state: str) -> None:
    reading = read(value)
    assert (reading.state, reading.unknown, reading.successors) == (state, False, ())


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        # CommonMark: a destination in angle brackets may hold spaces.
        ("Superseded by [ADR 9](<0009 x.md>)", ["0009 x\n#:9\n#adr:9"]),
        ("Superseded by [ADR 9](<./0009-x.md#decision>)", ["0009-x\n#:9\n#adr:9"]),
        ('Superseded by [ADR 9](0009-x.md "the new one")', ["0009-x\n#:9\n#adr:9"]),
    ],
)
def test_link_destinations_in_angle_brackets_and_with_titles(text: str, keys: list[str]) -> None:
    assert [by_name(r.key) for r in references(text)] == keys


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # A relative link names one file from the declaring note's folder: tried first.
        ("Superseded by [ADR 7](0007-x.md)", "@0007-x.md"),
        ("Superseded by [x](../text/2972-scoped.md#summary)", "@../text/2972-scoped.md"),
        ("Superseded by [`notification/`](notification/README.md)", "@notification/README.md"),
        ("Superseded by [the new spec](specs/)", "@specs/"),
    ],
)
def test_a_relative_link_names_its_file_first(text: str, first: str) -> None:
    (ref,) = references(text)
    assert ref.key.split("\n")[0] == first


def test_site_absolute_and_index_links() -> None:
    (site,) = references("Superseded by [ADR021](/records/ADR021-rds/)")
    assert not any(k.startswith("@") for k in site.key.split("\n"))
    # An index page is named by its folder (a folder-per-note tree): its path first, then the
    # folder's name and number.
    (index,) = references("Superseded by [x](notification/README.md)")
    assert index.key == "@notification/README.md\nnotification"
    (kep,) = references("Replaced by [KEP 1205](/keps/sig-auth/1205-bound-tokens/README.md)")
    assert kep.key == "1205-bound-tokens\n#:1205\n#kep:1205"
    (folder,) = references("Superseded by [inventory](/keps/sig-x/4322-cluster-inventory/)")
    assert folder.key == "4322-cluster-inventory\n#:4322"
    # A repository's issue or pull request: its text's identifier, then the issue's number.
    (issue,) = references("Replaced by [KEP 2433: hints](https://github.com/k/e/issues/2433)")
    assert issue.key == "#kep:2433\n#issue:2433"
    (issue,) = references("Replaced by [topology hints](https://github.com/k/e/issues/2433)")
    assert issue.key == "#issue:2433"
    assert references("Replaced by [the page](https://example.org/docs/2433)") == []
