"""Edge vocabularies (SPEC §8.4): PEP preambles, MADR and Nygard ADRs as declared edges and
retirements, frontmatter's precedence, the `--vocabularies` setting, and what the store, search,
explain and stats make of them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

import recall
from recall.indexing import DECLARATIONS_VERSION
from recall.vocabularies import declare

from .conftest import write_corpus
from .test_search import certified

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)

PEP_OLD = """PEP: 1
Title: Tabs for indentation
Author: A. Writer
Status: Superseded
Type: Standards Track
Superseded-By: 2

Abstract
========
Indent with one tab per level in every module.
"""
PEP_NEW = """PEP: 2
Title: Spaces for indentation
Status: Final
Replaces: 1

Abstract
========
Indent with four spaces per level in every module.
"""
PEP_WITHDRAWN = """PEP: 3
Title: Lambda sugar for the standard library
Status: Withdrawn
Created: 01-Jan-2020

Lambda sugar lets a reader write shorter anonymous callbacks in the standard library.
"""
NYGARD_OLD = """# 1. Store sessions in memcached

Date: 2019-04-02

## Status

Superseded by [3. Store sessions in Redis](0003-sessions-in-redis.md)

## Context

Sessions live in memcached with a one hour expiry.
"""
NYGARD_NEW = """# 3. Store sessions in Redis

## Status

Accepted

Supersedes [1. Store sessions in memcached](0001-sessions-in-memcached.md)

## Decision

Sessions live in Redis with a one hour expiry and persistence enabled.
"""
MADR_OLD = """---
status: "superseded by ADR-0005"
date: 2021-03-04
---
# Queue jobs in RabbitMQ

Background jobs go through RabbitMQ with manual acknowledgements.
"""
MADR_NEW = """---
status: accepted
date: 2022-01-10
---
# Queue jobs in Postgres

Background jobs go through a Postgres table with SKIP LOCKED workers.
"""


@pytest.mark.parametrize(
    ("path", "text", "edges", "retired", "alias"),
    [
        ("pep-0001.rst", PEP_OLD, [("2", "#pep:2", True, 6)], ("superseded", 4), "#pep:1"),
        ("pep-0002.rst", PEP_NEW, [("1", "#pep:1", False, 4)], None, "#pep:2"),
        ("pep-0003.rst", PEP_WITHDRAWN, [], ("withdrawn", 3), "#pep:3"),
        (
            "0001-sessions-in-memcached.md",
            NYGARD_OLD,
            [
                (
                    "0003-sessions-in-redis.md",
                    "@0003-sessions-in-redis.md\n0003-sessions-in-redis\n#:3",
                    True,
                    7,
                )
            ],
            ("superseded", 7),
            "#:1",
        ),
        (
            "0003-sessions-in-redis.md",
            NYGARD_NEW,
            [
                (
                    "0001-sessions-in-memcached.md",
                    "@0001-sessions-in-memcached.md\n0001-sessions-in-memcached\n#:1",
                    False,
                    7,
                )
            ],
            None,
            "#:3",
        ),
        (
            "0004-jobs.md",
            MADR_OLD,
            [("ADR-0005", "#adr:5", True, 2)],
            ("superseded", 2),
            "#:4",
        ),
        ("0005-jobs.md", MADR_NEW, [], None, "#:5"),
        # MADR 2 bullets, with the date of the state change.
        ("x.md", "# X\n\n* Status: deprecated\n* Date: 2020-05-01\n", [], ("deprecated", 3), None),
        # The template's list of choices is no status: it is recorded as unread (SPEC §2.5).
        (
            "y.md",
            "---\nstatus: '[proposed | rejected | accepted]'\n---\n",
            [("status: [proposed | rejected | accepted]", "", False, 2)],
            None,
            None,
        ),
        # Prose is no preamble.
        ("z.rst", "Note: this is prose\n\nmore prose\n", [], None, None),
        ("w.md", "# W\n\nThe old flow was superseded by the new one.\n", [], None, None),
    ],
)
def test_declarations_by_vocabulary(
    path: str,
    text: str,
    edges: list[tuple[str, str, bool, int]],
    retired: tuple[str, int] | None,
    alias: str | None,
) -> None:
    d = declare(path, text)
    assert [(e.reference, e.key, e.reversed, e.origin.line) for e in d.edges] == edges
    got = (d.retired.state, d.retired.origin.line) if d.retired else None
    assert got == retired
    assert d.alias == alias
    if path == "x.md":
        assert d.retired is not None and d.retired.since == dt.date(2020, 5, 1)


def test_frontmatter_wins_where_both_speak() -> None:
    edges = "---\nsupersedes: a.md\n---\n# Note\n\n## Status\n\nSupersedes [B](b.md)\n"
    d = declare("n.md", edges)
    assert [(e.key, e.origin.vocabulary) for e in d.active_edges()] == [("a", "frontmatter")]
    assert [(e.key, e.origin.vocabulary, e.overridden) for e in d.edges if e.overridden] == [
        ("@b.md\nb", "nygard", True)
    ]
    window = "---\nvalid_until: 2999-12-31\nstatus: deprecated\n---\n# Note\n"
    d = declare("n.md", window)
    # The header's terminal state is kept for explain, but frontmatter's window is in force.
    assert d.retired is not None and d.retired.overridden and d.active_retirement() is None
    # A reversed edge has no frontmatter counterpart: it stays in force beside `supersedes:`.
    both = "---\nsupersedes: a.md\nstatus: superseded by [c](c.md)\n---\n# Note\n"
    assert [(e.key, e.reversed) for e in declare("n.md", both).active_edges()] == [
        ("a", False),
        ("@c.md\nc", True),
    ]


@pytest.mark.parametrize(
    ("field", "value", "keys"),
    [
        ("withdrawal-reason", "Superseded by EIP-7702", ["#eip:7702"]),
        ("withdrawal-reason", "Replaced by EIP-3860.", ["#eip:3860"]),
        ("rejection_reason", "Rejected in favour of [ADR 9](0009-x.md)",
         ["@0009-x.md\n0009-x\n#:9\n#adr:9"]),
        ("withdrawal-reason", "The authors prefer [EIP-2200](./eip-2200.md).",
         ["@./eip-2200.md\neip-2200\n#eip:2200"]),
        ("notes", "Superseded by ADR-4", ["#adr:4"]),
        # A reason that names no successor, or only part of one, gives no edge.
        ("withdrawal-reason", "Withdrawn by the author; see EIP-1 for the process.", []),
        ("withdrawal-reason", "Partly superseded by EIP-7702", []),
        # Fields that describe the note are not read: a title may name a subject that was replaced.
        ("description", "Superseded by EIP-7702", []),
        ("title", "Replaced by EIP-3860", []),
    ],
)  # fmt: skip
def test_a_reason_field_names_the_successor(field: str, value: str, keys: list[str]) -> None:
    text = f"---\neip: 1\nstatus: Withdrawn\n{field}: {value}\n---\n# A proposal\n\nText.\n"
    d = declare("eip-1.md", text)
    assert [e.key for e in d.active_edges() if e.reversed] == keys
    assert all(e.origin.line == 4 for e in d.active_edges())
    retired = d.active_retirement()
    assert retired is not None and retired.state == "withdrawn" and retired.origin.line == 3


def _corpus(root: Path) -> Path:
    return write_corpus(
        root,
        {
            "peps/pep-0001.rst": PEP_OLD,
            "peps/pep-0002.rst": PEP_NEW,
            "peps/pep-0003.rst": PEP_WITHDRAWN,
            "adr/0001-sessions-in-memcached.md": NYGARD_OLD,
            "adr/0003-sessions-in-redis.md": NYGARD_NEW,
            "adr/0004-jobs.md": MADR_OLD,
            "adr/0005-jobs.md": MADR_NEW,
            "notes/disagree.md": "---\nvalid_until: 2999-12-31\nstatus: rejected\n---\n"
            "# Cache warmup\n\nWarm the cache with the top thousand keys at deploy.\n",
        },
    )


def _verdicts(mem: recall.Memory, query: str) -> dict[str, recall.Hit]:
    res = mem.search(query, k=10, now=NOW, mode="development")
    return {h.provenance.file: h for h in res.hits}


def test_store_judges_header_vocabularies(backend: Callable[[str], str], corpus: Path) -> None:
    _corpus(corpus)
    with recall.open(backend("m.db")) as mem:
        report = mem.index(corpus, now=NOW)
        assert report.ok and len(report.added) == 8
        hits = _verdicts(mem, "indentation tabs spaces per level")
        old = hits["peps/pep-0001.rst"]
        assert old.verdict == "superseded"
        assert old.validity.superseded_by == "peps/pep-0002.rst"
        assert hits["peps/pep-0002.rst"].verdict != "superseded"
        assert old.title == "Tabs for indentation"

        hits = _verdicts(mem, "lambda sugar anonymous callbacks")
        withdrawn = hits["peps/pep-0003.rst"]
        assert withdrawn.verdict == "expired"
        assert withdrawn.validity.retired == recall.Retired(
            "withdrawn", None, "pep", 3, "Status: Withdrawn"
        )

        hits = _verdicts(mem, "sessions expiry memcached redis")
        assert hits["adr/0001-sessions-in-memcached.md"].validity.superseded_by == (
            "adr/0003-sessions-in-redis.md"
        )
        hits = _verdicts(mem, "background jobs queue workers")
        assert hits["adr/0004-jobs.md"].verdict == "superseded"
        assert hits["adr/0004-jobs.md"].validity.superseded_by == "adr/0005-jobs.md"

        # Frontmatter's valid_until overrides the header's terminal state.
        hits = _verdicts(mem, "warm the cache top keys at deploy")
        assert hits["notes/disagree.md"].verdict == "unverified"
        e = mem.explain("warm the cache top keys at deploy", "notes/disagree.md", now=NOW)
        assert e["retired"] is None
        assert e["ignored"] == [
            {
                "kind": "retirement",
                "vocabulary": "madr",
                "line": 3,
                "statement": "status: rejected",
                "why": "overridden by frontmatter",
            }
        ]

        e = mem.explain("indentation", "peps/pep-0001.rst", now=NOW)
        assert e["alias"] == "#pep:1"
        reversed_claims = [c for c in e["claims_out"] if c["reversed"]]
        assert [
            (c["vocabulary"], c["line"], c["statement"], c["targets"]) for c in reversed_claims
        ] == [("pep", 6, "Superseded-By: 2", ["peps/pep-0002.rst"])]

        st = mem.stats()
        assert st.vocabularies == "all"
        assert dict((v, n) for v, n, _ in st.edges_by_vocabulary) == {
            "madr": 1,
            "nygard": 2,
            "pep": 2,
        }
        assert st.edges_resolved == 5 and st.edges_dangling == 0
        assert st.retired == 4  # pep-0001, pep-0003, 0001 and 0004; disagree.md is overridden


def test_abstention_names_the_retired_note(backend: Callable[[str], str], corpus: Path) -> None:
    _corpus(corpus)
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=NOW)
        certified(mem, threshold=0.2)
        res = mem.search("lambda sugar anonymous callbacks standard library", now=NOW)
        assert res.abstained
        assert "pep-0003.rst is withdrawn (pep line 3: Status: Withdrawn)" in res.reason


@pytest.mark.parametrize(
    ("setting", "pep_verdict", "frontmatter_edge"),
    [
        ("all", "superseded", True),
        ("frontmatter", "unverified", True),
        ("none", "unverified", False),
    ],
)
def test_vocabularies_setting(
    backend: Callable[[str], str],
    corpus: Path,
    setting: str,
    pep_verdict: str,
    frontmatter_edge: bool,
) -> None:
    _corpus(corpus)
    write_corpus(
        corpus,
        {
            "notes/retry-v1.md": "# Retry\n\nRetry three times with backoff.\n",
            "notes/retry-v2.md": "---\nsupersedes: retry-v1.md\n---\n# Retry\n\n"
            "Retry five times with jittered backoff.\n",
        },
    )
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=NOW)
        report = mem.index(corpus, now=NOW, vocabularies=setting)
        assert report.embedded == 0  # a setting changes what is in force, not the vectors
        assert mem.stats().vocabularies == setting
        hits = _verdicts(mem, "indentation tabs spaces per level")
        assert hits["peps/pep-0001.rst"].verdict == pep_verdict
        hits = _verdicts(mem, "retry backoff times")
        assert (hits["notes/retry-v1.md"].verdict == "superseded") is frontmatter_edge
        # Kept by the next run that does not name a setting.
        mem.index(corpus, now=NOW)
        assert mem.stats().vocabularies == setting


def test_bad_vocabularies_setting_is_a_usage_error(tmp_path: Path, corpus: Path) -> None:
    _corpus(corpus)
    with recall.open(tmp_path / "m.db") as mem, pytest.raises(recall.UsageError, match="none"):
        mem.index(corpus, now=NOW, vocabularies="some")


def test_declarations_read_again_after_a_reader_change(
    backend: Callable[[str], str], corpus: Path
) -> None:
    _corpus(corpus)
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=NOW)
        store = mem._store
        # A store declared by an older reader: no header edges, an older version mark.
        store.begin(*store.stats()["embedder"])
        for path in ("peps/pep-0001.rst", "peps/pep-0002.rst"):
            store.set_declarations(str(corpus.resolve()), path, [], None, None)
        store.set_meta("declarations_version", "0")
        store.commit("2026-11-30T00:00:00.000000Z")
        assert _verdicts(mem, "indentation tabs")["peps/pep-0001.rst"].verdict == "unverified"

        report = mem.index(corpus, now=NOW)
        assert report.embedded == 0 and report.unchanged == 8
        assert _verdicts(mem, "indentation tabs")["peps/pep-0001.rst"].verdict == "superseded"
        assert store.meta("declarations_version") == DECLARATIONS_VERSION


def test_cli_shows_vocabularies(tmp_path: Path, corpus: Path) -> None:
    from typer.testing import CliRunner

    from recall.cli import app

    _corpus(corpus)
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(corpus), "--db", db]).exit_code == 0
    q = "lambda sugar anonymous callbacks"
    found = runner.invoke(app, ["search", q, "--db", db, "--mode", "development"])
    assert "withdrawn (pep line 3)" in found.output
    why = runner.invoke(app, ["explain", q, "peps/pep-0003.rst", "--db", db])
    assert why.exit_code == 0 and "retired: withdrawn" in why.output
    claims = runner.invoke(app, ["explain", q, "peps/pep-0001.rst", "--db", db])
    assert "is superseded by '2'" in claims.output and "pep line 6" in claims.output
    stats = runner.invoke(app, ["stats", "--db", db])
    assert "all: madr 1 · nygard 2 · pep 2" in stats.output
    bad = runner.invoke(app, ["index", str(corpus), "--db", db, "--vocabularies", "x"])
    assert bad.exit_code == 2 and "unknown vocabularies setting" in bad.output


_FILLER = "\n".join(f"The design's paragraph {i} says how the field is kept." for i in range(70))
# Forms real trees hold that are no status: a table of contents, links to the note's own
# sections, a template's HTML comments, a `### Status` deep inside a design.
NOT_A_STATUS = {
    "toc": "# Feature gates\n\n## Table of contents\n\n- [Summary](#summary)\n"
    "- [Deprecated](#deprecated)\n- [Removed](#removed)\n\n## Summary\n\nGates turn features on.\n"
    "\n## Deprecated\n\nGates that will go.\n",
    "self-anchor": "# Flags\n\nSee [deprecated flags](#deprecated-flags) and "
    "[superseded settings](#superseded-settings) below.\n\n## Deprecated flags\n\nNone yet.\n",
    "comment": "# KEP-2: Gates\n\n<!--\nThis section records the date when the KEP was retired or\n"
    "superseded, and why.\n-->\n\n## Summary\n\nText about gates.\n",
    "inline-comment": "# Gates\n\nGates turn features on. <!-- Status: Deprecated -->\n",
    "comment-in-status": "# Gates\n\n## Status\n\n<!-- proposed, rejected, deprecated -->\n"
    "Accepted\n",
    "deep-status": "# API design\n\n## Summary\n\nAn API.\n\n## Design\n\n" + _FILLER + "\n\n"
    "### Status\n\nThe status field holds the pod phase and the last probe result.\n",
    "deep-status-word": "# API design\n\n## Summary\n\nAn API.\n\n## API\n\n" + _FILLER + "\n\n"
    "#### Status\n\nDeprecated fields are dropped from the status after one release.\n",
}


@pytest.mark.parametrize("text", list(NOT_A_STATUS.values()), ids=list(NOT_A_STATUS))
def test_no_false_declarations(text: str) -> None:
    d = declare("README.md", text)
    assert d.edges == () and d.retired is None
    assert [s for s in d.statements if "ccepted" not in s.text] == []


def test_a_status_section_after_the_decision_still_counts() -> None:
    """A Nygard status section may follow the decision: a top section of the note counts
    wherever it is; only one nested in another section is not the note's status."""
    text = "# 5. Queues\n\n## Context\n\n" + _FILLER + "\n\n## Status\n\nDeprecated\n"
    retired = declare("0005-queues.md", text).active_retirement()
    assert retired is not None and retired.state == "deprecated"
    nested = "# 5. Queues\n\n## Decision\n\nUse SQS.\n\n### Status\n\nDeprecated\n"
    early = declare("0005-queues.md", nested).active_retirement()
    assert early is not None, "a nested status section in the opening still counts"


def test_declarations_are_bounded_per_note(tmp_path: Path) -> None:
    """A `Superseded-By:` line of 20,000 numbers (129 KB) made 20,000 edges that each stored
    the whole line: a 2.6 GB store. At most MAX_TARGETS edges are read, each with the
    statement cut to MAX_STATEMENT_CHARS, so the store grows with the file, not its square."""
    from recall.status import MAX_STATEMENT_CHARS
    from recall.vocabularies import MAX_TARGETS

    numbers = ", ".join(str(i) for i in range(2, 20_000))
    text = f"PEP: 1\nTitle: Purpose\nStatus: Superseded\nSuperseded-By: {numbers}\n\nBody.\n"
    said = declare("pep-0001.rst", text)
    assert len(said.edges) == MAX_TARGETS and said.dropped == 19_998 - MAX_TARGETS
    assert [e.reference for e in said.edges[:3]] == ["2", "3", "4"]
    assert all(len(e.origin.text) <= MAX_STATEMENT_CHARS for e in said.edges)
    assert said.edges[0].origin.text.startswith("Superseded-By: 2, 3, 4")
    write_corpus(tmp_path / "peps", {"pep-0001.rst": text, "pep-0002.rst": "PEP: 2\n\nBody.\n"})
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(tmp_path / "peps").ok
    assert db.stat().st_size < 8 * 1024 * 1024


KEP_README = "# KEP-{n}: {title}\n\n## Summary\n\n{title} in a sentence about {n}.\n"


def _kep(root: Path, sig: str, folder: str, title: str, yaml: str) -> None:
    number = folder.split("-", 1)[0]
    write_corpus(
        root,
        {
            f"keps/{sig}/{folder}/README.md": KEP_README.format(n=number, title=title),
            f"keps/{sig}/{folder}/kep.yaml": f"title: {title}\nkep-number: {number}\n{yaml}",
        },
    )


def test_a_sidecar_declares_for_its_note(backend: Callable[[str], str], corpus: Path) -> None:
    """SPEC §2.5 `sidecar`: a folder-per-note KEP's `kep.yaml` declares for its README, is shown
    by explain with its file and line, counted by stats, and a change to it alone declares the
    note again at the next run; the metadata file is never a note of its own."""
    _kep(corpus, "sig-node", "281-dynamic-config", "Dynamic config", "status: implemented\n")
    _kep(corpus, "sig-node", "2133-config-files", "Config files", "status: implemented\n")
    old = "keps/sig-node/281-dynamic-config/README.md"
    sidecar = corpus / "keps/sig-node/281-dynamic-config/kep.yaml"
    with recall.open(backend("m.db")) as mem:
        report = mem.index(corpus, now=NOW)
        assert sorted(report.added) == [
            "keps/sig-node/2133-config-files/README.md",
            "keps/sig-node/281-dynamic-config/README.md",
        ]
        assert mem.explain("Dynamic config", old, now=NOW)["retired"] is None
        sidecar.write_text(
            "title: Dynamic config\nkep-number: 281\n"
            "status: replaced # replaced by keps/sig-node/2133-config-files\n"
        )
        report = mem.index(corpus, now=NOW)
        assert report.updated == [old]
        ex = mem.explain("Dynamic config", old, now=NOW)
        assert ex["superseded_by"] == "keps/sig-node/2133-config-files/README.md"
        (claim,) = [c for c in ex["claims_out"] if c["declarer"] == old]
        assert claim["vocabulary"] == "sidecar" and claim["line"] == 3
        assert claim["statement"].startswith("keps/sig-node/281-dynamic-config/kep.yaml: status:")
        assert ("sidecar", 1) in {(v, n) for v, n, _ in mem.stats().edges_by_vocabulary}
        # Removed, the metadata file declares nothing any more.
        sidecar.unlink()
        report = mem.index(corpus, now=NOW)
        assert report.updated == [old]
        assert mem.explain("Dynamic config", old, now=NOW)["superseded_by"] is None


def test_a_sidecar_that_cannot_be_read_is_reported_and_the_note_kept(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    _kep(root, "sig-apps", "3000-budget", "Budget", "status: [unclosed\n")
    (root / "keps/sig-apps/3000-budget/kep.yaml").write_bytes(b"status: \xff\xfe withdrawn\n")
    with recall.open(tmp_path / "m.db", embedder="hashing-64") as mem:
        report = mem.index(root, now=NOW, calibrate=False)
        assert report.added == ["keps/sig-apps/3000-budget/README.md"]
        (skipped,) = report.skipped
        assert skipped.path == "keps/sig-apps/3000-budget/kep.yaml"
        assert "metadata of keps/sig-apps/3000-budget/README.md not read: not UTF-8" in (
            skipped.reason
        )


@pytest.mark.parametrize("nothing", ["n/a", "N/A", "none", "~", "-", "null", "TBD", '""'])
def test_a_successor_key_saying_none_names_no_note(nothing: str) -> None:
    """A KEP's `superseded-by: - n/a`: no edge, and the note is not retired."""
    for text in (
        f"---\nstatus: implemented\nsuperseded-by:\n  - {nothing}\n---\n# A\n\nText.\n",
        f"---\nstatus: implemented\nsuperseded-by: {nothing}\n---\n# A\n\nText.\n",
    ):
        d = declare("README.md", text)
        assert d.edges == () and d.active_retirement() is None, text


def test_a_sidecar_is_the_note_stem_or_the_one_file_of_an_index_page() -> None:
    from recall.walk import sidecar_of

    assert sidecar_of("0005-x.md", ["0005-x.yaml", "other.yml"]) == "0005-x.yaml"
    assert sidecar_of("0005-x.md", ["0005-x.json"]) == "0005-x.json"
    assert sidecar_of("0005-x.md", ["kep.yaml"]) is None, "only an index page takes the folder's"
    assert sidecar_of("README.md", ["kep.yaml"]) == "kep.yaml"
    assert sidecar_of("README.md", ["kep.yaml", "openapi.yaml"]) is None, "one, or none"
