"""`recall fix` (SPEC §8.4): it proposes only what the prose proves, refuses the rest with its
reason, and writes frontmatter byte for byte (BOM, line endings, every other line kept)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall.authoring.fix import EditError, add_supersedes, fix
from recall.authoring.lint import lint
from recall.cli import app
from recall.frontmatter import parse

from .conftest import write_corpus

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- what it refuses ----------------------------------------------------------------------------

OLD = {"old.md": "# Old\n\nThe old way.\n"}

# (files besides old.md, the note with the sentence, its text, the refusal)
REFUSALS = [
    ("reported speech", {}, "the team said [old](old.md) was superseded\n", "reported_speech"),
    ("hedge", {}, "this may replace [old](old.md)\n", "hedge"),
    ("partial scope", {}, "replaces the retry section of [old](old.md)\n", "partial_scope"),
    ("negated", {}, "This does not replace [old](old.md).\n", "negated"),
    ("no reference", {}, "This note replaces the old way.\n", "no_reference"),
    (
        "two references",
        {"older.md": "x\n"},
        "It replaces [a](old.md) and [b](older.md).\n",
        "ambiguous_reference",
    ),
    (
        "reference names two notes",
        {"sub/old.md": "y\n"},
        "This note replaces [old](old.md).\n",
        "ambiguous_reference",
    ),
    ("dangling", {}, "This note replaces [gone](gone.md).\n", "dangling_reference"),
    ("self", {}, "This note replaces [me](new.md).\n", "self_reference"),
    ("unknown direction", {}, "See [old](old.md), which is obsolete.\n", "unknown_direction"),
    (
        "already declared",
        {},
        "---\nsupersedes: old.md\n---\nThis note replaces [old](old.md).\n",
        "already_declared",
    ),
    (
        "declared the other way",
        {"old.md": "---\nsupersedes: new.md\n---\nOld\n"},
        "This note replaces [old](old.md).\n",
        "contradicts_declared",
    ),
    (
        "a header edge would be overridden",
        {},
        "# 2. New\n\n## Status\n\nSupersedes ADR-0009\n\nThis note replaces [old](old.md).\n",
        "would_override_header",
    ),
]


@pytest.mark.parametrize(
    ("label", "files", "text", "reason"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_refusal(corpus: Path, label: str, files: dict[str, str], text: str, reason: str) -> None:
    write_corpus(corpus, {**OLD, **files, "new.md": text})
    before = snapshot(corpus)
    report = fix([corpus], apply=True)
    assert report.proposals == []
    reasons = [r.reason for r in report.refusals if os.path.basename(r.file) == "new.md"]
    assert reasons == [reason]
    assert snapshot(corpus) == before


def test_a_target_without_frontmatter_is_refused(corpus: Path) -> None:
    # The edge would go into a PEP's .rst preamble: fix writes frontmatter only.
    write_corpus(
        corpus,
        {
            "pep-0009.rst": "PEP: 9\nTitle: New\nStatus: Final\n\nBody\n",
            "old.md": "This note is superseded by PEP 9.\n",
        },
    )
    report = fix([corpus], apply=True)
    assert report.proposals == []
    (refused,) = report.refusals
    assert refused.reason == "not_markdown" and "pep-0009.rst" in refused.detail


@pytest.mark.parametrize("setting", ["all", "frontmatter", "none"])
def test_frontmatter_is_never_repeated(corpus: Path, setting: str) -> None:
    write_corpus(
        corpus, {"old.md": "x\n", "new.md": "---\nsupersedes: old.md\n---\nIt replaces old.md.\n"}
    )
    report = fix([corpus], apply=True, vocabularies=setting)
    assert report.proposals == []
    assert [r.reason for r in report.refusals] == ["already_declared"]


def test_opposite_closures_prove_nothing(corpus: Path) -> None:
    write_corpus(
        corpus,
        {"a.md": "This note replaces [b](b.md).\n", "b.md": "This note replaces [a](a.md).\n"},
    )
    report = fix([corpus])
    assert report.proposals == []
    assert [r.reason for r in report.refusals] == ["contradicts_declared"] * 2


# -- what it proves, and writes -----------------------------------------------------------------


def test_provable_closures_are_applied_and_lint_is_clean_after(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "old.md": "# Old\n\nThis note is superseded by [new](new.md).\n",
            "new.md": "---\ntitle: New\n---\n# New\n",
            "b.md": "# B\n\nThis note replaces [a](a.md).\n",
            "a.md": "# A\n",
        },
    )
    assert {f.code for f in lint([corpus]).findings} == {"W002"}
    code, out, _ = run("fix", str(corpus), "--apply", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["applied"] and not data["failed"] and not data["refusals"]
    got = {
        (os.path.basename(p["file"]), p["key"], p["value"], p["line"]) for p in data["proposals"]
    }
    assert got == {("new.md", "supersedes", "old.md", 3), ("b.md", "supersedes", "a.md", 2)}
    evidence = {p["value"]: p["evidence"] for p in data["proposals"]}
    assert os.path.basename(evidence["old.md"]["file"]) == "old.md"
    assert evidence["old.md"]["line"] == 3
    assert evidence["old.md"]["sentence"] == "This note is superseded by [new](new.md)."
    assert (corpus / "new.md").read_text() == "---\ntitle: New\nsupersedes: old.md\n---\n# New\n"
    assert (corpus / "b.md").read_text() == (
        "---\nsupersedes: a.md\n---\n# B\n\nThis note replaces [a](a.md).\n"
    )
    assert lint([corpus]).findings == []
    # Run again: everything it proved is declared now.
    again = fix([corpus], apply=True)
    assert again.proposals == [] and {r.reason for r in again.refusals} == {"already_declared"}


def test_dry_run_changes_nothing_and_previews(corpus: Path) -> None:
    write_corpus(corpus, {"b.md": "This note replaces [a](a.md).\n", "a.md": "# A\n"})
    before = snapshot(corpus)
    code, out, _ = run("fix", str(corpus))
    assert code == 0
    assert snapshot(corpus) == before
    assert "+supersedes: a.md" in out
    assert "dry run, nothing written" in out
    assert f"evidence {corpus / 'b.md'}:1:" in out


def test_two_proposals_for_one_file_are_applied_together(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "new.md": "---\ntitle: New\n---\nNew\n",
            "a.md": "This note is superseded by [new](new.md).\n",
            "b.md": "It was replaced by new.md.\n",
        },
    )
    report = fix([corpus], apply=True)
    assert len(report.proposals) == 2 and len(report.written) == 1
    assert (
        corpus / "new.md"
    ).read_text() == "---\ntitle: New\nsupersedes: [a.md, b.md]\n---\nNew\n"
    assert parse((corpus / "new.md").read_text()).supersedes == ("a.md", "b.md")


def test_apply_keeps_bom_crlf_and_mode(corpus: Path) -> None:
    new = corpus / "new.md"
    write_corpus(
        corpus,
        {
            "new.md": b"\xef\xbb\xbf---\r\ntitle: New\r\n---\r\nBody\r\n",
            "old.md": "This note is superseded by [new](new.md).\n",
        },
    )
    new.chmod(0o640)
    code, _, _ = run("fix", str(corpus), "--apply")
    assert code == 0
    assert (
        new.read_bytes()
        == b"\xef\xbb\xbf---\r\ntitle: New\r\nsupersedes: old.md\r\n---\r\nBody\r\n"
    )
    assert stat.S_IMODE(new.stat().st_mode) == 0o640
    assert not [p for p in corpus.iterdir() if p.name.endswith(".tmp")]


def test_apply_through_a_symlink_edits_the_target(corpus: Path) -> None:
    write_corpus(
        corpus,
        {"real/new.md": "New\n", "old.md": "This note is superseded by [new](new.md).\n"},
    )
    (corpus / "real" / "new.md").rename(corpus / "real" / "target.md")
    (corpus / "new.md").symlink_to(corpus / "real" / "target.md")
    report = fix([corpus], apply=True)
    assert len(report.written) == 1
    assert (corpus / "new.md").is_symlink()
    assert (corpus / "real" / "target.md").read_text() == "---\nsupersedes: old.md\n---\nNew\n"


def test_unwritable_file_exits_1(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(corpus, {"b.md": "This note replaces [a](a.md).\n", "a.md": "# A\n"})

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    code, out, err = run("fix", str(corpus), "--apply")
    assert code == 1
    assert "not written: Permission denied" in err
    assert (corpus / "b.md").read_text() == "This note replaces [a](a.md).\n"
    assert not [p for p in corpus.iterdir() if p.name.endswith(".tmp")]


def test_usage_errors_exit_2() -> None:
    code, _, err = run("fix", "/no/such/folder")
    assert code == 2 and "recall fix: /no/such/folder does not exist" in err


# -- the edit, byte for byte ----------------------------------------------------------------------

EDITS = [
    ("no block, LF", b"# T\n\nbody\n", ["a.md"], b"---\nsupersedes: a.md\n---\n# T\n\nbody\n", [2]),
    (
        "no block, BOM",
        b"\xef\xbb\xbf# T\n",
        ["a.md"],
        b"\xef\xbb\xbf---\nsupersedes: a.md\n---\n# T\n",
        [2],
    ),
    (
        "no block, CRLF",
        b"# T\r\nbody\r\n",
        ["a.md"],
        b"---\r\nsupersedes: a.md\r\n---\r\n# T\r\nbody\r\n",
        [2],
    ),
    ("no block, CR", b"# T\rbody\r", ["a.md"], b"---\rsupersedes: a.md\r---\r# T\rbody\r", [2]),
    ("empty file", b"", ["a.md"], b"---\nsupersedes: a.md\n---\n", [2]),
    (
        "thematic breaks are not a block",
        b"---\nprose\n---\n",
        ["a.md"],
        b"---\nsupersedes: a.md\n---\n---\nprose\n---\n",
        [2],
    ),
    (
        "block, new key before the closing fence",
        b"---\ntitle: T   # kept\nvalid_from: 2026-01-01\n---\nbody",
        ["a.md"],
        b"---\ntitle: T   # kept\nvalid_from: 2026-01-01\nsupersedes: a.md\n---\nbody",
        [4],
    ),
    (
        "block with BOM and CRLF",
        b"\xef\xbb\xbf---\r\ntitle: T\r\n---\r\n",
        ["a.md", "b.md"],
        b"\xef\xbb\xbf---\r\ntitle: T\r\nsupersedes: [a.md, b.md]\r\n---\r\n",
        [3, 3],
    ),
    (
        "block after blank lines, closing fence without newline",
        b"\n\n---\ntitle: T\n---",
        ["a.md"],
        b"\n\n---\ntitle: T\nsupersedes: a.md\n---",
        [5],
    ),
    (
        "scalar becomes a flow list",
        b"---\nsupersedes: z.md  # the first\n---\n",
        ["a.md"],
        b"---\nsupersedes: [z.md, a.md]  # the first\n---\n",
        [2],
    ),
    (
        "quoted scalar keeps its quotes",
        b'---\nsupersedes: "z z.md"\n---\n',
        ["a.md"],
        b'---\nsupersedes: ["z z.md", a.md]\n---\n',
        [2],
    ),
    (
        "wiki scalar is quoted inside the list",
        b"---\nsupersedes: [[z]]\n---\n",
        ["a.md"],
        b'---\nsupersedes: ["[[z]]", a.md]\n---\n',
        [2],
    ),
    (
        "flow list grows",
        b'---\nsupersedes: [y.md, "z.md"] # two\ntitle: T\n---\n',
        ["a.md"],
        b'---\nsupersedes: [y.md, "z.md", a.md] # two\ntitle: T\n---\n',
        [2],
    ),
    (
        "block list grows",
        b"---\nsupersedes:\n  - y.md\n  # note\n  - z.md\ntitle: T\n---\n",
        ["a.md", "b.md"],
        b"---\nsupersedes:\n  - y.md\n  # note\n  - z.md\n  - a.md\n  - b.md\ntitle: T\n---\n",
        [6, 7],
    ),
    (
        "empty value is filled",
        b"---\nsupersedes:\ntitle: T\n---\n",
        ["a.md"],
        b"---\nsupersedes: a.md\ntitle: T\n---\n",
        [2],
    ),
    (
        "a name that needs quotes",
        b"---\ntitle: T\n---\n",
        ["a, b.md"],
        b'---\ntitle: T\nsupersedes: "a, b.md"\n---\n',
        [3],
    ),
    (
        "the last of two supersedes keys is the one read",
        b"---\nsupersedes: x.md\nsupersedes: y.md\n---\n",
        ["a.md"],
        b"---\nsupersedes: x.md\nsupersedes: [y.md, a.md]\n---\n",
        [3],
    ),
]


@pytest.mark.parametrize(
    ("label", "data", "values", "expected", "lines"), EDITS, ids=[e[0] for e in EDITS]
)
def test_edit_is_byte_exact(
    label: str, data: bytes, values: list[str], expected: bytes, lines: list[int]
) -> None:
    new, landed = add_supersedes(data, values)
    assert new == expected
    assert landed == lines
    if b"\r" not in new or b"\r\n" in new:
        text = new.decode("utf-8")
        assert parse(text).supersedes[-len(values) :] == tuple(values)


@pytest.mark.parametrize(
    ("data", "values"),
    [
        (b"caf\xe9", ["a.md"]),
        (b"# T\n", ['it\'s "odd".md']),
    ],
)
def test_edit_refuses_what_it_cannot_write(data: bytes, values: list[str]) -> None:
    with pytest.raises(EditError):
        add_supersedes(data, values)


@pytest.mark.parametrize(
    "name",
    ["new.md", "bom-crlf.md", "plain.md", "scalar.md", "block.md"],
)
def test_apply_round_trip_on_disk(corpus: Path, name: str) -> None:
    """`--apply` on disk: the whole file is the expected bytes, nothing else changed."""
    files: dict[str, bytes] = {
        "new.md": b"---\ntitle: New\n---\nBody\n",
        "bom-crlf.md": b"\xef\xbb\xbf---\r\ntitle: New\r\n---\r\nBody\r\n",
        "plain.md": b"Body without frontmatter\n",
        "scalar.md": b"---\nsupersedes: older.md\n---\nBody\n",
        "block.md": b"---\nsupersedes:\n- older.md\n---\nBody\n",
    }
    expected: dict[str, bytes] = {
        "new.md": b"---\ntitle: New\nsupersedes: old.md\n---\nBody\n",
        "bom-crlf.md": b"\xef\xbb\xbf---\r\ntitle: New\r\nsupersedes: old.md\r\n---\r\nBody\r\n",
        "plain.md": b"---\nsupersedes: old.md\n---\nBody without frontmatter\n",
        "scalar.md": b"---\nsupersedes: [older.md, old.md]\n---\nBody\n",
        "block.md": b"---\nsupersedes:\n- older.md\n- old.md\n---\nBody\n",
    }
    stem = name.removesuffix(".md")
    write_corpus(
        corpus,
        {
            name: files[name],
            "older.md": "older\n",
            "old.md": f"This note is superseded by [{stem}]({name}).\n",
        },
    )
    others = {k: v for k, v in snapshot(corpus).items() if k != name}
    code, _, _ = run("fix", str(corpus), "--apply")
    assert code == 0
    assert (corpus / name).read_bytes() == expected[name]
    assert {k: v for k, v in snapshot(corpus).items() if k != name} == others


def test_no_full_edge_where_either_note_says_partial(corpus: Path) -> None:
    # SPEC §2.5: the older note's status says the replacement is partial, so the newer note's
    # plain "replaces" proves no full edge.
    write_corpus(
        corpus,
        {
            "a.md": "# A\n\n## Status\n\nPartly superseded by [B](b.md)\n\nRetries back off.\n",
            "b.md": "# B\n\nThis note replaces [a](a.md).\n",
        },
    )
    report = fix([corpus], apply=True)
    assert report.proposals == []
    (refused,) = [r for r in report.refusals if os.path.basename(r.file) == "b.md"]
    assert refused.reason == "partial_scope"
    assert "a.md says the replacement is partial" in refused.detail
