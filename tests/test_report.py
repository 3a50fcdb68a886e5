"""`recall report` and `Memory.lineage`: what the page holds, on real stores built from the
shipped examples (the page as a browser renders it: tests/test_report_browser.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.report import layout, write_report
from tests.conftest import EXAMPLES
from tests.report_pages import MARKUP_TITLE, NOW, example_store, note_nodes

runner = CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    return example_store(tmp_path)


# --- the lineage reader ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "standing", "superseded_by"),
    [
        ("rate-limits-v1.md", "superseded", "rate-limits-v2.md"),
        ("rate-limits-v2.md", "current", None),
        ("oncall-rotation-2025.md", "expired", None),
        ("deploy-freeze-2026.md", "not_yet_valid", None),
        ("teams/platform/runbook.md", "ambiguous_supersession", None),
        ("teams/search/runbook.md", "ambiguous_supersession", None),
        ("cache-policy.md", "expired", None),
        ("database-choice.md", "current", None),
    ],
)
def test_lineage_gives_each_note_the_cores_standing(
    store: tuple[Path, Path], path: str, standing: str, superseded_by: str | None
) -> None:
    with recall.open(store[0]) as mem:
        notes = {n.path: n for n in mem.lineage(now=NOW)}
    assert notes[path].standing == standing
    assert notes[path].superseded_by == superseded_by
    assert notes[path].file_state == "current"


def test_lineage_reads_alike_on_every_backend(
    backend: Callable[[str], str], tmp_path: Path
) -> None:
    """The lineage is read through the store contract: a PostgreSQL store gives the same."""
    target = backend("lineage")
    with recall.open(target, embedder="hashing-512") as mem:
        mem.index(EXAMPLES)
        notes = {n.path: n for n in mem.lineage(now=NOW)}
        written = write_report(mem, tmp_path / "r.html", now=NOW)
    assert notes["rate-limits-v1.md"].standing == "superseded"
    assert notes["rate-limits-v1.md"].superseded_by == "rate-limits-v2.md"
    assert notes["teams/search/runbook.md"].standing == "ambiguous_supersession"
    assert written.notes == len(notes) == 10 and written.edges == 3


def test_lineage_keeps_claims_retirements_and_what_moved(store: tuple[Path, Path]) -> None:
    db, folder = store
    (folder / "database-choice.md").write_text("# Primary database\n\nNow SQLite.\n")
    (folder / "standup-notes.txt").unlink()
    with recall.open(db) as mem:
        notes = {n.path: n for n in mem.lineage(now=NOW)}
    v2 = notes["rate-limits-v2.md"].claims
    assert [(c.resolution, c.targets, c.reversed) for c in v2] == [
        ("resolved", ("rate-limits-v1.md",), False)
    ]
    assert v2[0].recorded_at == notes["rate-limits-v2.md"].first_indexed_at
    assert notes["rate-limits-v1.md"].chain == ("rate-limits-v1.md", "rate-limits-v2.md")
    assert notes["onboarding.md"].claims[0].resolution == "dangling"
    retired = notes["cache-policy.md"].retired
    assert retired is not None and retired[0] == "withdrawn" and retired[2] == "nygard"
    assert notes["database-choice.md"].file_state == "changed"
    assert notes["standup-notes.txt"].file_state == "missing"


# --- the page ----------------------------------------------------------------------------------


def test_page_draws_every_note_with_its_mark(store: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    with recall.open(store[0]) as mem:
        written = write_report(mem, out, now=NOW)
        documents = mem.stats().documents
    page = out.read_text(encoding="utf-8")
    parsed = note_nodes(page)
    assert written.notes == len(parsed.nodes) == documents == 12
    states = {n.attrs["data-path"]: n.attrs["data-state"] for n in parsed.nodes}
    assert states["rate-limits-v1.md"] == "superseded"
    assert states["rate-limits-v2.md"] == "current"
    assert [p for p, s in states.items() if s == "retired"] == ["cache-policy.md"]
    assert [p for p, s in states.items() if s == "expired"] == ["oncall-rotation-2025.md"]
    assert written.edges == 3  # v1 -> v2, and the ambiguous claim on both runbooks
    assert written.bytes == len(page.encode("utf-8"))
    # The refused note is shown apart, with the lint finding that says why.
    assert 'class="unread k-refused"' in page and "E004 valid_from" in page


def test_page_escapes_what_notes_say(store: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    with recall.open(store[0]) as mem:
        write_report(mem, out, now=NOW)
    page = out.read_text(encoding="utf-8")
    parsed = note_nodes(page)
    assert "script" not in parsed.tags and "<b>bold</b>" not in page
    markup = next(n for n in parsed.nodes if n.attrs["data-path"] == "markup-title.md")
    assert markup.attrs["data-title"] == MARKUP_TITLE
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_page_fetches_nothing(store: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    with recall.open(store[0]) as mem:
        write_report(mem, out, now=NOW)
    page = out.read_text(encoding="utf-8")
    assert "default-src 'none'" in page
    # The only URL is SVG's namespace name, which is never fetched.
    urls = set(re.findall(r"https?://[^\"' )<>]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img|iframe|object)\b", page)
    assert not re.search(r"\b(src|href)=\"(?!#)", page)


def test_page_shows_calibration_freshness_and_lint(
    store: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    with recall.open(store[0]) as mem:
        write_report(mem, out, now=NOW)
        stats = mem.stats()
    page = out.read_text(encoding="utf-8")
    # Too few notes to calibrate: the plot is the development default, and the page says so.
    assert "No calibration is in force" in page and 'class="plot"' in page
    assert "CALIBRATION_MISSING" in page
    assert f"<td>generation</td><td>{stats.generation}</td>" in page
    assert "E006 ambiguous-target" in page and "E001 dangling-reference" in page
    assert "<td>declarations</td><td>ok</td>" in page


def test_page_shows_the_calibration_in_force(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        topic = ["billing", "search", "storage", "deploys"][i % 4]
        (folder / f"note-{i:02d}.md").write_text(
            f"# {topic.title()} decision {i}\n\n## Scope {i}\n\nThe {topic} team chose option "
            f"{i} after measuring load {i * 7} and cost {i * 3}.\n"
        )
    db = tmp_path / "memory.db"
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(folder)
        record, _ = mem.calibration()
        assert record is not None and record.source == "self"
        write_report(mem, tmp_path / "r.html", now=NOW)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"threshold {record.threshold:.3f} (confidence 0.5)" in page
    assert "self: made by recall from the notes" in page
    assert record.id in page


def test_page_with_the_evaluation(store: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    with recall.open(store[0]) as mem:
        write_report(mem, out, now=NOW, evaluate=True)
    page = out.read_text(encoding="utf-8")
    assert '<section id="eval">' in page
    assert "<td>superseded trust: declared</td>" in page
    assert "hashing-512 (labelled)" in page and "hashing-512 (self)" in page


# --- the layout --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "edges"),
    [
        (12, [(i, i + 1) for i in range(11)]),  # one long chain, wrapped
        (3, [(0, 1), (1, 2), (2, 0)]),  # a cycle
        (4, [(0, 1), (0, 2), (2, 3)]),  # fan-in on 0
        (6, [(0, 1), (2, 3)]),  # two short lineages on one shelf, two notes alone
    ],
)
def test_layout_places_every_note_once_inside_the_page(
    n: int, edges: list[tuple[int, int]]
) -> None:
    sizes = [(layout.NODE_W, layout.NODE_H)] * n
    placed = layout.lineages(n, edges, list(range(n)), sizes)
    boxes = [(i, b) for g in placed.groups for i, b in g.boxes.items()]
    assert sorted([i for i, _ in boxes] + placed.singles) == list(range(n))
    for _, b in boxes:
        assert b.x >= layout.PAD and b.x + b.w <= layout.WIDTH - layout.PAD
        assert b.y >= 0 and b.y + b.h <= placed.height
    # No two boxes overlap.
    for k, (_, a) in enumerate(boxes):
        for _, b in boxes[k + 1 :]:
            assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y


def test_layout_puts_a_successor_after_what_it_replaced() -> None:
    sizes = [(layout.NODE_W, layout.NODE_H)] * 3
    placed = layout.lineages(3, [(2, 1), (1, 0)], [0, 1, 2], sizes)
    (group,) = placed.groups
    assert [group.columns[i] for i in (2, 1, 0)] == [0, 1, 2]
    assert group.boxes[2].x < group.boxes[1].x < group.boxes[0].x


# --- the command -------------------------------------------------------------------------------


def test_cli_report_json(store: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    result = runner.invoke(
        app, ["report", "--db", str(store[0]), "--out", str(out), "--as-of", "2026-06-01", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["path"] == str(out.resolve())
    assert (data["notes"], data["edges"], data["unread"]) == (12, 3, 1)
    assert data["bytes"] == out.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "{tmp}/none.db"], "does not exist; run 'recall index PATH' first"),
        (["--db", "{db}", "--out", "{tmp}/no/such/folder/r.html"], "folder"),
        (["--db", "{db}", "--out", "{tmp}"], "is a folder"),
        (["--db", "{db}", "--out", "{db}/r.html"], "is not a folder"),
        (["--db", "{db}", "--questions", "{tmp}/q.jsonl"], "--questions goes with --eval"),
        (["--db", "{db}", "--as-of", "yesterday"], "not a date"),
    ],
)
def test_cli_report_errors(
    store: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(tmp=tmp_path, db=store[0]) for a in args]
    result = runner.invoke(app, ["report", *filled, "--json"])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert message in error["message"] and error["exit"] == 2


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_cli_report_says_when_the_page_cannot_be_written(
    store: tuple[Path, Path], tmp_path: Path
) -> None:
    # /proc takes no new files, whoever asks (root included).
    result = runner.invoke(
        app, ["report", "--db", str(store[0]), "--out", "/proc/recall-report.html"]
    )
    assert result.exit_code == 2
    assert "recall report: cannot write /proc/recall-report.html" in result.output
    assert "give another --out" in result.output
