"""Two `ok` hits that look like an update nobody declared are said to be so, never decided
(`recall.undeclared`): the result warns, naming both, and the older hit's validity names the
newer; the verdicts stay as declared."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.results import Hit, Provenance, Validity
from recall.undeclared import evidence, pairs

from .test_search import certified

OLD = "# Dashboard API latency\n\nThe dashboard API answers in 400 ms at the 95th percentile.\n"
NEW = "# Dashboard speed\n\nThe dashboard API now answers in 250 ms at the 95th percentile.\n"
QUERY = "how fast does the dashboard API answer?"


def _two_runs(db: str, root: Path, new: str = NEW) -> recall.Memory:
    """The old note indexed, then the new one in a later run."""
    root.mkdir(exist_ok=True)
    (root / "dashboard-latency.md").write_text(OLD, encoding="utf-8")
    mem = recall.open(db, embedder="hashing-512")
    mem.index(root)
    certified(mem, threshold=0.1)
    time.sleep(0.002)  # a later first-indexed instant
    (root / "dashboard-speed.md").write_text(new, encoding="utf-8")
    mem.index(root)
    return mem


def test_an_undeclared_update_is_warned_and_both_stay_ok(
    tmp_path: Path, backend: Callable[[str], str]
) -> None:
    with _two_runs(backend("m.db"), tmp_path / "notes") as mem:
        result = mem.search(QUERY)
    hits = {h.provenance.file: h for h in result.hits}
    old, new = hits["dashboard-latency.md"], hits["dashboard-speed.md"]
    assert (old.verdict, new.verdict) == ("ok", "ok")  # said, never decided
    assert old.validity.possibly_superseded_by == "dashboard-speed.md"
    assert new.validity.possibly_superseded_by is None
    (warning,) = result.warnings
    assert warning.startswith("dashboard-speed.md may replace dashboard-latency.md")
    assert "400 then 250" in warning
    assert "supersedes: dashboard-latency.md in dashboard-speed.md" in warning


def test_a_declared_update_is_not_warned(tmp_path: Path, backend: Callable[[str], str]) -> None:
    declared = "---\nsupersedes: dashboard-latency.md\n---\n" + NEW
    with _two_runs(backend("m.db"), tmp_path / "notes", declared) as mem:
        result = mem.search(QUERY)
    hits = {h.provenance.file: h for h in result.hits}
    assert hits["dashboard-latency.md"].verdict == "superseded"
    assert result.warnings == []
    assert all(h.validity.possibly_superseded_by is None for h in result.hits)


def test_notes_first_indexed_together_are_not_a_pair(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "dashboard-latency.md").write_text(OLD, encoding="utf-8")
    (root / "dashboard-speed.md").write_text(NEW, encoding="utf-8")
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        mem.index(root)
        certified(mem, threshold=0.1)
        result = mem.search(QUERY)
    assert sum(h.ok for h in result.hits) == 2 and result.warnings == []


def test_the_cli_shows_the_warning_and_json_carries_it(tmp_path: Path) -> None:
    _two_runs(str(tmp_path / "m.db"), tmp_path / "notes").close()
    runner = CliRunner()
    shown = runner.invoke(app, ["search", QUERY, "--db", str(tmp_path / "m.db")])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.stdout.split())
    assert "may be replaced by dashboard-speed.md (undeclared)" in flat
    assert "dashboard-speed.md may replace dashboard-latency.md" in flat
    data = json.loads(
        runner.invoke(app, ["search", QUERY, "--db", str(tmp_path / "m.db"), "--json"]).stdout
    )
    assert data["warnings"] and data["warnings"][0].startswith("dashboard-speed.md may replace")
    marked = {
        h["provenance"]["file"]: h["validity"]["possibly_superseded_by"] for h in data["hits"]
    }
    assert marked["dashboard-latency.md"] == "dashboard-speed.md"


def _hit(file: str, title: str, text: str, first: str, verdict: str = "ok") -> Hit:
    return Hit(
        verdict=verdict,
        confidence=0.9,
        score=0.5,
        title=title,
        text=text,
        provenance=Provenance("notes", file, 0, (1, 3), "", first, first),
        validity=Validity(None, None, None),
    )


@pytest.mark.parametrize(
    ("older", "newer", "why"),
    [
        (("limits-v1.md", "Rate limits", "x"), ("limits-v2.md", "Limits", "y"), "versions"),
        (("a.md", "Retry policy", "x"), ("b.md", "Retry policy", "y"), "the same title"),
        (
            ("a.md", "Public API rate limits", "x"),
            ("b.md", "Public API rate limits 2027", "y"),
            "near title",
        ),
        (
            ("a.md", "Pool", "The connection pool holds 20 connections per service."),
            ("b.md", "Pool size", "Each service's connection pool now holds 50 connections."),
            "changed number, 20 then 50",
        ),
        (("a.md", "Pool", "The connection pool holds 20 connections per service."),
         ("b.md", "Pool", "The connection pool holds 20 connections per service."), "same title"),
    ],
)  # fmt: skip
def test_what_counts_as_evidence(
    older: tuple[str, str, str], newer: tuple[str, str, str], why: str
) -> None:
    a = _hit(*older, "2026-01-01T00:00:00Z")
    b = _hit(*newer, "2026-02-01T00:00:00Z")
    found = evidence(a, b)
    assert found is not None and why in found


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # Siblings: another subject, or the same numbers.
        (
            ("connect.md", "Connect timeout", "The client's connect timeout is 5 seconds."),
            ("oncall.md", "On-call rotation", "The rotation changes every 7 days at noon."),
        ),
        (
            ("a.md", "Pool", "The connection pool holds 20 connections per service."),
            ("b.md", "Pool sizing", "Connections per service in the pool: 20, set by the team."),
        ),
    ],
)
def test_what_does_not(older: tuple[str, str, str], newer: tuple[str, str, str]) -> None:
    assert evidence(_hit(*older, "2026-01-01"), _hit(*newer, "2026-02-01")) is None


def test_only_ok_hits_pair_and_the_older_is_the_first_indexed() -> None:
    same = "The connection pool holds {} connections per service."
    old = _hit("a.md", "Pool", same.format(20), "2026-01-01T00:00:00Z")
    new = _hit("b.md", "Pool", same.format(50), "2026-03-01T00:00:00Z")
    (pair,) = pairs([new, old])
    assert (pair.older, pair.newer) == ("a.md", "b.md")
    retired = _hit("b.md", "Pool", same.format(50), "2026-03-01T00:00:00Z", "expired")
    assert pairs([retired, old]) == []
