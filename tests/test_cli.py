"""The real `recall` entry point: exit codes (SPEC §8.2) and `--json` output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall.cli import app

from .conftest import EXAMPLES, write_corpus
from .test_search import certified

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
    stack nor the indexer; only indexing and models need them. Nor does the argument parser
    import a validation library (pydantic, which typer 0.29 imports for every command)."""
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
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'recall.indexing', 'recall.models',"
        " 'pydantic'}\n"
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


def test_a_first_run_with_no_notes_makes_no_store_and_says_why(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "picture.png").write_bytes(b"\x89PNG")
    db = tmp_path / "m.db"
    res = runner.invoke(app, ["index", str(empty), "--db", str(db)])
    assert res.exit_code == 2
    assert f"recall index: no notes in {empty}; nothing was written to {db}" in res.output
    assert not list(tmp_path.glob("m.db*"))


def test_a_file_named_explicitly_must_still_be_a_note(tmp_path: Path) -> None:
    runner = CliRunner()
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    db = tmp_path / "m.db"
    res = runner.invoke(app, ["index", str(other), "--db", str(db), "--json"])
    assert res.exit_code == 1
    (refused,) = json.loads(res.stdout)["refused"]
    assert refused["path"] == str(other) and refused["reason"].startswith("not a note")
    assert not list(tmp_path.glob("m.db*"))
    note = tmp_path / "note.md"
    note.write_text("# A note\n\nIt counts.\n")
    assert runner.invoke(app, ["index", str(note), "--db", str(db)]).exit_code == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["forget", "--older-than", "garbage"], "recall forget: --older-than 'garbage'"),
        (["explain", "q", "x.md", "--as-of", "garbage"], "recall explain: --as-of 'garbage'"),
        (["search", "q", "--as-of", "garbage"], "recall search: --as-of 'garbage'"),
        (["migrate", "nope.db", "out.db"], "recall migrate: there is no store at nope.db"),
    ],
)
def test_input_errors_name_their_command_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    runner = CliRunner()
    db = tmp_path / "m.db"
    write_corpus(tmp_path / "notes", {"a.md": "# A\n\nSome text.\n"})
    assert runner.invoke(app, ["index", str(tmp_path / "notes"), "--db", str(db)]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    extra = [] if args[0] == "migrate" else ["--db", str(db)]
    res = runner.invoke(app, [*args, *extra])
    assert res.exit_code == 2, res.output
    assert said in res.output
    assert not (tmp_path / "out.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["search", "q", "--db", "{missing}"],
        ["stats", "--db", "{missing}"],
        ["index", "{tmp}/no-such-folder", "--db", "{tmp}/m.db"],
        ["search", "q", "--db", "{text}"],
        ["search", "q", "--db", "{db}", "--as-of", "garbage"],
        ["calibrate", "{tmp}/no-such.jsonl", "--db", "{db}"],
        ["forget", "--older-than", "garbage", "--db", "{db}"],
        ["migrate", "{missing}", "{tmp}/out.db"],
    ],
)
def test_with_json_an_error_is_json_on_stdout_too(tmp_path: Path, args: list[str]) -> None:
    runner = CliRunner()
    db = tmp_path / "m.db"
    assert runner.invoke(app, ["index", str(EXAMPLES), "--db", str(db)]).exit_code == 0
    (tmp_path / "notes.txt").write_text("not a store\n")
    where = {
        "missing": tmp_path / "nope.db",
        "tmp": tmp_path,
        "db": db,
        "text": tmp_path / "notes.txt",
    }
    res = runner.invoke(app, [*(a.format(**where) for a in args), "--json"])
    assert res.exit_code == 2, res.output
    error = json.loads(res.stdout)["error"]
    assert error["exit"] == 2 and error["code"] == "USAGE_ERROR"
    assert error["message"].startswith(f"recall {args[0]}") or error["message"].startswith(
        "recall "
    )
    assert error["message"] in res.stderr


def test_the_answer_shown_is_cut_after_a_whole_word(tmp_path: Path) -> None:
    import recall

    words = [f"alpha{i}beta" for i in range(80)]
    write_corpus(tmp_path / "notes", {"long.md": "# Long\n\n" + " ".join(words) + "\n"})
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(tmp_path / "notes")
        certified(mem, threshold=0.05)
    res = CliRunner().invoke(app, ["search", "alpha3beta alpha4beta", "--db", str(db)])
    assert res.exit_code == 0, res.output
    answer = " ".join(res.stdout.split("answer from long.md:", 1)[1].split())
    assert answer.endswith(" …") and len(answer) <= 300
    shown = answer[: -len(" …")].split()
    # The chunk's leading words, each whole: the heading, then the body up to the cut.
    assert shown == ["#", "Long", *words[: len(shown) - 2]] and len(shown) < len(words)


def test_file_names_are_printed_as_they_are_not_as_they_would_display(tmp_path: Path) -> None:
    """A right-to-left override makes `\u202egnp.md` display as `dm.png`; a control character can
    move the cursor. Names are printed with such characters escaped (JSON keeps them exact)."""
    notes = write_corpus(
        tmp_path / "notes",
        {
            "\u202egnp.md": "# Rate limits\n\nThe API allows 100 requests per minute.\n",
            "bell\x07.md": "# Other\n\nUnrelated words.\n",
            "bad.md": "---\nvalid_from: soon\n---\nx\n",
        },
    )
    (notes / "bad.md").rename(notes / "bad\u202e.md")
    db = str(tmp_path / "m.db")
    code, out, err = run("index", str(notes), "--db", db, "--embedder", "hashing-512")
    assert code == 1 and "bad\\u202e.md" in out + err and "\u202e" not in out + err, out + err
    code, out, err = run("search", "API requests per minute", "--db", db, "--mode", "development")
    assert code == 0 and "\\u202egnp.md" in out and "\u202e" not in out, out
    code, out, err = run("lint", str(notes))
    assert "bad\\u202e.md" in out and "\u202e" not in out and "\x07" not in out, out
    code, out, err = run("search", "requests", "--db", db, "--mode", "development", "--json")
    files = [h["provenance"]["file"] for h in json.loads(out)["hits"]]
    assert "\u202egnp.md" in files


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "x", "-k", "abc"], "Invalid value for '-k' / '--k': not a whole number"),
        (["search"], "Missing argument 'QUERY'"),
        (["serach", "x"], "No such command 'serach'. Did you mean 'search'?"),
    ],
)
def test_argument_errors_with_json_are_json_in_recalls_words(args: list[str], said: str) -> None:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "USAGE_ERROR" and error["exit"] == 2 and said in error["message"]
    assert "Input should be" not in result.stdout + result.stderr
    plain = runner.invoke(app, args)
    assert plain.exit_code == 2 and not plain.stdout.strip() and said.split("'")[0] in plain.stderr


def test_the_commands_list_wraps_each_summary_to_the_terminal() -> None:
    """A command's summary is its docstring's first paragraph as one line: the list wraps it at
    the terminal's width, never at the docstring's own line breaks."""
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    flat = " ".join(result.stdout.replace("│", " ").split())
    assert "the vectors and lexical index against the chunks, the calibration records" in flat
    panel = result.stdout.split("Commands", 1)[1].splitlines()[1:-1]
    entries: list[list[str]] = []
    for line in panel:
        text = line.strip("│ ").rstrip()
        if not text:
            continue
        if line[2] != " ":  # a command's name starts its entry
            entries.append([])
        entries[-1].append(line.rstrip(" │"))
    assert len(entries) >= 15
    for lines in entries:
        # Every line of a summary but its last runs to near the edge: none was cut short.
        assert all(len(line) > 60 for line in lines[:-1]), lines


@pytest.mark.parametrize("command", ["index", "search", "calibrate", "forget", "eval", "lint"])
def test_help_shows_placeholders_not_python_types(command: str) -> None:
    result = runner.invoke(app, [command, "-h"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    for python in ("<bool>", "<str>", "<int>", "<list[", "<Path>"):
        assert python not in result.stdout, (python, result.stdout)
    usage = next(line for line in result.stdout.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage


def test_hits_are_numbered_in_the_order_they_come(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert run("index", str(EXAMPLES), "--db", db, "--embedder", "hashing-512")[0] == 0
    code, out, _ = run("search", "API rate limit", "--db", db, "--mode", "development", "-k", "3")
    rows = [line.split("│")[0].strip() for line in out.splitlines() if "│" in line]
    assert [r for r in rows if r] == ["1", "2", "3"], out


def test_at_80_columns_no_line_runs_past_the_edge_and_no_name_is_cut(tmp_path: Path) -> None:
    from rich.cells import cell_len

    db = str(tmp_path / "m.db")
    assert run("index", str(EXAMPLES), "--db", db, "--embedder", "hashing-512")[0] == 0
    code, out, _ = run(
        "search", "API rate limit", "--db", db, "--mode", "development", env={"COLUMNS": "80"}
    )
    assert code in (0, 3), out
    lines = out.splitlines()
    assert max(map(cell_len, lines)) <= 80, out
    # Every file name shown fits 34 cells here, so each sits whole on its own line.
    shown = {line.split("│")[-1].strip() for line in lines if "│" in line}
    found = run("search", "API rate limit", "--db", db, "--mode", "development", "--json")[1]
    for name in json.loads(found)["hits"]:
        assert name["provenance"]["file"] in shown, (name["provenance"]["file"], out)


@pytest.mark.parametrize(
    ("text", "width", "lines"),
    [
        ("decisions/feature-flags.md", 40, ["decisions/feature-flags.md"]),
        ("decisions/feature-flags.md", 20, ["decisions/", "feature-flags.md"]),
        ("superseded by a/b-c.md; valid", 16, ["superseded by", "a/b-c.md; valid"]),
        ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
        ("a/bcdefgh/ij", 5, ["a/", "bcdef", "gh/ij"]),
        ("", 10, [""]),
    ],
)
def test_wrapping_breaks_at_spaces_then_after_a_slash_then_inside(
    text: str, width: int, lines: list[str]
) -> None:
    from recall.cli.showing import wrapped

    assert wrapped(text, width) == lines


def test_no_message_sends_a_user_to_the_specification() -> None:
    """Users have the README, not the specification: no string recall can print cites a SPEC
    section (docstrings and the store's SQL comments may)."""
    import ast

    package = Path(__file__).resolve().parent.parent / "python" / "recall"
    cited = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        cited += [
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "SPEC" in node.value
            and "CREATE " not in node.value
            and id(node) not in docstrings
        ]
    assert not cited, cited


def test_a_namespace_in_the_environment_does_not_stop_a_command_on_a_file(tmp_path: Path) -> None:
    """`$RECALL_NAMESPACE`, set for a team's server, applies to a postgresql:// store only; on a
    store file it is not an error (a `--namespace` given on the command line still is)."""
    db = str(tmp_path / "m.db")
    env = {"RECALL_NAMESPACE": "team"}
    assert run("index", str(EXAMPLES), "--db", db, "--embedder", "hashing-512", env=env)[0] == 0
    code, out, err = run("stats", "--db", db, "--json", env=env)
    assert code == 0 and json.loads(out)["documents"] > 0, err
    code, _, err = run("stats", "--db", db, "--namespace", "team", env=env)
    assert code == 2 and "--namespace applies to a postgresql:// store" in err


def test_a_near_miss_says_what_the_passage_lacks(tmp_path: Path) -> None:
    import recall

    write_corpus(
        tmp_path / "notes",
        {
            "edi.md": "# Onboarding an EDI trading partner\n\nTo onboard a new EDI trading "
            "partner, exchange AS2 identifiers and certificates with the partner.\n"
        },
    )
    db = tmp_path / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(tmp_path / "notes")
        certified(mem, threshold=0.2)
    query = "How much do we charge to onboard a new EDI trading partner?"
    res = CliRunner().invoke(app, ["search", query, "--db", str(db)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "not_entailed" in said and "does not hold an amount of money" in said
    res = CliRunner().invoke(app, ["explain", query, "edi.md", "--db", str(db)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.stdout.split())
    assert "verdict: not_entailed" in said
    assert "the question asks for an amount of money: an amount of money missing" in said
