"""SPEC §2.5 on the wording fixture corpus (`tests/fixtures/wording/`): every note's verdict,
successor, date and statement line as its manifest says; dated declarations before and after
their date; what `recall lint` and `stats()` report for partial and unread statements; and the
unread flag a search hit carries."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.status import file_alias
from recall.vocabularies import declare

WORDING = Path(__file__).resolve().parent / "fixtures" / "wording"
CORPUS = WORDING / "corpus"
MANIFEST: dict[str, Any] = json.loads((WORDING / "manifest.json").read_text(encoding="utf-8"))
NOTES: list[dict[str, Any]] = MANIFEST["notes"]

UTC = dt.timezone.utc
INDEXED = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAY = dt.timedelta(days=1)
# Explain and search a day after the latest `since` in the manifest, so that every dated
# declaration of the corpus is in force.
LATEST_SINCE = max(dt.date.fromisoformat(n["since"]) for n in NOTES if "since" in n)
AFTER_ALL = dt.datetime.combine(LATEST_SINCE + DAY, dt.time(), tzinfo=UTC)

# The verdicts of a note in force: with the uncalibrated hashing embedder a relevant current
# note is `low_confidence` or `unverified`, never refused for what it declares.
IN_FORCE = frozenset({"ok", "low_confidence", "unverified"})

runner = CliRunner()


def notes(*expect: str) -> list[dict[str, Any]]:
    return [n for n in NOTES if n["expect"] in expect]


def ids(entries: list[dict[str, Any]]) -> list[str]:
    return [n["path"] for n in entries]


def at(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=UTC)


def text_of(path: str) -> str:
    return (CORPUS / path).read_text(encoding="utf-8")


def query_for(path: str) -> str:
    """Words from the note itself: its title and first lines of prose, markup dropped."""
    words = re.findall(r"[A-Za-z]{4,}", text_of(path))
    return " ".join(words[:24])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[recall.Memory]:
    """A copy of the wording corpus indexed on 2026-01-01 into a store file."""
    base = tmp_path_factory.mktemp("wording")
    root = base / "corpus"
    shutil.copytree(CORPUS, root)
    with recall.open(base / "memory.db", embedder="hashing-512") as mem:
        # Uncalibrated: development mode marks a would-be `ok` hit `unverified`.
        report = mem.index(root, now=INDEXED, calibrate=False)
        assert sorted(report.added) == sorted(ids(NOTES))
        assert not report.refused and not report.skipped
        yield mem


def explain(mem: recall.Memory, path: str, now: dt.datetime = AFTER_ALL) -> dict[str, Any]:
    return mem.explain(query_for(path), path, now=now)


def own_claims(ex: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The claims this note declares (explain's `claims_out` also shows claims made on it)."""
    return [c for c in ex["claims_out"] if c["declarer"] == path]


# --- the manifest itself ------------------------------------------------------------------------


def test_manifest_lists_every_file_of_the_corpus() -> None:
    on_disk = {
        os.path.relpath(os.path.join(folder, name), CORPUS)
        for folder, _, files in os.walk(CORPUS)
        for name in files
    }
    # A note's metadata file (`kep.yaml` beside a KEP's README) is not a note of its own.
    assert on_disk == set(ids(NOTES)) | set(MANIFEST["sidecars"])
    assert all(n["expect"] in MANIFEST["expect_values"] for n in NOTES)


def test_every_form_is_covered() -> None:
    forms = set(MANIFEST["forms"])
    covered = {form for n in NOTES for form in n["covers"]}
    assert forms == covered, forms ^ covered
    assert all(n["form"] in n["covers"] for n in NOTES)
    assert set(MANIFEST["form_descriptions"]) == forms
    assert len(forms) >= 80


# --- one test per note --------------------------------------------------------------------------


@pytest.mark.parametrize("note", NOTES, ids=ids(NOTES))
def test_note(store: recall.Memory, note: dict[str, Any]) -> None:
    path, expect = note["path"], note["expect"]
    ex = explain(store, path)
    verdict, retired, ignored = ex["verdict"], ex["retired"], ex["ignored"]
    claims = own_claims(ex, path)
    at_line = [c for c in claims if c["line"] == note.get("line")]
    ignored_at = {(i["kind"], i["line"]) for i in ignored}
    texts = [(i["kind"], i["statement"]) for i in ignored]

    if expect == "ok":
        assert verdict in IN_FORCE
        assert retired is None and ex["superseded_by"] is None
        assert ignored == []
        # Forward edges (`Supersedes …`, KEP `replaces:`) are fine; nothing names a successor,
        # the decoy wording at `decoy_line` included.
        assert [c for c in claims if c["reversed"]] == []
    elif expect == "superseded":
        assert verdict == "superseded"
        assert ex["superseded_by"] == note["successor"]
        assert ex["chain"][0] == path and ex["chain"][-1] == note["successor"]
        assert [(c["resolution"], c["reversed"]) for c in at_line] == [("resolved", True)]
        assert retired is not None
        assert retired["line"] == note.get("status_line", note["line"])
    elif expect == "retired":
        assert verdict == "expired"
        assert ex["superseded_by"] is None
        assert retired is not None and retired["line"] == note["line"]
    elif expect == "partial":
        assert ("partial", note["line"]) in ignored_at
        assert retired is None and ex["superseded_by"] is None
        assert verdict in IN_FORCE
        assert claims == [], "a partial statement is never an edge"
    elif expect == "unread":
        dangling = [
            c for c in at_line if c["resolution"] == "dangling" and c["vocabulary"] != "frontmatter"
        ]
        assert ("unread", note["line"]) in ignored_at or dangling
        # SPEC §2.5: unread is a mark, never silence. A status the reader does not know leaves
        # the verdict to the rest of the note (the hit carries `validity.unread`, tested below);
        # a successor named in words that match no note retires it.
        if dangling or any(kind == "unread" and "superseded" in s.lower() for kind, s in texts):
            assert verdict == "expired"
    elif expect == "ambiguous":
        assert verdict == "ambiguous_supersession"
        assert ex["ambiguous"] is True and ex["superseded_by"] is None
        ambiguous = [c for c in at_line if c["resolution"] == "ambiguous"]
        assert len(ambiguous) == 1
        assert set(note["candidates"]) <= set(ambiguous[0]["targets"])
    else:  # pragma: no cover - the manifest test checks the values
        pytest.fail(f"unknown expectation {expect!r}")

    if "since" in note:
        assert retired is not None and retired["since"] == note["since"]
    # The declaring statement is where explain says it is.
    lines = {c["line"] for c in claims} | {i["line"] for i in ignored}
    if retired is not None:
        lines.add(retired["line"])
    for key in ("line", "status_line"):
        if key in note:
            assert note[key] in lines, (key, note[key], sorted(lines))


@pytest.mark.parametrize("note", notes("partial"), ids=ids(notes("partial")))
def test_partial_statement_names_its_record(note: dict[str, Any]) -> None:
    """The partial statement is recorded with its standing, and where it names a record, that
    record is `partial_by`. 2203's banner ("has mostly been superseded") names none: the record
    is named in the prose under it, which is no statement."""
    found = declare(note["path"], text_of(note["path"]))
    partial = found.standing("partial")
    assert [e.origin.line for e in partial] == [note["line"]]
    assert found.active_edges() == [] and found.active_retirement() is None
    keys = partial[0].key.split("\n") if partial[0].key else []
    if keys:
        assert file_alias(Path(note["partial_by"]).name) in keys


# --- search: the unread flag --------------------------------------------------------------------


def unread_hit(mem: recall.Memory, note: dict[str, Any], **kwargs: Any) -> recall.Hit:
    res = mem.search(query_for(note["path"]), k=10, now=AFTER_ALL, **kwargs)
    hits = [h for h in res.hits if h.provenance.file == note["path"]]
    assert hits, f"{note['path']} not among {[h.provenance.file for h in res.hits]}"
    return hits[0]


@pytest.mark.parametrize("note", notes("unread"), ids=ids(notes("unread")))
def test_unread_hit_carries_the_statement(store: recall.Memory, note: dict[str, Any]) -> None:
    hit = unread_hit(store, note, mode="development")
    lines = text_of(note["path"]).split("\n")
    assert hit.validity.unread == (
        recall.Unread("nygard", note["line"], lines[note["line"] - 1].strip()),
    )
    assert hit.verdict != "ok"


@pytest.mark.parametrize("note", notes("unread"), ids=ids(notes("unread")))
def test_unread_hit_is_flagged_in_a_calibrated_store(tmp_path: Path, note: dict[str, Any]) -> None:
    """With a certified calibration a hit may be `ok`; an unread note is never silently so:
    it carries its unread statement whatever its verdict."""
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS, root)
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        mem.index(root, now=INDEXED)
        mem.import_calibration(
            {
                "id": "test",
                "embedder": mem.embedder.name,
                "fingerprint": mem.embedder.fingerprint,
                "threshold": 0.1,
                "scale": 0.05,
                "certified": True,
            }
        )
        hit = unread_hit(mem, note)
        assert [u.line for u in hit.validity.unread] == [note["line"]]


def test_a_plain_note_carries_no_unread(store: recall.Memory) -> None:
    (note,) = [n for n in NOTES if n["path"].endswith("DR008-log-retention-tiered-storage.md")]
    hit = unread_hit(store, note, mode="development")
    assert hit.validity.unread == () and hit.validity.retired is None


# --- dated declarations -------------------------------------------------------------------------

DATED_RETIRED = [n for n in notes("retired") if "since" in n]
DATED_SUPERSEDED = [n for n in notes("superseded") if "since" in n]


def test_the_corpus_has_dated_declarations() -> None:
    assert len(DATED_RETIRED) >= 1 and len(DATED_SUPERSEDED) >= 1
    # "Superseded by ADR 0010 (2026-09-28)": a date after the indexing instant.
    assert any(n["since"] > INDEXED.date().isoformat() for n in DATED_SUPERSEDED)


@pytest.mark.parametrize("note", DATED_RETIRED, ids=ids(DATED_RETIRED))
def test_dated_retirement_holds_from_its_date(store: recall.Memory, note: dict[str, Any]) -> None:
    since = dt.date.fromisoformat(note["since"])
    before = explain(store, note["path"], now=at(since - DAY))
    assert before["verdict"] in IN_FORCE
    assert explain(store, note["path"], now=at(since))["verdict"] == "expired"
    assert explain(store, note["path"], now=at(since + DAY))["verdict"] == "expired"


@pytest.mark.parametrize("note", DATED_SUPERSEDED, ids=ids(DATED_SUPERSEDED))
def test_dated_supersession_holds_from_its_date(store: recall.Memory, note: dict[str, Any]) -> None:
    since = dt.date.fromisoformat(note["since"])
    before = explain(store, note["path"], now=at(since - DAY))
    assert before["verdict"] in IN_FORCE and before["superseded_by"] is None
    for now in (at(since), at(since + DAY)):
        after = explain(store, note["path"], now=now)
        assert after["verdict"] == "superseded"
        assert after["superseded_by"] == note["successor"]


def test_future_supersession_in_search(store: recall.Memory) -> None:
    """ADR 0006 is superseded from 2026-09-28: a search before then does not mark it."""
    (note,) = [n for n in DATED_SUPERSEDED if n["since"] > INDEXED.date().isoformat()]
    since = dt.date.fromisoformat(note["since"])
    query = query_for(note["path"])
    hits = {}
    for now in (at(since - DAY), at(since + DAY)):
        res = store.search(query, k=10, now=now, mode="development")
        (hits[now],) = [h for h in res.hits if h.provenance.file == note["path"]]
    before, after = hits[at(since - DAY)], hits[at(since + DAY)]
    assert before.verdict in IN_FORCE and before.validity.superseded_by is None
    assert after.verdict == "superseded" and after.validity.superseded_by == note["successor"]


# --- lint and stats -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lint_report() -> dict[str, Any]:
    result = runner.invoke(app, ["lint", str(CORPUS), "--json"])
    # The corpus holds errors on purpose: E001 (DR016 names a DR019 that does not exist) and E006.
    assert result.exit_code == 1, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["files"] == len(NOTES)
    return report


def findings(report: dict[str, Any], code: str) -> set[tuple[str, int]]:
    return {
        (os.path.relpath(f["file"], CORPUS), f["line"])
        for f in report["findings"]
        if f["code"] == code
    }


@pytest.mark.parametrize(
    ("code", "expect"),
    [("W003", "unread"), ("I002", "partial"), ("E006", "ambiguous")],
)
def test_lint_reports_each_statement(lint_report: dict[str, Any], code: str, expect: str) -> None:
    assert findings(lint_report, code) == {(n["path"], n["line"]) for n in notes(expect)}
    assert lint_report["counts"][code] == len(notes(expect))


def test_lint_rule_names(lint_report: dict[str, Any]) -> None:
    rules = {(f["code"], f["rule"], f["severity"]) for f in lint_report["findings"]}
    assert ("W003", "unread-status", "warning") in rules
    assert ("I002", "partial-statement", "info") in rules


def test_stats_count_partial_and_unread_statements(store: recall.Memory) -> None:
    """Every partial and unread manifest note declares exactly one such statement, at its
    `line`; so the store counts one per note."""
    stats = store.stats()
    partial = {(n["path"], n["line"]) for n in notes("partial")}
    unread = {(n["path"], n["line"]) for n in notes("unread")}
    assert (stats.partial, stats.unread) == (len(partial), len(unread))
    # The same numbers from the reader, file by file.
    declared = {n["path"]: declare(n["path"], text_of(n["path"])) for n in NOTES}
    assert {(p, e.origin.line) for p, d in declared.items() for e in d.standing("partial")} == (
        partial
    )
    assert {(p, e.origin.line) for p, d in declared.items() for e in d.standing("unread")} == (
        unread
    )
