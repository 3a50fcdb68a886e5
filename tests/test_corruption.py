"""Damaged store files (SPEC §11): seeded copies of a small store, each damaged one way (bytes
overwritten anywhere in the file, bit rot in the saved lexical index or the vector blocks, a
truncation, a damaged header), are searched, explained, summarised, diagnosed and re-indexed
in a child process. Whatever the damage, the process never panics, aborts, hangs or raises
anything but a `RecallError`; what fails with a store error says the file is damaged or not a
store, and names `recall doctor` or what to do.

File store only: the damage is to the bytes of a file recall owns; a PostgreSQL server's
storage is the server's to keep whole.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import recall

from .conftest import EXAMPLES

CASES = int(os.environ.get("RECALL_CORRUPTION_CASES", "240"))
KINDS = ("bytes", "lexical", "vectors", "truncate", "header")
TIMEOUT_S = 30
RECALL = Path(sys.executable).parent / "recall"

# One child per damaged copy runs every operation through the public API and prints what
# each one did: "ok", or the class of the RecallError and its message. Anything else (another
# exception, a panic, an abort) fails the test.
CHILD = r"""
import json, sys, traceback
import recall
db, notes = sys.argv[1], sys.argv[2]
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
    with recall.open(db, embedder="hashing-512") as mem:
        return sorted(h.provenance.file for h in mem.search("rate limit", mode="development").hits)
def explain():
    with recall.open(db, embedder="hashing-512") as mem:
        return bool(mem.explain("rate limit", "rate-limits-v2.md"))
def stats():
    with recall.open(db) as mem:
        return mem.stats().documents
def doctor():
    with recall.open(db, read_only=True) as mem:
        return mem.doctor().verdict
def index():
    with recall.open(db, embedder="hashing-512") as mem:
        return mem.index(notes, calibrate=False).ok
for name, call in [("search", search), ("explain", explain), ("stats", stats),
                   ("doctor", doctor), ("index", index)]:
    attempt(name, call)
print(json.dumps(out))
"""


def _damage(db: Path, kind: str, rng: random.Random) -> str:
    """Damage `db` one way; returns what was done."""
    if kind in ("lexical", "vectors"):
        con = sqlite3.connect(db)
        if kind == "lexical":
            rows = con.execute("SELECT rowid, name FROM lexical_files").fetchall()
            table, column = "lexical_files", "data"
        else:
            table = next(
                name
                for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if name.startswith("vec_chunks_vector_chunks")
            )
            rows = con.execute(f"SELECT rowid, rowid FROM {table}").fetchall()
            column = "vectors"
        rowid, name = rng.choice(rows)
        (blob,) = con.execute(f"SELECT {column} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        data = bytearray(blob)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256) if rng.random() < 0.5 else data[at] ^ 0xFF
        con.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (bytes(data), rowid))
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


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("sound")
    notes = folder / "notes"
    shutil.copytree(EXAMPLES, notes)
    db = folder / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(notes, calibrate=False).ok
    return db, notes


def _run(case: int, sound: tuple[Path, Path], work: Path) -> tuple[str, dict[str, list[object]]]:
    db, notes = sound
    rng = random.Random(case)
    copy = work / f"c{case}.db"
    shutil.copy(db, copy)
    done = f"case {case}, " + _damage(copy, KINDS[case % len(KINDS)], rng)
    folder = work / f"n{case}"
    shutil.copytree(notes, folder)
    try:
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(copy), str(folder)],
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


def test_no_damaged_copy_crashes_hangs_or_raises_outside_the_hierarchy(
    sound: tuple[Path, Path], tmp_path: Path
) -> None:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        runs = list(pool.map(lambda case: _run(case, sound, tmp_path), range(CASES)))
    bad = [
        f"{done}: {op} -> {outcome[0]}: {outcome[1]}"
        for done, results in runs
        for op, outcome in results.items()
        if outcome[0] in ("BUG", "CRASH", "HANG")
    ]
    assert not bad, f"{len(bad)} failures, first: " + "\n".join(bad[:3])
    # What fails, fails as a store error that says what happened and what to do.
    for done, results in runs:
        for op, (outcome, detail) in results.items():
            if outcome == "ok":
                continue
            assert outcome in ("StoreError", "StoreDamagedError"), (done, op, outcome, detail)
            text = str(detail)
            assert any(
                hint in text for hint in ("recall doctor", "not a recall store", "damaged")
            ), (done, op, text)
    # The damage reached every kind of case, and some of it was found.
    failed = sum(1 for _, results in runs if any(o[0] != "ok" for o in results.values()))
    assert failed > 0
