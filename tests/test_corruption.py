"""Damaged store files (SPEC §3, §11): seeded copies of a small store, each damaged one way
(bytes overwritten anywhere in the file, bit rot in the saved lexical index, the vector blocks
or the dense codes, a truncation, a damaged header, a damaged embedding journal that the next
run reads, a damaged WAL holding the last commit), are searched, explained, summarised,
diagnosed and re-indexed in a child process. Half the copies are of a store of the hashing
embedder (whose codes are its vectors), half of a model's store (every vector read). Whatever
the damage, the process never panics, aborts, hangs or raises anything but a `RecallError`;
what fails with a store error says the file is damaged or not a store, and names `recall
doctor` or what to do. And no damage changes an answer silently: a search that answers
differently from the sound copy, with exit 0, while doctor calls the store healthy, fails.

File store only: the damage is to the bytes of a file recall owns; a PostgreSQL server's
storage is the server's to keep whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import recall

from .conftest import EXAMPLES, read_snapshot_held
from .onnx_models import build_embedder

CASES = int(os.environ.get("RECALL_CORRUPTION_CASES", "240"))
KINDS = ("bytes", "lexical", "vectors", "truncate", "header", "codes", "journal", "wal")
TIMEOUT_S = 30
RECALL = Path(sys.executable).parent / "recall"

# One child per damaged copy runs every operation through the public API and prints what
# each one did: "ok", or the class of the RecallError and its message. Anything else (another
# exception, a panic, an abort) fails the test.
CHILD = r"""
import json, sys, traceback
import recall
db, notes, embedder, first = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
out = {}
def attempt(name, call):
    try:
        value = call()
        out[name] = ["ok", value]
    except recall.RecallError as err:
        out[name] = [type(err).__name__, str(err)]
    except BaseException as err:
        out[name] = ["BUG", "".join(traceback.format_exception(err))]
def search():
    with recall.open(db, embedder=embedder) as mem:
        hits = mem.search("rate limit", mode="development").hits
        return sorted((h.provenance.file, h.verdict, round(h.confidence, 6)) for h in hits)
def explain():
    with recall.open(db, embedder=embedder) as mem:
        return bool(mem.explain("rate limit", "rate-limits-v2.md"))
def stats():
    with recall.open(db) as mem:
        return mem.stats().documents
def doctor():
    with recall.open(db, read_only=True) as mem:
        return mem.doctor().verdict
def index():
    with recall.open(db, embedder=embedder) as mem:
        return mem.index(notes, calibrate=False).ok
calls = [("search", search), ("explain", explain), ("stats", stats), ("doctor", doctor),
         ("index", index)]
if first == "index":  # a journal beside no store: the run that reads it comes first
    calls = [("first index", index)] + calls
for name, call in calls:
    attempt(name, call)
print(json.dumps(out))
"""


def _flip(path: Path, rng: random.Random, start: int = 0) -> str:
    """Overwrite or invert 1-8 bytes of the file at `path` from `start` on."""
    data = bytearray(path.read_bytes())
    spots = sorted(rng.randrange(start, len(data)) for _ in range(rng.randint(1, 8)))
    for at in spots:
        data[at] = rng.randrange(256) if rng.random() < 0.5 else data[at] ^ 0xFF
    path.write_bytes(bytes(data))
    return f"bytes {spots} of {len(data)}"


def _damage(db: Path, kind: str, rng: random.Random) -> str:
    """Damage `db` (or, for `journal` and `wal`, the file of that name beside it) one way;
    returns what was done."""
    if kind == "journal":
        # Past the header line: a damaged header is another format's, discarded whole.
        journal = Path(f"{db}-embeddings")
        return "journal: " + _flip(journal, rng, journal.read_bytes().index(b"\n") + 1)
    if kind == "wal":
        return "wal: " + _flip(Path(f"{db}-wal"), rng)
    if kind in ("lexical", "vectors", "codes"):
        con = sqlite3.connect(db)
        if kind == "lexical":
            rows = con.execute("SELECT rowid, name FROM lexical_files").fetchall()
            table, column = "lexical_files", "data"
        elif kind == "codes":
            rows = con.execute("SELECT chunk_id, chunk_id FROM vector_codes").fetchall()
            table, column = "vector_codes", "code"
        else:
            table = next(
                name
                for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if name.startswith("vec_chunks_vector_chunks")
            )
            rows = con.execute(f"SELECT rowid, rowid FROM {table}").fetchall()
            column = "vectors"
        rowid, name = rng.choice(rows)
        where = "chunk_id" if kind == "codes" else "rowid"
        (blob,) = con.execute(
            f"SELECT {column} FROM {table} WHERE {where} = ?", (rowid,)
        ).fetchone()
        data = bytearray(blob)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256) if rng.random() < 0.5 else data[at] ^ 0xFF
        con.execute(f"UPDATE {table} SET {column} = ? WHERE {where} = ?", (bytes(data), rowid))
        con.commit()
        con.close()
        return f"{kind}: {name}"
    raw = bytearray(db.read_bytes())
    if kind == "truncate":
        keep = rng.randrange(len(raw))
        db.write_bytes(bytes(raw[:keep]))
        return f"truncated to {keep} of {len(raw)} bytes"
    if kind == "header":
        start, length = rng.randrange(100), rng.randint(1, 16)
    else:
        start, length = rng.randrange(len(raw)), rng.randint(1, 512)
    for i in range(start, min(start + length, len(raw))):
        raw[i] = rng.randrange(256)
    db.write_bytes(bytes(raw))
    return f"{kind}: {length} bytes at {start}"


@dataclass(frozen=True)
class Sound:
    """One embedder's sound files, and what a search of each answers."""

    embedder: str
    db: Path
    notes: Path
    #: The journal a run stopped after embedding left (no store beside it).
    journal: Path
    #: A store whose last commit (an edit of a note, in `edited`) is still in its WAL.
    wal: Path
    edited: Path
    answers: dict[str, object] = field(default_factory=dict)


def _stop_after_embedding(done: int, total: int, embedded: int) -> None:
    if embedded:
        raise KeyboardInterrupt


def _sound(folder: Path, embedder: str) -> Sound:
    notes = folder / "notes"
    shutil.copytree(EXAMPLES, notes)
    db = folder / "m.db"
    with recall.open(db, embedder=embedder) as mem:
        assert mem.index(notes, calibrate=False).ok
    stopped = folder / "stopped" / "m.db"
    stopped.parent.mkdir()
    with recall.open(stopped, embedder=embedder) as mem, contextlib.suppress(KeyboardInterrupt):
        mem.index(notes, calibrate=False, progress=_stop_after_embedding)
    journal = Path(f"{stopped}-embeddings")
    assert journal.exists() and not stopped.exists()
    edited = folder / "edited"
    shutil.copytree(notes, edited)
    wal = folder / "wal" / "m.db"
    wal.parent.mkdir()
    live = folder / "live.db"
    with recall.open(live, embedder=embedder) as mem:
        assert mem.index(edited, calibrate=False).ok
    with read_snapshot_held(live):
        note = edited / "rate-limits-v2.md"
        note.write_text(note.read_text().replace("rate limit", "quota ceiling"))
        with recall.open(live, embedder=embedder) as mem:
            assert mem.index(edited, calibrate=False).ok
        for suffix in ("", "-wal", "-committed"):
            shutil.copy(f"{live}{suffix}", f"{wal}{suffix}")
    assert Path(f"{wal}-wal").stat().st_size > 0
    return Sound(embedder, db, notes, journal, wal, edited)


@pytest.fixture(scope="module")
def sounds(tmp_path_factory: pytest.TempPathFactory) -> list[Sound]:
    folder = tmp_path_factory.mktemp("model")
    words = {
        w.lower() for p in EXAMPLES.rglob("*.md") for w in re.findall(r"[A-Za-z]+", p.read_text())
    }
    build_embedder(folder / "tiny", sorted(words), dim=32)
    made = [
        _sound(tmp_path_factory.mktemp("hashed"), "hashing-512"),
        _sound(tmp_path_factory.mktemp("modelled"), f"onnx:{folder / 'tiny'}"),
    ]
    for sound in made:
        for kind in KINDS:
            work = tmp_path_factory.mktemp("undamaged")
            _, results = _case(sound, kind, work / "c.db", work / "n", lambda _: "")
            assert results["search"][0] == "ok", (kind, results)
            sound.answers[kind] = results["search"][1]
    return made


def _case(
    sound: Sound, kind: str, copy: Path, folder: Path, damage: Callable[[Path], str]
) -> tuple[str, dict[str, list[object]]]:
    """Copy what `kind` damages, damage it, and run every operation on it in a child."""
    first = "search"
    if kind == "journal":
        shutil.copy(sound.journal, f"{copy}-embeddings")
        first = "index"
    elif kind == "wal":
        for suffix in ("", "-wal", "-committed"):
            shutil.copy(f"{sound.wal}{suffix}", f"{copy}{suffix}")
    else:
        shutil.copy(sound.db, copy)
    done = damage(copy)
    shutil.copytree(sound.edited if kind == "wal" else sound.notes, folder)
    try:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(copy), str(folder), sound.embedder, first],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return done, {"process": ["HANG", f"no answer in {TIMEOUT_S} s"]}
    if child.returncode != 0 or not child.stdout.strip():
        return done, {"process": ["CRASH", f"exit {child.returncode}: {child.stderr[-2000:]}"]}
    results: dict[str, list[object]] = json.loads(child.stdout.strip().splitlines()[-1])
    if "panicked" in child.stderr or "Traceback" in child.stderr:
        results["stderr"] = ["BUG", child.stderr[-2000:]]
    return done, results


def _run(case: int, sounds: list[Sound], work: Path) -> tuple[str, dict[str, list[object]]]:
    rng = random.Random(case)
    kind = KINDS[case % len(KINDS)]
    sound = sounds[case // len(KINDS) % len(sounds)]
    copy = work / f"c{case}.db"
    done, results = _case(
        sound,
        kind,
        copy,
        work / f"n{case}",
        lambda copy: f"case {case}, {sound.embedder.split(':')[0]}, " + _damage(copy, kind, rng),
    )
    search, doctor = results.get("search"), results.get("doctor")
    if (
        search
        and search[0] == "ok"
        and search[1] != sound.answers[kind]
        and doctor == ["ok", "healthy"]
    ):
        results["silent"] = ["SILENT", f"answered {search[1]}, sound {sound.answers[kind]}"]
    if case % 8 == 0:
        # The command line on the same copy: an exit code of the README's table, no traceback.
        for args in (["doctor"], ["search", "rate limit", "--mode", "development"]):
            cli = subprocess.run(
                [str(RECALL), *args, "--db", str(copy)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
            said = cli.stdout + cli.stderr
            if cli.returncode not in (0, 1, 2) or "Traceback" in said or "panicked" in said:
                results[f"cli {args[0]}"] = ["BUG", f"exit {cli.returncode}: {said[-2000:]}"]
    return done, results


def test_no_damaged_copy_crashes_hangs_raises_outside_the_hierarchy_or_answers_silently(
    sounds: list[Sound], tmp_path: Path
) -> None:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        runs = list(pool.map(lambda case: _run(case, sounds, tmp_path), range(CASES)))
    bad = [
        f"{done}: {op} -> {outcome[0]}: {outcome[1]}"
        for done, results in runs
        for op, outcome in results.items()
        if outcome[0] in ("BUG", "CRASH", "HANG", "SILENT")
    ]
    assert not bad, f"{len(bad)} failures, first: " + "\n".join(bad[:3])
    # What fails, fails as a store error that says what happened and what to do.
    for done, results in runs:
        for op, (outcome, detail) in results.items():
            if outcome == "ok" or op == "silent":
                continue
            assert outcome in ("StoreError", "StoreDamagedError"), (done, op, outcome, detail)
            text = str(detail)
            assert any(
                hint in text for hint in ("recall doctor", "not a recall store", "damaged")
            ), (done, op, text)
    # The damage reached every kind of case, and some of it was found.
    failed = sum(1 for _, results in runs if any(o[0] != "ok" for o in results.values()))
    assert failed > 0
