"""A root that no longer exists is reported by `index`, `stats` and `doctor` with the way out,
and its documents are kept until the user drops them (SPEC §11: nothing removed silently)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import recall
from recall.doctor import diagnose


def _notes(root: Path, n: int) -> Path:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"n{i}.md").write_text(
            f"# Note {i}\n\nThe cache for tenant {i} expires after {i + 1} hours.\n",
            encoding="utf-8",
        )
    return root


def test_a_moved_folder_is_reported_with_the_way_out_and_its_documents_kept(
    tmp_path: Path, backend: Callable[[str], str]
) -> None:
    notes, kept = _notes(tmp_path / "notes", 3), _notes(tmp_path / "other", 2)
    db = backend("m.db")
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index([notes, kept])
        assert mem.stats().missing_roots == []
        assert next(c for c in diagnose(mem).checks if c.name == "roots").status == "ok"
        moved = tmp_path / "notes-moved"
        shutil.move(str(notes), str(moved))

        report = mem.index(moved)
        assert report.missing_roots == [(str(notes.resolve()), 3)]
        stats = mem.stats()
        assert stats.documents == 3 + 2 + 3  # kept, never removed silently
        assert stats.missing_roots == [(str(notes.resolve()), 3)]
        check = next(c for c in diagnose(mem).checks if c.name == "roots")
        assert check.status == "warning"
        assert str(notes.resolve()) in check.detail and "recall forget" in check.detail

        # The way out the message names: forget the old root.
        forgot = mem.forget([notes.resolve()], apply=True)
        assert forgot.applied and len(forgot.documents) == 3
        assert mem.stats().missing_roots == []
        assert mem.stats().documents == 5


def test_index_stats_and_doctor_say_it_on_the_command_line(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes", 2)
    db = tmp_path / "m.db"
    env = {**os.environ, "RECALL_EMBEDDER": "hashing-512", "COLUMNS": "300"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "recall.cli", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    assert cli("index", str(notes)).returncode == 0
    notes.rename(tmp_path / "renamed")
    gone = str(notes.resolve())
    index = cli("index", str(tmp_path / "renamed"))
    assert index.returncode == 0, index.stderr
    assert f"2 documents from {gone}, which no longer exists here, are kept" in index.stdout
    assert f"'recall forget {gone} --apply'" in index.stdout
    as_json = json.loads(cli("index", str(tmp_path / "renamed"), "--json").stdout)
    assert as_json["missing_roots"] == [[gone, 2]]
    assert "missing roots" in cli("stats").stdout
    assert json.loads(cli("stats", "--json").stdout)["missing_roots"] == [[gone, 2]]
    doctor = cli("doctor")
    assert "no longer exists here" in doctor.stdout and doctor.returncode == 0
