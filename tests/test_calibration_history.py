"""The calibration history (SPEC §7, stored per embedder fingerprint): a fit that is not
certified never silently replaces a certified record in use, every record is kept (the last
`HISTORY_LIMIT`), `recall calibrate --list/--use/--replace`, and stores written before the
history was kept."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.calibration import (
    HISTORY_LIMIT,
    Calibration,
    dump_history,
    history_key,
    load_history,
    meta_key,
    with_entry,
)
from recall.cli import app

from .conftest import EXAMPLES
from .test_calibration import RATE, _labelled

runner = CliRunner()
T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)

#: Certified on the example notes with hashing-512 (AUC 1.0 on 42 + 24 queries).
GOOD = _labelled()
#: Answerable queries only: never certified ("needs at least 20 ... per class").
WORSE = [(q, True) for q, a in _labelled() if a][:12]


def _write(path: Path, pairs: list[tuple[str, bool]]) -> Path:
    path.write_text("".join(json.dumps({"query": q, "answerable": a}) + "\n" for q, a in pairs))
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as m:
        m.index(EXAMPLES)
        yield m


def _record(mem: recall.Memory, **extra: Any) -> dict[str, Any]:
    return {
        "id": "imported",
        "embedder": mem.embedder.name,
        "fingerprint": mem.embedder.fingerprint,
        "threshold": 0.3,
        "scale": 0.05,
        "certified": True,
        **extra,
    }


# --- the API --------------------------------------------------------------------------------


def test_uncertified_fit_keeps_the_certified_record_in_use(mem: recall.Memory) -> None:
    good, fitted = mem.calibrate(GOOD, now=T0)
    assert fitted.certified and good.certified is True
    worse, fitted = mem.calibrate(WORSE, now=T0 + dt.timedelta(hours=1))
    assert not fitted.certified and worse.certified is False
    assert mem.calibration()[0] == good, "the certified record stays in use"
    assert mem.search(RATE).trust_state == "trusted"
    history = mem.calibration_history()
    assert [(e.number, e.record, e.in_use, e.source) for e in history] == [
        (2, worse, False, "fit"),
        (1, good, True, "fit"),
    ]
    assert history[0].saved_at == worse.fitted_at == "2026-03-01T01:00:00.000000Z"


def test_replace_puts_the_uncertified_fit_in_use(mem: recall.Memory) -> None:
    mem.calibrate(GOOD, now=T0)
    worse, _ = mem.calibrate(WORSE, now=T0, replace=True)
    assert mem.calibration()[0] == worse
    assert [e.in_use for e in mem.calibration_history()] == [True, False]
    with pytest.raises(recall.TrustRefusal) as err:
        mem.search(RATE)
    assert err.value.code == "CALIBRATION_UNCERTIFIED"


@pytest.mark.parametrize(
    ("first", "second", "second_in_use"),
    [
        (WORSE, GOOD, True),  # a certified fit replaces an uncertified one
        (GOOD, GOOD, True),  # and a certified one
        (WORSE, WORSE, True),  # nothing certified is in use: the newest fit is
        (GOOD, WORSE, False),  # the one case that keeps the record in use
    ],
    ids=["worse-then-good", "good-then-good", "worse-then-worse", "good-then-worse"],
)
def test_which_fit_is_put_in_use(
    mem: recall.Memory,
    first: list[tuple[str, bool]],
    second: list[tuple[str, bool]],
    second_in_use: bool,
) -> None:
    a, _ = mem.calibrate(first, now=T0)
    b, _ = mem.calibrate(second, now=T0 + dt.timedelta(minutes=1))
    assert mem.calibration()[0] == (b if second_in_use else a)
    assert len(mem.calibration_history()) == 2


def test_use_puts_an_earlier_record_back(mem: recall.Memory) -> None:
    good, _ = mem.calibrate(GOOD, now=T0)
    mem.calibrate(WORSE, now=T0, replace=True)
    assert mem.use_calibration(1) == good and mem.calibration()[0] == good
    assert [(e.number, e.in_use) for e in mem.calibration_history()] == [(2, False), (1, True)]
    with pytest.raises(recall.UsageError, match=r"no calibration #7 .*kept: #1, #2"):
        mem.use_calibration(7)
    with pytest.raises(recall.UsageError, match="number must be an int"):
        mem.use_calibration(True)


def test_import_is_an_explicit_choice_and_is_kept(mem: recall.Memory) -> None:
    good, _ = mem.calibrate(GOOD, now=T0)
    imported = mem.import_calibration(_record(mem, certified=False, id="theirs"))
    assert mem.calibration()[0] == imported, "an import is put in use, certified or not"
    history = mem.calibration_history()
    assert [(e.number, e.source, e.in_use) for e in history] == [
        (2, "import", True),
        (1, "fit", False),
    ]
    assert history[1].record == good


def test_history_is_capped_and_never_drops_the_record_in_use(mem: recall.Memory) -> None:
    good, _ = mem.calibrate(GOOD, now=T0)
    for i in range(HISTORY_LIMIT + 1):
        mem.calibrate(WORSE[: i + 1], now=T0 + dt.timedelta(minutes=i + 1))
    history = mem.calibration_history()
    assert len(history) == HISTORY_LIMIT
    numbers = [e.number for e in history]
    # #1 (in use) and the newest nine; #2 and #3 were the oldest not in use.
    assert numbers == [12, 11, 10, 9, 8, 7, 6, 5, 4, 1]
    assert history[-1].record == good and history[-1].in_use
    assert mem.calibration()[0] == good
    for i in range(3):
        mem.import_calibration(_record(mem, id=f"i{i}"))
    history = mem.calibration_history()
    assert len(history) == HISTORY_LIMIT and history[0].record.id == "i2" and history[0].in_use
    assert [e.number for e in history][:3] == [15, 14, 13]
    assert all(e.number > 5 for e in history), "now the oldest go, #1 included"


def test_store_with_a_single_record_from_before_the_history(mem: recall.Memory) -> None:
    fingerprint = mem.embedder.fingerprint
    # What earlier versions wrote: the record in use under meta_key, nothing else.
    mem._store.set_meta(meta_key(fingerprint), json.dumps(_record(mem, id="old")))
    old, why = mem.calibration()
    assert old is not None and old.id == "old" and why == ""
    assert mem.search(RATE).trust_state == "trusted"
    (entry,) = mem.calibration_history()
    assert (entry.number, entry.source, entry.in_use, entry.saved_at) == (1, "earlier", True, None)
    assert mem._store.meta(history_key(fingerprint)) is None, "reading writes nothing"
    worse, _ = mem.calibrate(WORSE, now=T0)
    assert mem.calibration()[0] == old, "the old certified record stays in use"
    assert [(e.number, e.source, e.in_use) for e in mem.calibration_history()] == [
        (2, "fit", False),
        (1, "earlier", True),
    ]
    assert mem.export_calibration()["id"] == "old"


def test_record_in_use_written_outside_the_history_is_listed_as_newest(
    mem: recall.Memory,
) -> None:
    mem.calibrate(GOOD, now=T0)
    mem._store.set_meta(meta_key(mem.embedder.fingerprint), json.dumps(_record(mem, id="x")))
    history = mem.calibration_history()
    assert [(e.number, e.record.id, e.in_use) for e in history][0] == (2, "x", True)
    assert not history[1].in_use


# --- storage, defensively -------------------------------------------------------------------

FP = "f" * 16


def _calibration() -> Calibration:
    return Calibration(
        id="c", embedder="e", fingerprint=FP, threshold=0.3, scale=0.05, certified=True
    )


def _entry(number: object, record: object, **extra: object) -> dict[str, object]:
    return {"number": number, "saved_at": "2026-03-01T00:00:00.000000Z", "record": record, **extra}


GOOD_RECORD = _calibration().to_dict()


@pytest.mark.parametrize(
    ("raw", "numbers"),
    [
        (None, []),
        ("{not json", []),
        ("[]", []),
        (json.dumps({"entries": "x"}), []),
        (json.dumps({"entries": [_entry(1, GOOD_RECORD), _entry(2, GOOD_RECORD)]}), [1, 2]),
        # Unreadable entries are left out: no number, a bool, a bad record, another embedder,
        # a repeated number.
        (json.dumps({"entries": [_entry(None, GOOD_RECORD), _entry(True, GOOD_RECORD)]}), []),
        (json.dumps({"entries": [_entry(1, {**GOOD_RECORD, "threshold": 7})]}), []),
        (json.dumps({"entries": [_entry(1, {**GOOD_RECORD, "fingerprint": "other"})]}), []),
        (json.dumps({"entries": [_entry(3, GOOD_RECORD), _entry(3, GOOD_RECORD)]}), [3]),
        (json.dumps({"entries": ["x", 5, _entry(4, GOOD_RECORD)]}), [4]),
    ],
)
def test_load_history_never_raises(raw: str | None, numbers: list[int]) -> None:
    entries = load_history(raw, FP, None)
    assert [e.number for e in entries] == numbers
    assert not any(e.in_use for e in entries)


def test_history_round_trips_and_marks_the_newest_equal_entry() -> None:
    record = _calibration()
    entries, first = with_entry([], record, source="fit", saved_at="a", in_use=True)
    entries, second = with_entry(entries, record, source="import", saved_at="b", in_use=True)
    loaded = load_history(dump_history(entries), FP, record)
    assert [(e.number, e.source, e.in_use) for e in loaded] == [
        (1, "fit", False),
        (2, "import", True),
    ]
    assert (first.number, second.number) == (1, 2)
    assert "in_use" not in json.loads(dump_history(entries))["entries"][0], "derived, not stored"


# --- the CLI --------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "m.db")
    res = runner.invoke(app, ["index", str(EXAMPLES), "--db", path, "--embedder", "hashing-512"])
    assert res.exit_code == 0
    return path


def test_cli_worse_file_keeps_the_certified_record(tmp_path: Path, db: str) -> None:
    good, worse = _write(tmp_path / "good.jsonl", GOOD), _write(tmp_path / "worse.jsonl", WORSE)
    assert runner.invoke(app, ["calibrate", str(good), "--db", db]).exit_code == 0
    res = runner.invoke(app, ["calibrate", str(worse), "--db", db])
    out = _flat(res.stdout)
    assert res.exit_code == 1, "the fit is not certified"
    assert "not certified" in out and "saved as #2 in the history, not put in use" in out
    assert "stays in use" in out and "--replace" in out and "--use 2" in out
    assert runner.invoke(app, ["search", RATE, "--db", db]).exit_code == 0
    res = runner.invoke(app, ["calibrate", str(worse), "--db", db, "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == 1 and (data["entry"], data["in_use"]) == (3, False)
    assert data["in_use_id"] != data["calibration"]["id"] and not data["fit"]["certified"]


def test_cli_replace_puts_the_worse_fit_in_use(tmp_path: Path, db: str) -> None:
    good, worse = _write(tmp_path / "good.jsonl", GOOD), _write(tmp_path / "worse.jsonl", WORSE)
    assert runner.invoke(app, ["calibrate", str(good), "--db", db]).exit_code == 0
    res = runner.invoke(app, ["calibrate", str(worse), "--db", db, "--replace"])
    assert res.exit_code == 1 and "saved as #2 in the history and in use" in _flat(res.stdout)
    res = runner.invoke(app, ["search", RATE, "--db", db, "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["code"] == "CALIBRATION_UNCERTIFIED"
    res = runner.invoke(app, ["calibrate", "--use", "1", "--db", db])
    assert res.exit_code == 0 and "#1" in res.stdout and "in use" in res.stdout
    assert runner.invoke(app, ["search", RATE, "--db", db]).exit_code == 0


def test_cli_list_and_list_json(tmp_path: Path, db: str) -> None:
    res = runner.invoke(app, ["calibrate", "--list", "--db", db])
    assert res.exit_code == 0 and "no calibration recorded for hashing-512" in res.stdout
    assert (
        json.loads(runner.invoke(app, ["calibrate", "--list", "--db", db, "--json"]).stdout)[
            "entries"
        ]
        == []
    )
    good, worse = _write(tmp_path / "good.jsonl", GOOD), _write(tmp_path / "worse.jsonl", WORSE)
    runner.invoke(app, ["calibrate", str(good), "--db", db])
    runner.invoke(app, ["calibrate", str(worse), "--db", db])
    res = runner.invoke(app, ["calibrate", "--list", "--db", db, "--json"])
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert (data["embedder"], data["limit"], data["in_use"]) == ("hashing-512", HISTORY_LIMIT, 1)
    newest, oldest = data["entries"]
    assert (newest["number"], newest["in_use"], newest["source"]) == (2, False, "fit")
    assert (oldest["number"], oldest["in_use"]) == (1, True)
    assert oldest["record"]["certified"] is True and oldest["record"]["auc"] == 1.0
    assert newest["record"]["certified"] is False
    assert "at least 20" in newest["record"]["certified_reason"]
    assert newest["saved_at"] == newest["record"]["fitted_at"]
    res = runner.invoke(app, ["calibrate", "--list", "--db", db])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    first = next(line for line in lines if "#1" in line)
    second = next(line for line in lines if "#2" in line)
    assert first.startswith("*") and not second.startswith("*"), "* marks the record in use"
    assert oldest["record"]["id"] in first and "certified" in first
    assert f"threshold {oldest['record']['threshold']:.3f}" in first
    assert "not certified" in second and "at least 20" in _flat(res.stdout)
    assert "recall calibrate --use N" in res.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["calibrate"], "give QUERIES to fit"),
        (["calibrate", "--list", "--export", "x.json"], "give QUERIES to fit"),
        (["calibrate", "--list", "--use", "1"], "give QUERIES to fit"),
        (["calibrate", "--list", "--replace"], "--replace goes with QUERIES"),
        (["calibrate", "--use", "9"], "no calibration #9"),
        (["calibrate", "--use", "one"], "--use"),
    ],
)
def test_cli_usage_errors_exit_2(db: str, args: list[str], needle: str) -> None:
    res = runner.invoke(app, [*args, "--db", db])
    assert res.exit_code == 2 and needle in res.output and "Traceback" not in res.output


def test_cli_export_and_import_keep_working_with_the_history(tmp_path: Path, db: str) -> None:
    good = _write(tmp_path / "good.jsonl", GOOD)
    assert runner.invoke(app, ["calibrate", str(good), "--db", db]).exit_code == 0
    export = tmp_path / "cal.json"
    assert runner.invoke(app, ["calibrate", "--export", str(export), "--db", db]).exit_code == 0
    record = json.loads(export.read_text())
    assert record["certified"] is True
    record["certified"] = False
    uncertified = tmp_path / "uncertified.json"
    uncertified.write_text(json.dumps(record))
    res = runner.invoke(app, ["calibrate", "--import", str(uncertified), "--db", db])
    assert res.exit_code == 0 and "imported calibration" in res.stdout
    data = json.loads(runner.invoke(app, ["calibrate", "--list", "--db", db, "--json"]).stdout)
    assert [(e["number"], e["source"], e["in_use"]) for e in data["entries"]] == [
        (2, "import", True),
        (1, "fit", False),
    ]
    res = runner.invoke(app, ["calibrate", "--export", str(export), "--db", db])
    assert res.exit_code == 0 and json.loads(export.read_text())["certified"] is False
