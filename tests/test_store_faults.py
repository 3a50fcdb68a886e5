"""The store file under faults (SPEC §1, §11): other applications' files are never written,
failed first runs leave nothing behind, read-only stores answer reads, and damage is found and
explained by `recall doctor`.

File store only: the faults of a file (other applications' files, permissions, a full disk,
damaged bytes). A server's faults (a lost server, a read-only role) are in `test_postgres.py`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app

from .conftest import EXAMPLES
from .test_fault_files import _without_permission_bypass

runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.stdout + res.stderr


def indexed(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(EXAMPLES).ok
    return db


def leftovers(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name))


@pytest.mark.parametrize("command", ["stats", "search", "index", "doctor"])
def test_another_applications_database_is_left_byte_identical(tmp_path: Path, command: str) -> None:
    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
    con.execute("INSERT INTO invoices VALUES (1, 12.5)")
    con.commit()
    con.close()
    before = db.read_bytes()
    args = {
        "stats": ["stats"],
        "search": ["search", "rate limit", "--mode", "development"],
        "index": ["index", str(EXAMPLES), "--embedder", "hashing-512"],
        "doctor": ["doctor"],
    }[command]
    code, out = cli(*args, "--db", str(db))
    assert code != 0
    assert "not a recall store" in out and "invoices" in out, out
    assert db.read_bytes() == before
    assert leftovers(db) == ["app.db"]


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# My notes\n\nNot a database.\n" * 50, encoding="utf-8")
    before = notes.read_bytes()
    code, out = cli("stats", "--db", str(notes))
    assert code != 0 and "not an SQLite database" in out, out
    assert notes.read_bytes() == before


def test_reads_never_create_a_store(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with recall.open(db) as mem:
        assert mem.stats().documents == 0
        with pytest.raises(recall.TrustRefusal) as err:
            mem.search("anything")
        assert err.value.code == "INDEX_NOT_READY"
    code, _ = cli("search", "anything", "--db", str(db))
    assert code != 0
    assert not db.exists() and leftovers(db) == []


def test_a_failed_first_run_leaves_no_store(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    code, out = cli("index", str(tmp_path / "no-such-notes"), "--db", str(db))
    assert code == 2, out
    code, out = cli("index", str(EXAMPLES), "--db", str(db), "--embedder", "bert")
    assert code == 2, out
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.md").symlink_to(bad / "x.md")  # a loop: refused, as an unreadable file is
    code, out = cli("index", str(bad), "--db", str(db), "--embedder", "hashing-512")
    assert code == 1, out
    assert leftovers(db) == []
    # A run that keeps something makes the store.
    code, _ = cli("index", str(EXAMPLES), "--db", str(db), "--embedder", "hashing-512")
    assert code == 0 and db.exists()


def test_read_only_store_answers_reads_and_refuses_writes(tmp_path: Path) -> None:
    db = indexed(tmp_path)
    before = db.read_bytes()
    with recall.open(db, read_only=True) as mem:
        assert mem.read_only == "asked for"
        assert mem.search("rate limit", mode="development").hits
        assert mem.stats().documents == 10
        with pytest.raises(recall.StoreError, match="read-only.*cp "):
            mem.index(EXAMPLES)
    assert db.read_bytes() == before


def test_immutable_file_is_opened_read_only(tmp_path: Path) -> None:
    db = indexed(tmp_path)
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        code, out = cli("search", "rate limit", "--db", str(db), "--mode", "development")
        assert code == 0, out
        code, out = cli("stats", "--db", str(db), "--json")
        assert code == 0 and json.loads(out)["documents"] == 10, out
        code, out = cli("index", str(EXAMPLES), "--db", str(db))
        assert code != 0 and "read-only" in out, out
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)


def test_store_on_a_read_only_folder_of_another_owner(tmp_path: Path) -> None:
    """No write access to the file or its folder, so not even SQLite's shared-memory file can be
    made: searches still answer, from the file as it is."""
    prefix = _without_permission_bypass(tmp_path)
    if prefix is None:
        pytest.skip("no way to run without the permission bypass here")
    folder = tmp_path / "ro"
    folder.mkdir()
    db = indexed(folder)
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    made = sorted(p.name for p in folder.iterdir())
    assert made == ["m.db", "m.db-committed"], "the store and the record of its commit"
    db.chmod(0o444)
    folder.chmod(0o555)
    env = {**os.environ, "RECALL_EMBEDDER": "hashing-512"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*prefix, sys.executable, "-m", "recall.cli", *args, "--db", str(db)]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    try:
        found = run("search", "rate limit", "--mode", "development", "--json")
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"]
        assert run("stats").returncode == 0
        refused = run("index", str(notes))
        assert refused.returncode != 0 and "read-only" in refused.stderr, refused.stderr
        assert sorted(p.name for p in folder.iterdir()) == made
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)


def test_doctor_on_a_sound_store(tmp_path: Path) -> None:
    db = indexed(tmp_path)
    code, out = cli("doctor", "--db", str(db), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["verdict"] == "healthy"
    assert [c["name"] for c in report["checks"]] == [
        "sqlite",
        "schema",
        "rows",
        "vectors",
        "codes",
        "lists",
        "lexical",
        "commits",
        "meta",
        "declarations",
        "calibration",
        "roots",
    ]
    assert {c["status"] for c in report["checks"]} == {"ok"}


def test_garbage_in_the_middle_is_found_and_explained(tmp_path: Path) -> None:
    db = indexed(tmp_path)
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = os.urandom(4096)
    db.write_bytes(bytes(data))
    code, out = cli("doctor", "--db", str(db))
    assert code == 1, out
    assert "damaged" in out and "recall index" in out and "NEW.db" in out
    report = json.loads(cli("doctor", "--db", str(db), "--json")[1])
    assert report["verdict"] == "damaged"
    assert report["checks"][0] == {
        "name": "sqlite",
        "status": "damaged",
        "detail": report["checks"][0]["detail"],
    }
    # Wherever the damage surfaces as SQLite's "malformed", the message names the doctor.
    code, out = cli("search", "rate limit", "--db", str(db), "--mode", "development")
    if code != 0 and "malformed" in out:
        assert "recall doctor" in out, out


def _damage_lexical(db: Path, seed: int) -> str:
    """Flip bits inside one saved Tantivy file (its checksummed body, not the footer) with the
    host's sqlite3, as bit rot would; returns the file's name."""
    import random

    rng = random.Random(seed)
    con = sqlite3.connect(db)
    names = sorted(
        n for (n,) in con.execute("SELECT name FROM lexical_files") if not n.endswith(".json")
    )
    name = names[seed % len(names)]
    (data,) = con.execute("SELECT data FROM lexical_files WHERE name = ?", (name,)).fetchone()
    body = bytearray(data)
    for _ in range(1 + seed % 3):
        body[rng.randrange(max(1, len(body) - 40))] ^= 1 << rng.randrange(8)
    con.execute("UPDATE lexical_files SET data = ? WHERE name = ?", (bytes(body), name))
    con.commit()
    con.close()
    return name


@pytest.mark.parametrize("seed", range(8))
def test_bit_rot_in_the_lexical_index_is_found_answered_around_and_repaired(
    tmp_path: Path, seed: int
) -> None:
    """Damage inside the saved lexical index never reaches the user as a panic: searches
    answer as on the sound store (the index is rebuilt from the chunk rows in memory), doctor
    names the damage and the way out, and the next index run saves it whole."""
    db = indexed(tmp_path)
    with recall.open(db, embedder="hashing-512") as mem:
        want = [h.provenance.file for h in mem.search("rate limit", mode="development").hits]
    name = _damage_lexical(db, seed)
    with recall.open(db, embedder="hashing-512") as mem:
        for _ in range(2):  # the handle stays usable
            got = [h.provenance.file for h in mem.search("rate limit", mode="development").hits]
            assert got == want
    code, out = cli("doctor", "--db", str(db))
    assert code == 1 and "lexical" in out and "damaged" in out, out
    assert "recall index NOTES" in out and "new store file" not in out, out
    assert name.split(".")[0] in out or "lists" in out or "could not read" in out, out
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(EXAMPLES).ok
    code, out = cli("doctor", "--db", str(db))
    assert code == 0 and "healthy" in out, out


def test_a_damaged_segment_count_is_found_before_tantivy_reads_it(tmp_path: Path) -> None:
    """A segment count that disagrees with the chunk rows (as a bad copy of meta.json would
    leave; 4294967295 once made doctor allocate 32 GiB, 0 made the merge thread abort) is
    damage doctor names, and searches answer around it."""
    db = indexed(tmp_path)
    con = sqlite3.connect(db)
    (meta,) = con.execute("SELECT data FROM lexical_files WHERE name = 'meta.json'").fetchone()
    parsed = json.loads(meta)
    for bad in (4294967295, 0):
        for segment in parsed["segments"]:
            segment["max_doc"] = bad
        con.execute(
            "UPDATE lexical_files SET data = ? WHERE name = 'meta.json'",
            (json.dumps(parsed).encode(),),
        )
        con.commit()
        code, out = cli("doctor", "--db", str(db))
        assert code == 1 and "a segment lists" in " ".join(out.split()), out
        code, out = cli("search", "rate limit", "--mode", "development", "--db", str(db))
        assert code == 0 and "Traceback" not in out and "panicked" not in out, out
    con.close()


@pytest.mark.parametrize("damage", ["truncated", "header"])
def test_doctor_diagnoses_a_file_sqlite_cannot_open(tmp_path: Path, damage: str) -> None:
    """A truncated file or a damaged header: doctor says which, with the way out (exit 1),
    where it failed with SQLite's "database disk image is malformed" (exit 2)."""
    db = indexed(tmp_path)
    kept = calibrated(db)
    raw = db.read_bytes()
    db.write_bytes(raw[: len(raw) // 3] if damage == "truncated" else b"\0" * 100 + raw[100:])
    code, out = cli("doctor", "--db", str(db))
    flat = " ".join(out.split())
    assert code == 1, out
    assert (
        "the file is truncated" if damage == "truncated" else "SQLite header is damaged"
    ) in flat
    assert "recall index NOTES... --db NEW.db" in flat
    # Doctor's own report does not send the user back to doctor.
    assert "run 'recall doctor" not in flat
    code, out = cli("search", "rate limit", "--db", str(db), "--mode", "development")
    assert code == 2 and f"recall doctor --db {db}" in " ".join(out.split()), out
    _the_calibration_is_rescued(tmp_path, db, kept, flat)


def calibrated(db: Path) -> dict[str, object]:
    """Put a calibration record in use in the store at `db` (the example notes are too few
    to calibrate themselves) and return it as exported."""
    with recall.open(db) as mem:
        mem.import_calibration(
            {
                "id": "kept-1",
                "embedder": mem.embedder.name,
                "fingerprint": mem.embedder.fingerprint,
                "threshold": 0.21,
                "scale": 0.04,
                "certified": True,
            }
        )
        return mem.export_calibration()


def _the_calibration_is_rescued(tmp_path: Path, db: Path, kept: dict[str, object], report: str):
    """What doctor says can be read from the damaged file's bytes is what `calibrate --export`
    writes, and it imports into a store rebuilt from the notes."""
    assert f"calibration {kept['id']} (threshold {kept['threshold']}) read from" in report
    assert f"recall calibrate --export calibration.json --db {db}" in report
    export = tmp_path / "rescued.json"
    code, out = cli("calibrate", "--export", str(export), "--db", str(db), "--json")
    assert code == 0, out
    assert json.loads(export.read_text()) == kept == json.loads(out)["calibration"]
    assert "read from the bytes" in json.loads(out)["salvaged"]
    with recall.open(tmp_path / "new.db", embedder="hashing-512") as mem:
        mem.index(EXAMPLES)
        assert mem.import_calibration(export).id == kept["id"]


def test_with_no_record_readable_the_calibration_is_said_lost(tmp_path: Path) -> None:
    db = indexed(tmp_path)  # no record in it
    db.write_bytes(b"\0" * 100 + db.read_bytes()[100:])
    code, out = cli("doctor", "--db", str(db))
    flat = " ".join(out.split())
    assert code == 1 and "no record can be read from its bytes" in flat, out
    assert "calibrate --export" not in flat
    code, out = cli("calibrate", "--export", str(tmp_path / "c.json"), "--db", str(db))
    assert code == 2 and "no calibration record could be read" in " ".join(out.split()), out
    assert not (tmp_path / "c.json").exists()


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs, mounted for the test and unmounted after (skipped where this process may
    not mount one)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path) -> None:
    with open(folder / "fill", "wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\\0" * 65536)
            out.flush()


def test_a_full_disk_keeps_reads_working_and_writes_fail_clearly(
    tmp_path: Path, full_disk: Path
) -> None:
    db = full_disk / "m.db"
    shutil.copy(indexed(tmp_path), db)
    _fill(full_disk)
    code, out = cli("search", "rate limit", "--db", str(db), "--mode", "development", "--json")
    assert code == 0 and json.loads(out)["hits"], out
    code, out = cli("stats", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["documents"] > 0, out
    code, out = cli("index", str(EXAMPLES), "--db", str(db))
    flat = " ".join(out.split())
    assert code == 2 and "disk is probably full" in flat and "Traceback" not in out, out
    export = full_disk / "calibration.json"
    code, out = cli("calibrate", "--export", str(export), "--db", str(db))
    assert code != 0 and not export.exists(), out
    assert not [p.name for p in full_disk.iterdir() if p.name.endswith(".tmp")]


def test_a_migration_leaves_no_destination_until_it_is_whole(tmp_path: Path) -> None:
    """The copy is written under a hidden name and renamed once committed and closed: a kill
    at any point before leaves no half-filled store where the destination was named."""
    from recall.migrate import migrate

    source = indexed(tmp_path)
    destination = tmp_path / "copy.db"
    seen: list[bool] = []
    report = migrate(
        str(source), str(destination), progress=lambda d, c: seen.append(destination.exists())
    )
    assert seen and not any(seen) and destination.exists()
    assert report.destination == str(destination) and report.documents > 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    with recall.open(destination) as mem:
        assert mem.stats().documents == report.documents


def _killed(script: str) -> None:
    """Run `script` in a process that ends by SIGKILL (what `kill -9` does)."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()


def test_a_killed_migration_leaves_no_destination_and_the_next_one_sweeps_its_files(
    tmp_path: Path,
) -> None:
    source = indexed(tmp_path)
    destination = tmp_path / "copy.db"
    _killed(
        "import os, signal\n"
        "from recall.migrate import migrate\n"
        f"migrate({str(source)!r}, {str(destination)!r},\n"
        "        progress=lambda d, c: os.kill(os.getpid(), signal.SIGKILL))\n"
    )
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".copy.db."))
    assert left and not destination.exists(), left
    from recall.migrate import migrate

    assert migrate(str(source), str(destination)).documents > 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_killed_writers_temporary_file_is_swept_by_the_next_write_of_that_name(
    tmp_path: Path,
) -> None:
    from recall.writing import temporary, write_whole

    _killed(
        "import os, signal\n"
        "from recall.writing import temporary\n"
        f"for name in ('report.md', 'other.md'):\n"
        f"    open(os.path.join({str(tmp_path)!r}, temporary(name)), 'w').write('half')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    mine = tmp_path / temporary("report.md")  # a writer still running: left alone
    mine.write_text("mine")
    write_whole(tmp_path / "report.md", b"whole\n")
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert mine.name in hidden and len(hidden) == 2, hidden  # and other.md's, not swept
    assert any(".other.md." in name for name in hidden)
    assert (tmp_path / "report.md").read_text() == "whole\n"


def test_a_damaged_dimension_record_is_named_as_damage(tmp_path: Path) -> None:
    """The store's record of its embedder says another dimension than the embedder makes: the
    metadata is damaged, not a search with another embedder ("built with hashing-512, the
    query would be embedded with hashing-512")."""
    db = indexed(tmp_path)
    kept = calibrated(db)
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '384' WHERE key = 'embedder_dim'")
    con.commit()
    con.close()
    said = "the metadata is damaged: it records 384 dimensions for hashing-512, its vector table"
    for command in (
        ["search", "rate limit", "--mode", "development"],
        ["index", str(EXAMPLES)],
        ["stats"],
    ):
        code, out = cli(*command, "--db", str(db))
        flat = " ".join(out.split())
        assert code == 2 and said in flat and f"recall doctor --db {db}" in flat, (command, out)
    code, out = cli("doctor", "--db", str(db))
    flat = " ".join(out.split())
    assert code == 1 and said in flat, out
    _the_calibration_is_rescued(tmp_path, db, kept, flat)


def test_salvage_takes_the_newest_valid_copy_and_skips_the_rest(tmp_path: Path) -> None:
    from recall.salvage import salvage_calibration

    def record(rid: str, fitted_at: str, fingerprint: str = "ab12cd34ef56ab78") -> bytes:
        data = {"id": rid, "embedder": "hashing-512", "fingerprint": fingerprint}
        data |= {"threshold": 0.3, "scale": 0.05, "certified": True, "fitted_at": fitted_at}
        return f"calibration:ab12cd34ef56ab78{json.dumps(data)}".encode()

    path = tmp_path / "m.db"
    path.write_bytes(
        b"\x00junk"
        + record("old", "2026-01-01T00:00:00Z")
        + b"\x13\x00"
        + record("newest", "2026-03-01T00:00:00Z")
        + b'calibration:ab12cd34ef56ab78{"id": "cut off'
        + record("elsewhere", "2026-09-01T00:00:00Z", fingerprint="0000000000000000")
    )
    found = salvage_calibration(str(path))
    assert found is not None and found.record["id"] == "newest" and found.copies == 2
    (tmp_path / "m.db-wal").write_bytes(record("logged", "2026-03-01T00:00:00Z"))
    found = salvage_calibration(str(path))
    assert found is not None and found.record["id"] == "logged" and found.found_in == "m.db-wal"
    assert salvage_calibration(str(tmp_path / "absent.db")) is None
