"""The paths an index run lists and reports, held as one block of text (`recall.pathlist`)."""

from __future__ import annotations

import json
import os
import pickle
import tracemalloc
from pathlib import Path

import pytest

from recall.indexing import IndexReport
from recall.pathlist import PathList
from recall.walk import walk

ODD = ["a.md", "notes/é ü.md", "x\udcff.md", "", "deep/er/path with spaces.md"]


def test_paths_read_back_as_written_and_compare_as_a_list() -> None:
    paths = PathList(ODD[:2])
    paths.extend(ODD[2:])
    assert list(paths) == ODD and paths == ODD and paths == tuple(ODD)
    assert paths != ODD[:-1] and paths != [*ODD[:-1], "other.md"] and paths != "a.md"
    assert len(paths) == len(ODD) and bool(paths) and not PathList()
    assert [paths[i] for i in range(-len(ODD), len(ODD))] == ODD + ODD
    assert paths[1:4] == ODD[1:4] and paths[::-2] == ODD[::-2]
    with pytest.raises(IndexError):
        paths[len(ODD)]
    assert "x\udcff.md" in paths and "y.md" not in paths
    assert pickle.loads(pickle.dumps(paths)) == paths


def test_a_report_writes_its_paths_as_lists() -> None:
    report = IndexReport()
    report.added.extend(ODD)
    report.removed.append("gone.md")
    data = report.to_dict()
    assert data["added"] == ODD and data["updated"] == [] and data["removed"] == ["gone.md"]
    assert json.loads(json.dumps(data))["added"][1] == "notes/é ü.md"
    assert report.added == ODD, "writing it out leaves the report as it was"


def test_paths_hold_under_half_of_what_a_list_of_strings_does() -> None:
    def made() -> list[str]:
        return [f"f{i // 500:04d}/note-{i:07d}.md" for i in range(100_000)]

    tracemalloc.start()
    try:
        as_list = made()
        listed, _ = tracemalloc.get_traced_memory()
        del as_list
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        held = PathList(made())
        compact = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held == made()
    assert compact < listed / 2, (compact, listed)


def test_a_walk_holds_its_files_as_one_block_of_text(tmp_path: Path) -> None:
    names = ["a.md", "sub/é ü.md", "sub/deeper/c.txt"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# Note\n\nBody.\n", encoding="utf-8")
    listing = walk(tmp_path)
    assert isinstance(listing.files, PathList)
    assert sorted(listing.files) == sorted(names)
    assert dict(listing.paths()) == {n: os.path.join(str(tmp_path), n) for n in names}
