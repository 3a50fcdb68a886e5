"""What a search reads back is checked before it is used (SPEC §3, §11): damaged dense codes
and vectors never change an answer silently, and a commit the WAL lost is named by `recall
doctor`. Each case is damage found under attack: before the checks, every one of them answered
differently with exit 0 and a healthy doctor.

File store only: the damage is to the bytes of files recall owns."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app

from .conftest import EXAMPLES, read_snapshot_held
from .onnx_models import build_embedder

runner = CliRunner()
QUERY = "rate limit"


def cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.stdout + res.stderr


def answers(db: Path, embedder: str) -> list[tuple[str, str, float]]:
    with recall.open(db, embedder=embedder) as mem:
        hits = mem.search(QUERY, mode="development").hits
    return [(h.provenance.file, h.verdict, round(h.confidence, 6)) for h in hits]


def doctor(db: Path) -> dict[str, str]:
    with recall.open(db, read_only=True) as mem:
        return {c.name: c.status for c in mem.doctor().checks}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A model whose vectors no code reproduces (every dimension set), as a user's store is."""
    folder = tmp_path_factory.mktemp("model")
    words = sorted(
        {w.lower() for p in EXAMPLES.rglob("*.md") for w in re.findall(r"[A-Za-z]+", p.read_text())}
    )
    build_embedder(folder / "tiny", words, dim=32)
    return f"onnx:{folder / 'tiny'}"


def _indexed(tmp_path: Path, embedder: str) -> Path:
    db = tmp_path / "m.db"
    with recall.open(db, embedder=embedder) as mem:
        assert mem.index(EXAMPLES, calibrate=False).ok
    return db


def _edit(db: Path, sql: str, *args: object) -> None:
    con = sqlite3.connect(db)
    con.execute(sql, args)
    con.commit()
    con.close()


def _slot(db: Path, chunk: int) -> tuple[int, int, bytes]:
    """(vector block row, slot, the block's bytes) of `chunk` in sqlite-vec's storage."""
    con = sqlite3.connect(db)
    block, offset = con.execute(
        "SELECT chunk_id, chunk_offset FROM vec_chunks_rowids WHERE rowid = ?", (chunk,)
    ).fetchone()
    (blob,) = con.execute(
        "SELECT vectors FROM vec_chunks_vector_chunks00 WHERE rowid = ?", (block,)
    ).fetchone()
    con.close()
    return block, offset, bytes(blob)


def _negate_vector(db: Path, chunk: int, dim: int) -> None:
    block, offset, blob = _slot(db, chunk)
    data = bytearray(blob)
    for i in range(dim):  # the sign bit of each float32 (little-endian: the 4th byte)
        data[(offset * dim + i) * 4 + 3] ^= 0x80
    _edit(
        db, "UPDATE vec_chunks_vector_chunks00 SET vectors = ? WHERE rowid = ?", bytes(data), block
    )


def _refused(db: Path, embedder: str, names: str) -> None:
    with pytest.raises(recall.StoreDamagedError) as err:
        answers(db, embedder)
    said = str(err.value)
    assert "dense index" in said and names in said and "--db" in said, said
    code, out = cli("search", QUERY, "--mode", "development", "--db", str(db))
    assert code == 2 and "dense index is damaged" in out and "Traceback" not in out, out


def test_a_model_vector_negated_or_flipped_is_refused_not_answered(
    tmp_path: Path, model: str
) -> None:
    db = _indexed(tmp_path, model)
    assert answers(db, model), "the sound store answers"
    _negate_vector(db, 2, 32)
    _refused(db, model, "(chunks 2)")
    assert doctor(db)["codes"] == "damaged"


def test_a_model_code_damaged_is_coded_again_from_its_vector(tmp_path: Path, model: str) -> None:
    db = _indexed(tmp_path, model)
    sound = answers(db, model)
    _edit(
        db,
        "UPDATE vector_codes SET code = substr(code, 1, 30) || x'5a' || substr(code, 32) "
        "WHERE chunk_id IN (1, 3)",
    )
    assert answers(db, model) == sound
    assert doctor(db)["codes"] == "damaged", "doctor still names the damage"
    # The next index run writes every code whole again.
    with recall.open(db, embedder=model) as mem:
        mem.index(EXAMPLES, calibrate=False)
    assert doctor(db)["codes"] == "damaged", "an unchanged note's code is not rewritten"


def test_a_hashed_code_damaged_or_missing(tmp_path: Path) -> None:
    db = _indexed(tmp_path, "hashing-512")
    sound = answers(db, "hashing-512")
    # A flipped mask byte of a code that is its row: the vector is read and codes it again.
    _edit(
        db,
        "UPDATE vector_codes SET code = CAST(substr(code, 1, 40) || x'ff' || substr(code, 42) "
        "AS BLOB) WHERE chunk_id = 2",
    )
    assert answers(db, "hashing-512") == sound
    # A chunk whose code row is gone would drop out of the dense leg: refused.
    _edit(db, "DELETE FROM vector_codes WHERE chunk_id = 5")
    _refused(db, "hashing-512", "12 chunks but 11 codes")


def test_a_commit_the_wal_lost_is_named_by_doctor(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(notes, calibrate=False).ok
    copies = {}
    with read_snapshot_held(db):
        note = notes / "rate-limits-v2.md"
        note.write_text(note.read_text().replace("rate limit", "quota ceiling"))
        with recall.open(db, embedder="hashing-512") as mem:
            mem.index(notes, calibrate=False)
        wal = Path(f"{db}-wal")
        assert wal.stat().st_size > 0, "the second commit is still in the WAL"
        for name in ("sound", "flipped"):
            folder = tmp_path / name
            folder.mkdir()
            for suffix in ("", "-wal", "-committed"):
                shutil.copy(f"{db}{suffix}", folder / f"m.db{suffix}")
            copies[name] = folder / "m.db"
    flipped = Path(f"{copies['flipped']}-wal")
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x01
    flipped.write_bytes(bytes(data))
    with recall.open(copies["sound"], read_only=True) as mem:
        assert mem.stats().generation == 2
    assert doctor(copies["sound"])["commits"] == "ok"
    # SQLite stops reading the WAL at the damaged frame: the store reads generation 1.
    with recall.open(copies["flipped"], read_only=True) as mem:
        assert mem.stats().generation == 1
    code, out = cli("doctor", "--db", str(copies["flipped"]))
    assert code == 1, out
    out = " ".join(out.split())
    assert "reads generation 1, but generation 2 was committed" in out, out
    assert "redo the lost index runs" in out and "recall index" in out, out


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("embedder_name", "NaN", "the embedder is recorded as 'NaN', which names none"),
        ("generation", "abc", "generation is 'abc', not a whole number"),
        ("vocabularies", "bogus", "vocabularies is 'bogus'"),
        ("last_run_at", "yesterday", "last_run_at is 'yesterday'"),
    ],
)
def test_a_meaningless_meta_value_is_named_by_doctor_and_by_the_read_that_meets_it(
    tmp_path: Path, key: str, value: str, named: str
) -> None:
    db = _indexed(tmp_path, "hashing-512")
    _edit(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", key, value)
    code, out = cli("doctor", "--db", str(db))
    out = " ".join(out.split())
    assert code == 1 and "meta damaged" in out and named in out, out
    if key in ("embedder_name", "generation"):
        # A search cannot go on: one line that names the damage, not a traceback or SQL.
        code, out = cli("search", QUERY, "--mode", "development", "--db", str(db))
        assert code == 2 and "is damaged" in out and "recall doctor" in out, out
        assert "Traceback" not in out and "CREATE" not in out and len(out.splitlines()) <= 2, out


def _doc_id(db: Path, path: str) -> int:
    con = sqlite3.connect(db)
    (found,) = con.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
    con.close()
    return int(found)


def _declarations(db: Path) -> tuple[str, str]:
    with recall.open(db, read_only=True) as mem:
        (check,) = [c for c in mem.doctor().checks if c.name == "declarations"]
    return check.status, " ".join(check.detail.split())


@pytest.mark.parametrize(
    "damage",
    ["forged", "empty key", "lost", "retirement forged"],
)
def test_an_edge_row_no_note_declares_is_named_by_doctor(tmp_path: Path, damage: str) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLES, notes)
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        assert mem.index(notes, calibrate=False).ok
    status, detail = _declarations(db)
    assert status == "ok" and "notes read again declare what the store holds" in detail, detail
    sound = answers(db, "hashing-512")
    v2, oncall = _doc_id(db, "rate-limits-v2.md"), _doc_id(db, "oncall-rotation-2025.md")
    if damage == "forged":  # the on-call note made to retire the current rate limits
        _edit(
            db,
            "INSERT INTO edges(doc_id, raw_ref, key, reversed, vocabulary, line, statement) "
            "VALUES (?, 'rate-limits-v2.md', 'rate-limits-v2', 0, 'frontmatter', 2, "
            "'supersedes: rate-limits-v2.md')",
            oncall,
        )
    elif damage == "empty key":
        _edit(db, "UPDATE edges SET key = '' WHERE doc_id = ?", v2)
    elif damage == "lost":  # v1 is current again: both limits served
        _edit(db, "DELETE FROM edges WHERE doc_id = ?", v2)
    else:
        _edit(
            db,
            "UPDATE documents SET retired_state = 'withdrawn', "
            "retired_vocabulary = 'frontmatter' WHERE id = ?",
            v2,
        )
    assert answers(db, "hashing-512") != sound, "the damage changes answers"
    status, detail = _declarations(db)
    named = "oncall-rotation-2025.md" if damage == "forged" else "rate-limits-v2.md"
    assert status == "damaged" and f"({named})" in detail, detail
    code, out = cli("doctor", "--db", str(db))
    assert code == 1 and "declarations damaged" in " ".join(out.split()), out
    # A note changed since it was indexed is not compared: what it says now is the next run's.
    (notes / "oncall-rotation-2025.md").write_text("# On-call\n\nRewritten.\n")
    (notes / "rate-limits-v2.md").write_text("# Limits\n\nRewritten.\n")
    status, detail = _declarations(db)
    assert status == "ok" and "2 notes changed or gone since they were indexed" in detail, detail
