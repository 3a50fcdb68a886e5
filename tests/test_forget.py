"""`recall forget` (SPEC §8.4): documents leave the store, files stay; a dry run by default;
edges toward them dangle; index runs skip them until undo, which keeps their first indexing
time."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app

from .conftest import write_corpus

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
T1 = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


def _files(corpus: Path) -> None:
    write_corpus(
        corpus,
        {
            "old.md": "# Deploys\n\nDeploy on Tuesdays after the freeze.\n",
            "new.md": "---\nsupersedes: old.md\n---\n# Deploys\n\nDeploy any weekday.\n",
            "misc/other.md": "# Lunch\n\nLunch is at noon.\n",
        },
    )


def _paths(mem: recall.Memory) -> set[str]:
    return {p for _, p, _ in mem._store.document_list()}


def test_dry_run_apply_skip_and_undo(backend: Callable[[str], str], corpus: Path) -> None:
    _files(corpus)
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=T0)
        first = {p: t for _, p, t in mem._store.document_list()}

        dry = mem.forget(corpus / "old.md", now=NOW)
        assert not dry.applied and [d.path for d in dry.documents] == ["old.md"]
        assert dry.documents[0].referenced_by == ["new.md"]
        assert _paths(mem) == {"old.md", "new.md", "misc/other.md"}

        done = mem.forget(corpus / "old.md", apply=True, now=NOW)
        assert done.applied and done.chunks == 1
        assert _paths(mem) == {"new.md", "misc/other.md"}
        assert (corpus / "old.md").exists()  # never the file
        res = mem.search("deploy tuesdays freeze", now=NOW, mode="development")
        assert "old.md" not in {h.provenance.file for h in res.hits}
        st = mem.stats()
        assert st.forgotten == 1 and st.edges_dangling == 1

        # Index runs skip it, with the reason, and do not count it as removed.
        report = mem.index(corpus, now=T1)
        assert "old.md" in {s.path for s in report.skipped}
        assert not report.removed and "old.md" not in _paths(mem)

        back = mem.undo_forget(corpus / "old.md", now=NOW)
        assert [f.path for f in back] == ["old.md"]
        report = mem.index(corpus, now=T1)
        assert report.added == ["old.md"]
        again = {p: t for _, p, t in mem._store.document_list()}
        assert again["old.md"] == first["old.md"]  # SPEC §2.4: transaction time kept
        assert mem.forgotten() == [] and mem.stats().edges_dangling == 0


def test_folder_and_older_than(backend: Callable[[str], str], corpus: Path) -> None:
    write_corpus(corpus, {"misc/other.md": "# Lunch\n\nLunch is at noon.\n"})
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=T0)
        _files(corpus)
        mem.index(corpus, now=T1)
        folder = mem.forget(corpus / "misc", now=NOW)
        assert [d.path for d in folder.documents] == ["misc/other.md"]
        older = mem.forget(older_than=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc), now=NOW)
        assert [d.path for d in older.documents] == ["misc/other.md"]
        both = mem.forget([corpus / "misc", "new.md"], now=NOW)
        assert [d.path for d in both.documents] == ["misc/other.md", "new.md"]
        with pytest.raises(recall.UsageError, match="no indexed document matches"):
            mem.forget(corpus / "nope.md")
        with pytest.raises(recall.UsageError, match="name the files"):
            mem.forget()


def test_cli_forget(tmp_path: Path, corpus: Path) -> None:
    _files(corpus)
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(corpus), "--db", db]).exit_code == 0
    dry = runner.invoke(app, ["forget", str(corpus / "old.md"), "--db", db, "--json"])
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.output)
    assert data["applied"] is False and data["documents"][0]["referenced_by"] == ["new.md"]
    text = runner.invoke(app, ["forget", str(corpus / "old.md"), "--db", db, "--apply"])
    assert text.exit_code == 0 and "forgot old.md" in text.output
    assert "new.md will dangle" in text.output
    listed = json.loads(runner.invoke(app, ["forget", "--list", "--db", db, "--json"]).output)
    assert [f["path"] for f in listed["forgotten"]] == ["old.md"]
    undone = runner.invoke(app, ["forget", "--undo", "--db", db])
    assert undone.exit_code == 0 and "brought back old.md" in undone.output
    missing = runner.invoke(app, ["forget", str(corpus / "nope.md"), "--db", db])
    assert missing.exit_code == 2 and "no indexed document matches" in missing.output
    assert runner.invoke(app, ["forget", "--db", db]).exit_code == 2
    # A store that does not exist is not created by a forget.
    absent = tmp_path / "absent.db"
    assert runner.invoke(app, ["forget", "x.md", "--db", str(absent)]).exit_code == 2
    assert not absent.exists()


def test_memory_lint_reads_the_stores_roots(backend: Callable[[str], str], corpus: Path) -> None:
    _files(corpus)
    write_corpus(corpus, {"misc/dangling.md": "---\nsupersedes: gone.md\n---\n# D\n"})
    with recall.open(backend("m.db")) as mem:
        with pytest.raises(recall.UsageError, match="pass the paths"):
            mem.lint()
        mem.index(corpus, now=T0)
        report = mem.lint()
        assert report.files == 4
        assert [(f.code, f.line) for f in report.findings if f.severity == "error"] == [("E001", 2)]
        mem.index(corpus, now=T0, vocabularies="none")
        assert mem.lint().errors == 0
