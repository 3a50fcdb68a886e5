"""The real `recall` entry point: exit codes (SPEC §8.2) and `--json` output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall.cli import app

from .conftest import EXAMPLES, write_corpus

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_index_and_stats_json(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = run("index", str(EXAMPLES), "--db", db, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] and len(report["added"]) == 10 and report["db"] == db
    code, out, _ = run("stats", "--db", db, "--json")
    assert code == 0
    stats = json.loads(out)
    assert stats["documents"] == 10 and stats["chunks"] == stats["vectors"]
    assert (stats["edges_resolved"], stats["edges_dangling"], stats["edges_ambiguous"]) == (1, 1, 1)


def test_human_output(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = run("index", str(EXAMPLES), "--db", db)
    assert code == 0 and "added 10" in out and "skipped 0" in out
    code, out, _ = run("stats", "--db", db)
    assert code == 0 and "documents" in out and "hashing-512" in out
    assert "1 resolved · 1 dangling · 1 ambiguous" in out


def test_refusal_exits_1_and_names_the_file(tmp_path: Path, corpus: Path) -> None:
    write_corpus(corpus, {"ok.md": "# ok\n", "bad.md": "---\nvalid_from: 01/02/2026\n---\nx\n"})
    code, out, _ = run("index", str(corpus), "--db", str(tmp_path / "m.db"))
    assert code == 1
    assert "bad.md" in out and "valid_from" in out and "01/02/2026" in out
    code, out, _ = run("index", str(corpus), "--db", str(tmp_path / "m2.db"), "--json")
    assert code == 1 and json.loads(out)["refused"][0]["path"] == "bad.md"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["index", "/no/such/folder"], "does not exist"),
        (["index", str(EXAMPLES), "--embedder", "nope"], "unknown embedder"),
        (["stats"], "run 'recall index PATH' first"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    code, _, err = run(*args, "--db", str(tmp_path / "m.db"))
    assert code == 2 and needle in err


def test_prune_refusal_exits_2(tmp_path: Path, corpus: Path) -> None:
    db = str(tmp_path / "m.db")
    write_corpus(corpus, {f"n{i}.md": f"# n{i}\n" for i in range(6)})
    assert run("index", str(corpus), "--db", db)[0] == 0
    for i in range(5):
        (corpus / f"n{i}.md").unlink()
    code, _, err = run("index", str(corpus), "--db", db)
    assert code == 2 and "--allow-prune" in err
    code, out, _ = run("index", str(corpus), "--db", db, "--allow-prune", "--json")
    assert code == 0 and len(json.loads(out)["removed"]) == 5


def test_lineage_mismatch_exits_2(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert run("index", str(EXAMPLES), "--db", db, "--embedder", "hashing-64")[0] == 0
    code, _, err = run("index", str(EXAMPLES), "--db", db, "--embedder", "hashing-128")
    assert code == 2 and "hashing-64" in err and "--embedder" in err


def test_db_from_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    code, _, _ = run("index", str(EXAMPLES), "--json", env={"RECALL_DB": str(db)})
    assert code == 0 and db.exists()


def test_cold_search_path_leaves_out_numpy_and_the_model_loaders(tmp_path: Path) -> None:
    """SPEC §10 cold start: a search on a hashing store imports neither numpy nor the ONNX
    stack nor the indexer; only indexing and models need them."""
    import subprocess
    import sys

    db = tmp_path / "m.db"
    assert run("index", str(EXAMPLES), "--db", str(db), "--embedder", "hashing-512")[0] == 0
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from recall.cli import app\n"
        f"r = CliRunner().invoke(app, ['search', 'rate limit', '--db', {str(db)!r},"
        " '--mode', 'development', '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'recall.indexing', 'recall.models'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out


def test_version_short_help_and_short_k(tmp_path: Path) -> None:
    import recall

    code, out, _ = run("--version")
    assert (code, out.strip()) == (0, f"recall {recall.__version__}")
    for args in (["-h"], ["search", "-h"], ["models", "-h"], ["forget", "-h"], ["lint", "-h"]):
        code, out, _ = run(*args)
        assert code == 0 and "Usage: recall" in out, args
    db = str(tmp_path / "m.db")
    assert run("index", str(EXAMPLES), "--db", db)[0] == 0
    hits = {}
    for k in ("-k", "--k"):
        for n in ("2", "5"):
            code, out, _ = run(
                "search", "rate limits", "--db", db, k, n, "--json", "--mode", "development"
            )
            assert code == 0, out
            hits[k, n] = len(json.loads(out)["hits"])
    assert hits["-k", "2"] == hits["--k", "2"] == 2 < hits["-k", "5"] == hits["--k", "5"]
