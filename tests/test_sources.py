"""Freshness at read time: a note edited, deleted or moved since the last index run is never
served as it was (`recall.sources`), on both backends; a file merely touched, or read where its
folder is not on this machine, keeps its verdict."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import recall
from recall import sources
from recall.results import ok_first
from recall.walk import sidecar_beside

from .conftest import EXAMPLES, write_corpus
from .test_search import NOW, RATE_Q, by_file, certified

INDEXED = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A copy of the example notes, written well before they are indexed (so their times are
    recorded) and free to edit."""
    root = tmp_path / "notes"
    shutil.copytree(EXAMPLES, root)
    past = time.time() - 60
    for path in root.rglob("*"):
        os.utime(path, (past, past))
    return root


def _search(db: str, root: Path) -> recall.Result:
    with recall.open(db) as mem:
        certified(mem)
        return mem.search(RATE_Q, now=NOW)


def _indexed(db: str, root: Path) -> None:
    with recall.open(db) as mem:
        mem.index(root, now=INDEXED)


def test_an_edited_note_is_not_served_as_it_was(backend: Callable[[str], str], notes: Path) -> None:
    db = backend("m.db")
    _indexed(db, notes)
    before = _search(db, notes)
    assert before.hits[0].provenance.file == "rate-limits-v2.md" and before.hits[0].ok
    assert before.hits[0].source == "current"
    note = notes / "rate-limits-v2.md"
    note.write_text(note.read_text().replace("250 requests", "400 requests"))
    after = _search(db, notes)
    edited = by_file(after)["rate-limits-v2.md"]
    assert (edited.verdict, edited.source) == ("source_changed", "changed")
    assert not any(h.ok and h.provenance.file == "rate-limits-v2.md" for h in after.hits)
    assert after.abstained, "its predecessor is superseded: nothing else answers"
    assert "rate-limits-v2.md changed since it was indexed" in (after.reason or "")
    assert "recall index" in (after.reason or "")
    # The next index run reads it again: served, with its new text.
    _indexed(db, notes)
    again = _search(db, notes)
    assert again.hits[0].ok and "400 requests" in again.hits[0].text


def test_a_deleted_or_moved_note_is_not_served(backend: Callable[[str], str], notes: Path) -> None:
    db = backend("m.db")
    _indexed(db, notes)
    (notes / "rate-limits-v2.md").rename(notes / "teams" / "rate-limits-v2.md")
    moved = by_file(_search(db, notes))["rate-limits-v2.md"]
    assert (moved.verdict, moved.source) == ("source_missing", "missing")
    (notes / "teams" / "rate-limits-v2.md").unlink()
    result = _search(db, notes)
    assert by_file(result)["rate-limits-v2.md"].verdict == "source_missing"
    assert result.abstained and "no longer on disk" in (result.reason or "")


def test_a_touched_note_keeps_its_verdict(backend: Callable[[str], str], notes: Path) -> None:
    db = backend("m.db")
    _indexed(db, notes)
    os.utime(notes / "rate-limits-v2.md")  # a new time, the same bytes: the content says
    top = _search(db, notes).hits[0]
    assert (top.provenance.file, top.verdict, top.source) == ("rate-limits-v2.md", "ok", "current")


def test_a_store_read_where_its_notes_are_not_keeps_its_verdicts(
    backend: Callable[[str], str], notes: Path
) -> None:
    db = backend("m.db")
    _indexed(db, notes)
    notes.rename(notes.with_name("elsewhere"))
    top = _search(db, notes).hits[0]
    assert (top.provenance.file, top.verdict, top.source) == ("rate-limits-v2.md", "ok", None)


def test_a_note_written_as_the_run_began_is_checked_by_its_content(tmp_path: Path) -> None:
    # Its time is not recorded (the same clock tick could hold another write): every search
    # compares its content.
    root = write_corpus(
        tmp_path / "fresh", {"limits.md": "# Limits\n\nThe public API allows 600 requests.\n"}
    )
    db = str(tmp_path / "m.db")
    with recall.open(db) as mem:
        mem.index(root)
        certified(mem, threshold=0.0)
        assert mem.search("public API requests", mode="development").hits[0].source == "current"
        (root / "limits.md").write_text("# Limits\n\nThe public API allows 900 requests.\n")
        hit = mem.search("public API requests", mode="development").hits[0]
        assert (hit.verdict, hit.source) == ("source_changed", "changed")


def test_a_changed_metadata_file_changes_its_note(tmp_path: Path) -> None:
    root = write_corpus(
        tmp_path / "keps",
        {
            "2433-hints/README.md": "# Topology hints\n\nRoute traffic to the nearest zone.\n",
            "2433-hints/kep.yaml": "title: Topology hints\nstatus: implementable\n",
        },
    )
    db = str(tmp_path / "m.db")
    with recall.open(db) as mem:
        mem.index(root)
        certified(mem, threshold=0.0)
        hit = mem.search("topology hints nearest zone", mode="development").hits[0]
        assert hit.source == "current"
        (root / "2433-hints" / "kep.yaml").write_text("title: Topology hints\nstatus: replaced\n")
        hit = mem.search("topology hints nearest zone", mode="development").hits[0]
        assert (hit.verdict, hit.source) == ("source_changed", "changed")


def test_the_state_of_a_file(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "r", {"a.md": "hello\n", "b/c.md": "x\n"})
    data = (root / "a.md").read_bytes()
    digest = sources.content_digest(data, None, b"")
    st = os.stat(root / "a.md")
    stamp = (digest, len(data), st.st_mtime_ns)
    assert sources.state_of(str(root), "a.md", stamp) == "current"
    assert sources.state_of(str(root), "a.md", (digest, len(data) + 1, None)) == "changed"
    assert sources.state_of(str(root), "a.md", ("0" * 32, len(data), None)) == "changed"
    assert sources.state_of(str(root), "gone.md", stamp) == "missing"
    assert sources.state_of(str(root), "a.md/x.md", stamp) == "missing"
    assert sources.state_of(str(root), "b", stamp) == "changed", "a folder now"
    assert sources.state_of(str(tmp_path / "nowhere"), "a.md", stamp) is None
    assert sidecar_beside(str(root / "a.md"), "a.md") is None


def test_ok_hits_stay_first_in_their_order() -> None:
    from recall.results import Hit, Provenance, Validity

    def hit(name: str, verdict: str) -> Hit:
        where = Provenance("r", name, 0, (1, 1), "", "", "")
        return Hit(verdict, 0.5, 0.5, name, "", where, Validity(None, None, None))

    hits = [hit("a", "source_changed"), hit("b", "ok"), hit("c", "superseded"), hit("d", "ok")]
    assert [h.provenance.file for h in ok_first(hits)] == ["b", "d", "a", "c"]
    kept = [hit("b", "ok"), hit("c", "superseded")]
    assert ok_first(kept) is kept


def test_the_cli_says_so_in_its_table_its_reason_and_json(tmp_path: Path, notes: Path) -> None:
    from typer.testing import CliRunner

    from recall.cli import app

    db = str(tmp_path / "m.db")
    _indexed(db, notes)
    with recall.open(db) as mem:
        certified(mem)
    (notes / "rate-limits-v2.md").unlink()
    args = ["search", RATE_Q, "--db", db, "--as-of", "2026-11-30"]
    shown = CliRunner().invoke(app, args)
    assert "source_missing" in shown.stdout and "recall index" in shown.stdout
    out = CliRunner().invoke(app, [*args, "--json"])
    data = json.loads(out.stdout)
    gone = next(h for h in data["hits"] if h["provenance"]["file"] == "rate-limits-v2.md")
    assert (gone["verdict"], gone["source"]) == ("source_missing", "missing")
    assert data["abstained"] and "no longer on disk" in data["reason"]
