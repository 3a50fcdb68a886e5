"""What an agent was told (`recall serve --log FILE`, `recall log FILE`): one JSON line per call
with the hits, verdicts and calibration it answered with, rotated by size, read back whole or
with the lines a crash cut short counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.call_log import CallLog, read
from recall.cli import app

from .test_mcp import AS_OF, RATE_Q, Session, data, run_server, store  # noqa: F401


def test_a_server_logs_each_call_with_what_it_answered(
    tmp_path: Path,
    store: tuple[str, Path],  # noqa: F811 - the fixture of test_mcp
) -> None:
    db, _ = store
    log = tmp_path / "calls.jsonl"

    async def scenario(session: Session) -> None:
        found = data(await session.call_tool("search", {"query": RATE_Q, "as_of": AS_OF}))
        assert found["hits"][0]["verdict"] == "ok"
        refused = await session.call_tool("search", {"query": RATE_Q, "k": 0})
        assert refused.is_error

    run_server(tmp_path, ["--db", db, "--log", str(log)], scenario)
    lines, bad = read(log)
    assert bad == 0 and [line["tool"] for line in lines] == ["search", "search"]
    told, refused = lines
    assert told["arguments"] == {"query": RATE_Q, "as_of": AS_OF}
    top = told["hits"][0]
    assert (top["file"], top["verdict"], top["source"]) == ("rate-limits-v2.md", "ok", "current")
    assert 0.5 < top["confidence"] <= 1.0
    with recall.open(db) as mem:
        calibration, _ = mem.calibration()
        assert calibration is not None
        assert told["calibration"] == calibration.id
        assert told["generation"] == mem.stats().generation
    assert told["abstained"] is False and told["at"].endswith("+00:00")
    assert refused["error"]["code"] == "INVALID_ARGUMENT" and "hits" not in refused

    shown = CliRunner().invoke(app, ["log", str(log)])
    assert shown.exit_code == 0
    assert "search  " + RATE_Q in shown.stdout and "ok  " in shown.stdout
    assert "rate-limits-v2.md" in shown.stdout and "INVALID_ARGUMENT" in shown.stdout
    as_json = json.loads(CliRunner().invoke(app, ["log", str(log), "--json", "-n", "1"]).stdout)
    assert as_json["calls"] == [refused] and as_json["unreadable_lines"] == 0


def test_a_log_rotates_by_size_and_keeps_its_last_files(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    log = CallLog(path, max_bytes=400, keep=2)
    answer: dict[str, Any] = {"hits": [], "abstained": True, "reason": "nothing", "generation": 1}
    for n in range(12):
        log.append("search", {"query": f"question {n}"}, answer, failed=False)
    kept = [path, path.with_name("calls.jsonl.1"), path.with_name("calls.jsonl.2")]
    assert all(p.exists() for p in kept) and not path.with_name("calls.jsonl.3").exists()
    assert all(p.stat().st_size <= 400 for p in kept)
    newest, _ = read(path)
    assert newest[-1]["arguments"]["query"] == "question 11"
    older, _ = read(kept[1])
    assert older[-1]["arguments"]["query"] == f"question {11 - len(newest)}"


def test_a_line_cut_short_is_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    CallLog(path).append("stats", {}, {"store": {}}, failed=False)
    with path.open("a") as handle:
        handle.write('{"at": "2026-12-05T10:00:00", "tool": "sea')
    lines, bad = read(path)
    assert [line["tool"] for line in lines] == ["stats"] and bad == 1
    shown = CliRunner().invoke(app, ["log", str(path)])
    assert shown.exit_code == 0 and "1 line(s) could not be read" in shown.stderr


def test_a_log_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    shown = CliRunner().invoke(app, ["log", str(tmp_path / "none.jsonl")])
    assert shown.exit_code != 0 and "recall log: cannot read" in shown.stderr


def test_a_memory_opened_with_a_log_logs_its_searches_and_refusals(tmp_path: Path) -> None:
    from recall.errors import TrustRefusal

    from .conftest import EXAMPLES

    db, log = tmp_path / "m.db", tmp_path / "searches.jsonl"
    with recall.open(db, log=log) as mem:
        mem.index(EXAMPLES)
        with pytest.raises(TrustRefusal):
            mem.search(RATE_Q)  # strict, no calibration yet
        result = mem.search(RATE_Q, mode="development")
    lines, bad = read(log)
    assert bad == 0 and [line["tool"] for line in lines] == ["search", "search"]
    refused, answered = lines
    assert refused["error"]["code"] == "CALIBRATION_MISSING"
    assert answered["arguments"]["mode"] == "development"
    told = [(h["file"], h["verdict"]) for h in answered["hits"]]
    assert told == [(h.provenance.file, h.verdict) for h in result.hits] and told
