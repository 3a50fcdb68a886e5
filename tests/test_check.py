"""`recall check` (SPEC §8.4): every candidate predecessor of a new or edited note, each with its
reasons; the gate under `--strict`; the pre-commit hooks that run it."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import recall
from recall.authoring.check import CheckReport, FileCheck, check
from recall.authoring.predecessors import LEXICAL_FLOOR, SENTENCE_FLOOR
from recall.cli import app
from recall.errors import UsageError

from .conftest import write_corpus

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent

RETRY = """---
title: Retry policy
---
# Retry policy

Clients retry failed requests to the billing API three times with exponential backoff starting
at 200 milliseconds, capped at 5 seconds. Only idempotent requests are retried; a 429 response
waits for the Retry-After header before the next attempt.
"""
DATABASE = """# Primary database

We run PostgreSQL 16 for every transactional service. Connection pooling goes through PgBouncer
in transaction mode; the pool size per service is 20.
"""
ONCALL = """# On-call rotation

The primary on-call rotates weekly on Mondays at 10:00 UTC. Escalation goes to the team lead
after 15 minutes without acknowledgement.
"""
# A note on the same topic as RETRY, written independently: close, but less close than a rewrite.
BILLING = """# Billing client timeouts

The billing client gives up on a request after 30 seconds and reports the timeout to the caller;
requests to the billing API are retried by the caller, never by the client itself.
"""
# The new note the tests check: it narrates its predecessor but declares nothing.
NEW_RETRY = """# Client retries, 2026

This replaces [the old policy](retry-policy.md). Clients retry failed requests to the billing API
five times with exponential backoff starting at 100 milliseconds, capped at 8 seconds, with
jitter. Only idempotent requests are retried; a 429 response waits for the Retry-After header.
"""


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def flat(text: str) -> str:
    """Human output with its line wrapping undone (rich wraps at the terminal's width)."""
    return " ".join(text.split())


def only(report: CheckReport) -> FileCheck:
    assert len(report.files) == 1
    return report.files[0]


def kinds(item: FileCheck, note: str) -> set[str]:
    """The reason kinds of the candidate whose path ends with `note`."""
    for c in item.candidates:
        if c.note.endswith(note):
            return {r.kind for r in c.reasons}
    return set()


def names(item: FileCheck) -> list[str]:
    return [Path(c.note).name for c in item.candidates]


@pytest.fixture
def notes(corpus: Path) -> Path:
    return write_corpus(
        corpus,
        {
            "retry-policy.md": RETRY,
            "database-choice.md": DATABASE,
            "oncall.md": ONCALL,
            "billing-timeouts.md": BILLING,
        },
    )


# -- the forgotten edge -------------------------------------------------------------------------


def test_forgotten_edge_is_found_and_declaring_it_passes_the_gate(notes: Path) -> None:
    new = notes / "client-retries.md"
    new.write_text(NEW_RETRY, encoding="utf-8")
    item = only(check([new], [notes]))
    assert item.gate == "fail" and item.declared == () and item.ended is None
    first = item.candidates[0]
    assert Path(first.note).name == "retry-policy.md"
    assert first.relation == "predecessor" and first.declared is False
    assert {r.kind for r in first.reasons} == {"closure-phrase", "lexical"}
    assert first.suggestion == "supersedes: retry-policy.md"
    closure = next(r for r in first.reasons if r.kind == "closure-phrase")
    assert "line 3" in closure.detail and "retry-policy.md" in closure.detail
    assert not any(
        Path(c.note).name in {"database-choice.md", "oncall.md"} for c in item.candidates
    )

    code, out, err = run("check", str(new), "--corpus", str(notes), "--strict")
    assert code == 1, out + err
    assert "supersedes: retry-policy.md" in flat(out) and "closure-phrase" in out

    new.write_text("---\nsupersedes: retry-policy.md\n---\n" + NEW_RETRY, encoding="utf-8")
    code, out, err = run("check", str(new), "--corpus", str(notes), "--strict", "--json")
    assert code == 0, out + err
    (data,) = json.loads(out)["files"]
    assert data["gate"] == "pass"
    assert [(d["relation"], d["status"], d["declared_in"]) for d in data["declared"]] == [
        ("supersedes", "resolved", str(new))
    ]
    # A note the file already declares an edge to is not reported again.
    assert "retry-policy.md" not in [Path(c["note"]).name for c in data["candidates"]]


def test_without_strict_a_failing_gate_still_exits_0(notes: Path) -> None:
    new = write_corpus(notes, {"client-retries.md": NEW_RETRY}) / "client-retries.md"
    code, out, _ = run("check", str(new), "--corpus", str(notes), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["strict"] is False and data["files"][0]["gate"] == "fail"


@pytest.mark.parametrize(
    ("header", "gate"),
    [
        ("", "fail"),
        ("---\nsupersedes: retry-policy.md\n---\n", "pass"),
        ("---\nsupersedes: no-such-note.md\n---\n", "pass"),  # declared, if dangling (lint's)
        ("---\nvalid_until: 2030-01-01\n---\n", "pass"),
        ("---\nstatus: deprecated\n---\n", "pass"),  # a MADR retirement
        ("---\nsupersedes: client-retries.md\n---\n", "fail"),  # a self-reference is ignored
    ],
)
def test_gate_passes_on_any_declared_edge_or_end(notes: Path, header: str, gate: str) -> None:
    new = write_corpus(notes, {"client-retries.md": header + NEW_RETRY}) / "client-retries.md"
    assert only(check([new], [notes])).gate == gate


# -- each leg -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "new", "relation"),
    [
        ("x-v1.md", "x-v2.md", "predecessor"),
        ("x_v1.md", "x_v2.md", "predecessor"),
        ("x.v2.md", "x.v3.md", "predecessor"),
        ("x v1.md", "x v2.md", "predecessor"),
        ("x.md", "x-2.md", "predecessor"),
        ("x.md", "x-v2.md", "predecessor"),
        ("x-1.2.md", "x-1.10.md", "predecessor"),
        ("Rate-Limits-V1.md", "rate_limits_v2.md", "predecessor"),
        ("x-v3.md", "x-v2.md", "successor"),
        ("x-v2.md", "x.md", "successor"),
        ("x-v1.md", "y-v2.md", None),
        ("0001-use-postgres.md", "0002-use-postgres.md", None),
        ("adr-0004.md", "adr-0005.md", None),
        ("standup-2024-01-04.md", "standup-2024-01-05.md", None),
        ("report-2024.md", "report-2025.md", None),
        ("x.md", "x.md.txt", None),
    ],
)
def test_versioned_name(corpus: Path, existing: str, new: str, relation: str | None) -> None:
    # Bodies share no words, so only the name can make a candidate.
    write_corpus(corpus, {existing: "Alpha bravo charlie.\n", new: "Delta echo foxtrot.\n"})
    item = only(check([corpus / new], [corpus]))
    if relation is None:
        assert item.candidates == ()
        return
    (candidate,) = item.candidates
    assert Path(candidate.note).name == existing
    assert {r.kind for r in candidate.reasons} == {"versioned-name"}
    assert candidate.relation == relation
    if relation == "predecessor":
        assert candidate.suggestion == f"supersedes: {existing}"
    else:
        assert f"supersedes: {new}" in candidate.suggestion and existing in candidate.suggestion


def test_same_file_name_in_two_folders_is_reported_as_ambiguous(corpus: Path) -> None:
    write_corpus(corpus, {"a/runbook.md": "Alpha bravo.\n", "b/runbook.md": "Delta echo.\n"})
    (candidate,) = only(check([corpus / "b" / "runbook.md"], [corpus])).candidates
    assert candidate.note.endswith("a/runbook.md")
    assert "ambiguous" in candidate.reasons[0].detail and "rename" in candidate.suggestion


# Bodies that share no words, so only the title can make a candidate.
THEIRS = "\n\nAlpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima.\n"
MINE = "\n\nMike november oscar papa quebec romeo sierra tango uniform victor whiskey.\n"


@pytest.mark.parametrize(
    ("theirs", "mine", "score"),
    [
        ("---\ntitle: Retry policy\n---\n", "# retry  POLICY", 1.0),
        ("# Retry policy", "# Retry policy v2", 1.0),
        ("# The retry policy", "# Retry policy (revised)", 1.0),
        ("Retry policy\n============", "# Retry policy", 1.0),
        ("# Retry policy for billing", "# Retry policy for billing clients", None),
        ("# Deploy freeze", "# Retry policy", None),
    ],
)
def test_same_title(corpus: Path, theirs: str, mine: str, score: float | None) -> None:
    write_corpus(corpus, {"old-note.md": theirs + THEIRS, "new-note.md": mine + MINE})
    item = only(check([corpus / "new-note.md"], [corpus]))
    if score is None:
        assert item.candidates == ()
        return
    (candidate,) = item.candidates
    (reason,) = candidate.reasons
    assert reason.kind == "same-title" and reason.score == pytest.approx(score)


def test_pep_title_is_compared_with_a_markdown_heading(corpus: Path) -> None:
    pep = "PEP: 8\nTitle: Style Guide for Python Code\nStatus: Active\n\nAlpha bravo.\n"
    write_corpus(corpus, {"pep-0008.rst": pep, "style.md": "# Style guide for Python code\n"})
    item = only(check([corpus / "style.md"], [corpus]))
    assert names(item) == ["pep-0008.rst"] and kinds(item, "pep-0008.rst") == {"same-title"}


def test_lexical_ranks_the_near_duplicate_first(notes: Path) -> None:
    new = write_corpus(notes, {"client-retries.md": NEW_RETRY.split("\n", 3)[3]})
    item = only(check([new / "client-retries.md"], [notes]))
    lexical = [
        (Path(c.note).name, r.score)
        for c in item.candidates
        for r in c.reasons
        if r.kind == "lexical"
    ]
    assert lexical[0][0] == "retry-policy.md"
    scores = [s for _, s in lexical]
    assert all(s is not None and s >= LEXICAL_FLOOR for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert {"database-choice.md", "oncall.md"}.isdisjoint(n for n, _ in lexical)
    detail = next(r.detail for r in item.candidates[0].reasons if r.kind == "lexical")
    assert "backoff" in detail and "exponential" in detail


def test_lexical_closeness_is_the_store_models_and_names_words_as_written(corpus: Path) -> None:
    """Stemmed as the index stems (`retries` meets `retry`), weighed by BM25 among the notes;
    the shared terms are named as the checked note writes them, without function words."""
    write_corpus(
        corpus,
        {
            "retry-policy.md": "# Retry policy\n\nClients retry failed requests three times with "
            "exponential backoff, starting at 200 ms. Retries apply to timeouts and 5xx "
            "responses; we do not retry on 4xx.\n",
            "oncall.md": "# On-call rotation\n\nThe on-call engineer is paged for incidents; "
            "the rotation changes every Monday.\n",
        },
    )
    new = corpus.parent / "new-retries.md"
    new.write_text(
        "# Retrying requests\n\nClients now retry failed requests five times with exponential "
        "backoff starting at 100 ms. Retries still apply to timeouts and 5xx responses only.\n",
        encoding="utf-8",
    )
    item = only(check([new], [corpus]))
    (reason,) = [r for c in item.candidates for r in c.reasons if r.kind == "lexical"]
    named = reason.detail.split("shared terms: ", 1)[1].split(", ")
    # `Retrying` (its first word stemming to `retri`) met `retry` and `Retries` in the note.
    assert {"retrying", "5xx", "backoff"} <= set(named)
    assert not {"and", "at", "the", "to"} & set(named)
    assert reason.score is not None and reason.score >= LEXICAL_FLOOR


def test_closure_phrases_are_shown_with_their_refusal(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "a.md": "Alpha bravo.\n",
            "b.md": "Charlie delta.\n",
            "c.md": "Echo foxtrot.\n",
            "new.md": "# New\n\nBob says this replaces [a](a.md). It may replace [b](b.md) "
            "someday.\n\nThis note was superseded by [c](c.md).\n",
        },
    )
    item = only(check([corpus / "new.md"], [corpus]))
    by_name = {Path(c.note).name: c for c in item.candidates}
    assert set(by_name) == {"a.md", "b.md"}
    assert "[reported speech]" in by_name["a.md"].reasons[0].detail
    assert "[hedged]" in by_name["b.md"].reasons[0].detail
    # The wording that holds, this note is the one replaced, is the note's own declaration
    # (SPEC §2.5, vocabulary `prose`): an edge in force, not a candidate.
    (declared,) = item.declared
    assert (declared.relation, declared.vocabulary, declared.status) == (
        "superseded_by",
        "prose",
        "resolved",
    )
    assert Path(declared.notes[0]).name == "c.md"


def test_closure_phrase_naming_no_note_is_a_note_not_a_candidate(corpus: Path) -> None:
    write_corpus(corpus, {"new.md": "This replaces [the old one](gone.md).\n"})
    item = only(check([corpus / "new.md"], [corpus]))
    assert item.candidates == () and item.gate == "pass"
    assert any("gone.md" in m and "not a note" in m for m in item.notes)


def test_closure_phrase_by_adr_number(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "0005-use-postgres.md": "# 5. Use PostgreSQL\n\n## Status\n\nAccepted\n",
            "0009-use-sqlite.md": "# 9. Use SQLite\n\nThis supersedes ADR-0005 for local tools.\n",
        },
    )
    item = only(check([corpus / "0009-use-sqlite.md"], [corpus]))
    assert kinds(item, "0005-use-postgres.md") >= {"closure-phrase"}


# -- declared edges -----------------------------------------------------------------------------


def test_edited_old_note_passes_when_its_successor_names_it(notes: Path) -> None:
    write_corpus(notes, {"client-retries.md": "---\nsupersedes: retry-policy\n---\n" + NEW_RETRY})
    item = only(check([notes / "retry-policy.md"], [notes]))
    assert item.gate == "pass"
    (declared,) = item.declared
    assert (declared.relation, declared.status) == ("superseded_by", "resolved")
    assert declared.declared_in.endswith("client-retries.md")
    assert "client-retries.md" not in names(item)


def test_nygard_status_is_a_declared_edge_unless_vocabularies_are_off(notes: Path) -> None:
    text = "# Client retries\n\n## Status\n\nSupersedes [old](retry-policy.md)\n\n" + NEW_RETRY
    new = write_corpus(notes, {"client-retries.md": text}) / "client-retries.md"
    item = only(check([new], [notes]))
    assert [(d.vocabulary, d.status) for d in item.declared] == [("nygard", "resolved")]
    assert item.gate == "pass" and "retry-policy.md" not in names(item)
    off = only(check([new], [notes], vocabularies="none"))
    assert off.declared == () and off.gate == "fail" and names(off)[0] == "retry-policy.md"


def test_a_note_linked_through_a_chain_is_marked_declared(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "retry-policy.md": RETRY,
            "retry-interim.md": "---\nsupersedes: retry-policy.md\n---\nCharlie delta echo.\n",
            "client-retries.md": "---\nsupersedes: retry-interim.md\n---\n" + NEW_RETRY,
        },
    )
    item = only(check([corpus / "client-retries.md"], [corpus]))
    old = next(c for c in item.candidates if c.note.endswith("retry-policy.md"))
    assert old.declared is True and old.superseded_by == (str(corpus / "retry-interim.md"),)
    assert old.current == (str(corpus / "client-retries.md"),)  # the chain's end, in force
    assert item.gate == "pass"


def test_ambiguous_declared_edge_is_shown_with_every_match(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "a/runbook.md": "Alpha.\n",
            "b/runbook.md": "Bravo.\n",
            "new.md": "---\nsupersedes: runbook\n---\nCharlie.\n",
        },
    )
    item = only(check([corpus / "new.md"], [corpus]))
    (declared,) = item.declared
    assert declared.status == "ambiguous" and len(declared.notes) == 2
    assert all(c.declared for c in item.candidates)


# -- where the file lives, what the run reads ---------------------------------------------------


def test_file_outside_the_corpus(notes: Path, tmp_path: Path) -> None:
    drafts = write_corpus(tmp_path / "drafts", {"client-retries.md": NEW_RETRY})
    item = only(check([drafts / "client-retries.md"], [notes]))
    assert names(item)[0] == "retry-policy.md" and item.gate == "fail"


def test_file_is_never_its_own_candidate(notes: Path) -> None:
    item = only(check([notes / "retry-policy.md"], [notes]))
    assert "retry-policy.md" not in names(item)


def test_unreadable_file_is_an_error_not_a_crash(notes: Path) -> None:
    bad = write_corpus(notes, {"bad.md": b"\x00\x01binary"}) / "bad.md"
    item = only(check([bad], [notes]))
    assert item.gate == "error" and item.problem is not None and "NUL" in item.problem
    code, out, _ = run("check", str(bad), "--corpus", str(notes), "--strict", "--json")
    assert code == 1 and json.loads(out)["files"][0]["gate"] == "error"


def test_limit_keeps_the_best_and_counts_the_rest(corpus: Path) -> None:
    write_corpus(corpus, {f"x-v{i}.md": f"Note number {i}.\n" for i in range(1, 6)})
    item = only(check([corpus / "x-v5.md"], [corpus], limit=2))
    assert len(item.candidates) == 2 and item.omitted == 2


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"vocabularies": "some"}, "choose one of"),
        ({"limit": 0}, "at least 1"),
    ],
)
def test_api_usage_errors(notes: Path, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        check([notes / "oncall.md"], [notes], **kwargs)


@given(
    text=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=400,
    )
)
def test_any_text_is_checked_without_raising(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = write_corpus(
            Path(tmp),
            {"retry-policy.md": RETRY, "oncall.md": ONCALL, "x-v1.md": text, "x-v2.md": text},
        )
        report = check([root / "x-v2.md"], [root])
        item = only(report)
        assert item.gate in ("pass", "fail") and item.problem is None
        assert "x-v2.md" not in names(item)
        assert "x-v1.md" in names(item)  # the versioned name holds whatever the text
        json.dumps(report.to_dict())


# -- the semantic leg ---------------------------------------------------------------------------


def test_semantic_leg_reads_a_real_store(notes: Path, tmp_path: Path) -> None:
    new = write_corpus(notes, {"client-retries.md": NEW_RETRY}) / "client-retries.md"
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(notes)
    report = check([new], [notes], db=db)
    assert report.semantic is not None and report.semantic.startswith("store")
    item = only(report)
    semantic = {
        Path(c.note).name: r.score
        for c in item.candidates
        for r in c.reasons
        if r.kind == "semantic"
    }
    assert "retry-policy.md" in semantic and "client-retries.md" not in semantic
    assert all(score is not None and 0.5 <= score <= 1.0 for score in semantic.values())
    code, out, _ = run("check", str(new), "--corpus", str(notes), "--db", str(db), "--json")
    assert code == 0
    reasons = json.loads(out)["files"][0]["candidates"][0]["reasons"]
    assert any(r["kind"] == "semantic" and 0.5 <= r["score"] <= 1 for r in reasons)


def test_semantic_leg_shows_a_store_document_outside_the_corpus(
    notes: Path, tmp_path: Path
) -> None:
    archive = write_corpus(tmp_path / "archive", {"retry-policy-2019.md": RETRY})
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index([notes, archive])
    drafts = write_corpus(tmp_path / "drafts", {"client-retries.md": NEW_RETRY})
    item = only(check([drafts / "client-retries.md"], [notes], db=db))
    outside = next(c for c in item.candidates if c.note == "archive/retry-policy-2019.md")
    (reason,) = outside.reasons
    assert reason.kind == "semantic" and "no --corpus path holds" in reason.detail
    assert outside.suggestion == "supersedes: retry-policy-2019.md"


@pytest.mark.parametrize("content", [None, b"not a store at all", b""])
def test_semantic_leg_never_crashes_nor_creates_a_store(
    notes: Path, tmp_path: Path, content: bytes | None
) -> None:
    db = tmp_path / "m.db"
    if content is not None:
        db.write_bytes(content)
    code, out, err = run("check", str(notes / "oncall.md"), "--corpus", str(notes), "--db", str(db))
    assert code == 0, out + err
    out = flat(out)
    assert "semantic: skipped" in out
    if content is None:
        assert not db.exists() and "does not exist" in out
    else:
        assert db.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["notes"] + ([] if content is None else ["m.db"])
    )


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--corpus", "/no/such/folder"], 2, "does not exist"),
        (["--vocabularies", "some"], 2, "choose one of"),
        (["--limit", "0"], 2, "--limit"),
    ],
)
def test_usage_errors_exit_2(notes: Path, extra: list[str], code: int, needle: str) -> None:
    args = ["check", str(notes / "oncall.md")]
    if "--corpus" not in extra:
        args += ["--corpus", str(notes)]
    got, out, err = run(*args, *extra)
    assert got == code and needle in out + err


@pytest.mark.parametrize(
    ("target", "needle"), [("missing.md", "does not exist"), (".", "is a folder")]
)
def test_bad_files_exit_2(notes: Path, target: str, needle: str) -> None:
    code, _, err = run("check", str(notes / target), "--corpus", str(notes))
    assert code == 2 and needle in err


def test_json_shape(notes: Path) -> None:
    new = write_corpus(notes, {"client-retries.md": NEW_RETRY}) / "client-retries.md"
    code, out, _ = run(
        "check", str(new), str(notes / "oncall.md"), "--corpus", str(notes), "--json", "--strict"
    )
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"files", "strict", "corpus_notes", "semantic"}
    assert data["strict"] is True and data["corpus_notes"] == 5 and data["semantic"] is None
    assert [(Path(f["file"]).name, f["gate"]) for f in data["files"]] == [
        ("client-retries.md", "fail"),
        ("oncall.md", "pass"),
    ]
    first = data["files"][0]
    assert set(first) == {
        "file", "title", "declared", "ended", "candidates", "omitted", "gate", "problem", "notes"
    }  # fmt: skip
    candidate = first["candidates"][0]
    assert set(candidate) == {
        "note", "relation", "reasons", "declared", "superseded_by", "current", "suggestion", "rank"
    }  # fmt: skip
    assert all(set(r) <= {"kind", "detail", "score"} for r in candidate["reasons"])
    ranks = [c["rank"] for c in first["candidates"]]
    assert ranks == sorted(ranks, reverse=True)


def test_human_output_names_every_reason_and_the_suggestion(notes: Path) -> None:
    new = write_corpus(notes, {"client-retries.md": NEW_RETRY}) / "client-retries.md"
    code, out, _ = run("check", str(new), "--corpus", str(notes))
    assert code == 0
    out = flat(out)
    assert "retry-policy.md" in out and "closure-phrase" in out and "lexical" in out
    assert "suggest: supersedes: retry-policy.md" in out
    assert "--strict makes this exit 1" in out


# -- the pre-commit hooks -----------------------------------------------------------------------

HOOKS = ROOT / ".pre-commit-hooks.yaml"


def _hooks() -> list[dict[str, Any]]:
    """The hook entries, read with the tiny subset of YAML the file uses (a list of flat
    mappings; flow lists for `args`)."""
    hooks: list[dict[str, Any]] = []
    for raw in HOOKS.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        match = re.fullmatch(r"(- |  )([a-z_]+): (.*)", line)
        assert match is not None, f"unexpected line in {HOOKS.name}: {raw!r}"
        if match.group(1) == "- ":
            hooks.append({})
        key, value = match.group(2), match.group(3)
        parsed: Any = value
        if value in ("true", "false"):
            parsed = value == "true"
        elif value.startswith("["):
            parsed = [v.strip() for v in value.strip("[]").split(",") if v.strip()]
        hooks[-1][key] = parsed
    return hooks


def test_pre_commit_hooks_file_declares_check_and_lint() -> None:
    hooks = {h["id"]: h for h in _hooks()}
    assert set(hooks) == {"recall-check", "recall-lint"}
    check_hook, lint_hook = hooks["recall-check"], hooks["recall-lint"]
    assert check_hook["entry"] == "recall check --strict --corpus ."
    assert check_hook["pass_filenames"] is True and check_hook["language"] == "python"
    assert lint_hook["entry"] == "recall lint" and lint_hook["pass_filenames"] is False
    assert lint_hook["args"] == ["."]
    for hook in hooks.values():
        pattern = re.compile(hook["files"])
        assert all(pattern.search(n) for n in ("a.md", "b/c.markdown", "d.mdx", "pep-0008.rst"))
        assert not any(pattern.search(n) for n in ("a.py", "notes.txt", "md"))


def test_pre_commit_hooks_file_is_yaml_the_tiny_reader_agrees_with() -> None:
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(HOOKS.read_text(encoding="utf-8")) == _hooks()


@pytest.mark.parametrize("hook", _hooks(), ids=lambda h: h["id"])
def test_pre_commit_hook_commands_exist(hook: dict[str, Any]) -> None:
    program, command, *_ = hook["entry"].split()
    assert program == "recall"
    code, out, err = run(command, "--help")
    assert code == 0, out + err


def test_pre_commit_check_hook_runs_as_pre_commit_would(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pre-commit runs the entry in the repository root and appends the staged files."""
    hook = next(h for h in _hooks() if h["id"] == "recall-check")
    write_corpus(notes, {"client-retries.md": NEW_RETRY})
    monkeypatch.chdir(notes)
    code, out, _ = run(*hook["entry"].split()[1:], "client-retries.md", "oncall.md")
    assert code == 1 and "SKIP=recall-check" in flat(out)
    code, _, _ = run(*hook["entry"].split()[1:], "oncall.md", "database-choice.md")
    assert code == 0


# A statement about the translation tooling, buried among four others of a release round-up.
ROUND_UP = """# Release round-up

The admin site gained a dark theme toggle. Password reset links now expire after three days.
The translation tooling requires GNU gettext 0.15 or later. Session cookies default to the Lax
same-site policy. Static files are served with immutable cache headers in production.
"""


def test_a_statement_buried_in_a_longer_note_is_found_by_its_sentence(corpus: Path) -> None:
    write_corpus(corpus, {"round-up.md": ROUND_UP, "oncall.md": ONCALL, "database.md": DATABASE})
    new = corpus / "gettext.md"
    new.write_text("# Minimum gettext\n\nThe translation tooling needs gettext 0.19.\n")
    item = only(check([new], [corpus]))
    reasons = {
        r.kind: r for c in item.candidates if c.note.endswith("round-up.md") for r in c.reasons
    }
    # The whole note's cosine is diluted by the other four statements; one sentence is not.
    assert "lexical" not in reasons and "sentence" in reasons
    assert "GNU gettext 0.15" in reasons["sentence"].detail
    assert reasons["sentence"].score is not None and reasons["sentence"].score >= SENTENCE_FLOOR
    assert names(item)[0] == "round-up.md"
    unrelated = corpus / "plants.md"
    unrelated.write_text("# Office plants\n\nThe ficus by the window is watered on Fridays.\n")
    assert only(check([unrelated], [corpus])).candidates == ()
