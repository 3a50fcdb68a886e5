"""Two writers on one store (SPEC §1, §11): neither leg ever loses another writer's commit.
Every index run starts from the committed lexical state of the generation it writes on top of,
whether the other writer is a second handle in this process or another process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recall

from .conftest import write_corpus
from .test_lexical import OpaqueEmbedder


def _lexical_files(mem: recall.Memory, token: str) -> set[str]:
    """Files the lexical leg retrieves for `token` (the opaque dense leg finds nothing); none
    before a first run has kept a note (such a run makes no store)."""
    try:
        res = mem.search(token, k=20, mode="development")
    except recall.TrustRefusal as refusal:
        assert refusal.code == "INDEX_NOT_READY"
        return set()
    return {h.provenance.file for h in res.hits if h.retrieval and h.retrieval.lexical_rank}


def _note(token: str) -> str:
    return f"# Note {token}\n\nThe unique word of this note is {token}.\n"


def test_a_second_handles_commit_survives_the_first_handles_next_run(tmp_path: Path) -> None:
    a_root, b_root = tmp_path / "a", tmp_path / "b"
    write_corpus(a_root, {"a1.md": _note("alphaone")})
    write_corpus(b_root, {"b1.md": _note("bravoone")})
    db = tmp_path / "m.db"
    with (
        recall.open(db, embedder=OpaqueEmbedder()) as a,
        recall.open(db, embedder=OpaqueEmbedder()) as b,
    ):
        a.index(a_root)
        assert _lexical_files(a, "alphaone") == {"a1.md"}  # a loads its lexical index
        b.index(b_root)
        write_corpus(a_root, {"a2.md": _note("alphatwo")})
        a.index(a_root)  # writes on top of b's commit
        for mem in (a, b):
            assert _lexical_files(mem, "bravoone") == {"b1.md"}
            assert _lexical_files(mem, "alphatwo") == {"a2.md"}
    with recall.open(db, embedder=OpaqueEmbedder()) as fresh:
        assert _lexical_files(fresh, "bravoone") == {"b1.md"}, "the saved index holds b's note"
        assert _lexical_files(fresh, "alphatwo") == {"a2.md"}


def test_another_processs_commit_survives(tmp_path: Path) -> None:
    a_root, b_root = tmp_path / "a", tmp_path / "b"
    write_corpus(a_root, {"a1.md": _note("alphaone")})
    write_corpus(b_root, {"b1.md": _note("bravoone")})
    db = tmp_path / "m.db"
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[3])
        import recall
        from tests.test_lexical import OpaqueEmbedder
        with recall.open(sys.argv[1], embedder=OpaqueEmbedder()) as mem:
            mem.index(sys.argv[2])
        """
    )
    repo = str(Path(__file__).resolve().parent.parent)
    with recall.open(db, embedder=OpaqueEmbedder()) as a:
        a.index(a_root)
        assert _lexical_files(a, "alphaone") == {"a1.md"}
        subprocess.run(
            [sys.executable, "-c", script, str(db), str(b_root), repo], check=True, timeout=120
        )
        write_corpus(a_root, {"a2.md": _note("alphatwo")})
        a.index(a_root)
    with recall.open(db, embedder=OpaqueEmbedder()) as fresh:
        assert _lexical_files(fresh, "bravoone") == {"b1.md"}
        assert _lexical_files(fresh, "alphatwo") == {"a2.md"}


# A run: which handle, which root, and the set of notes (by number) that root holds after it.
RUNS = st.lists(
    st.tuples(st.sampled_from([0, 1]), st.sampled_from(["r0", "r1"]), st.sets(st.integers(0, 5))),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(runs=RUNS)
def test_interleaved_runs_keep_the_legs_in_step(tmp_path_factory: object, runs: list) -> None:
    tmp = Path(tmp_path_factory.mktemp("writers"))  # type: ignore[attr-defined]
    db = tmp / "m.db"
    held: dict[str, set[int]] = {"r0": set(), "r1": set()}
    with (
        recall.open(db, embedder=OpaqueEmbedder()) as h0,
        recall.open(db, embedder=OpaqueEmbedder()) as h1,
    ):
        handles = (h0, h1)
        for who, root, notes in runs:
            folder = tmp / root
            folder.mkdir(exist_ok=True)
            for old in folder.glob("*.md"):
                old.unlink()
            write_corpus(folder, {f"{root}-{n}.md": _note(f"tok{root}x{n}") for n in notes})
            handles[who].index(folder, allow_prune=True)
            held[root] = set(notes)
            # Every chunk is findable by its unique token through either handle; no ghost of a
            # removed note remains.
            for mem in handles:
                for r in ("r0", "r1"):
                    for n in range(6):
                        want = {f"{r}-{n}.md"} if n in held[r] else set()
                        assert _lexical_files(mem, f"tok{r}x{n}") == want


def test_a_file_written_whole_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    """SPEC §11: an export (or report) whose path is a symbolic link replaces the link with
    the file; what the link pointed at is left as it was."""
    from recall.writing import write_whole

    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep me")
    export = tmp_path / "calibration.json"
    export.symlink_to(elsewhere)
    write_whole(export, b'{"id": "x"}\n')
    assert elsewhere.read_bytes() == b"keep me"
    assert not export.is_symlink() and export.read_bytes() == b'{"id": "x"}\n'
