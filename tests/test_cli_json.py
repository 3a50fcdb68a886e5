"""With `--json`, every outcome of every command is one JSON object on stdout (SPEC §8.2): a
result, a report with findings (exit 1), a trust refusal (exit 3), and every error, the
argument parser's included (exit 2), each with its code, its exit code and the next step."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app

from .conftest import EXAMPLES, write_corpus

runner = CliRunner()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store of the example notes, a damaged copy, a text file, a folder with a bad note."""
    root = tmp_path_factory.mktemp("json")
    db = root / "m.db"
    with recall.open(db, embedder="hashing-512") as mem:
        mem.index(EXAMPLES)
    damaged = root / "damaged.db"
    shutil.copy(db, damaged)
    raw = damaged.read_bytes()
    damaged.write_bytes(b"\0" * 100 + raw[100:])
    (root / "notes.txt").write_text("not a store\n")
    write_corpus(
        root / "bad", {"ok.md": "# Fine\n\nText.\n", "bad.md": "---\nvalid_from: x\n---\n"}
    )
    return {
        "db": str(db),
        "damaged": str(damaged),
        "text": str(root / "notes.txt"),
        "missing": str(root / "nope.db"),
        "tmp": str(root),
        "bad": str(root / "bad"),
        "notes": str(EXAMPLES),
    }


#: (arguments, what the message says): errors a command finds, each exit 2.
COMMAND_ERRORS = [
    (["index", "{tmp}/no-such-folder", "--db", "{tmp}/new.db"], "pass a folder of notes"),
    (["index", "{notes}", "--db", "{text}"], "choose another --db"),
    (["index", "{notes}", "--db", "{db}", "--vocabularies", "bogus"], "choose one of"),
    (["stats", "--db", "{missing}"], "run 'recall index PATH' first"),
    (["stats", "--db", "{text}"], "choose another --db"),
    (["stats", "--db", "{db}", "--namespace", "x"], "applies to a postgresql:// store"),
    (["doctor", "--db", "{missing}"], "give the store with --db"),
    (["search", "q", "--db", "{missing}"], "run 'recall index PATH' first"),
    (["search", "q", "--db", "{text}"], "choose another --db"),
    (["search", "q", "--db", "{db}", "--as-of", "garbage"], "is not a date"),
    (["search", "q", "--db", "{db}", "--known-as-of", "garbage"], "is not a date"),
    (["search", "q", "--db", "{db}", "--mode", "bogus"], "is not one of strict, development"),
    (["search", "q", "--db", "{damaged}"], "run 'recall doctor --db"),
    (["explain", "q", "nope.md", "--db", "{db}"], "as shown by 'recall search'"),
    (["explain", "q", "nope.md", "--db", "{missing}"], "run 'recall index PATH' first"),
    (["calibrate", "--db", "{db}"], "give QUERIES to fit"),
    (["calibrate", "{tmp}/no-such.jsonl", "--db", "{db}"], "no-such.jsonl"),
    (["calibrate", "--import", "{tmp}/nope.json", "--db", "{db}"], "'recall calibrate --export'"),
    (["calibrate", "--use", "99", "--db", "{db}"], "'recall calibrate --list' shows them"),
    (["calibrate", "--export", "{tmp}/x.json", "--db", "{db}"], "fit one first"),
    (["eval", "--db", "{db}"], "--db goes with QUESTIONS"),
    (["eval", "--set", "{tmp}/no-set"], "no-set"),
    (["watch", "{tmp}/no-such-folder", "--db", "{db}"], "is not a folder"),
    (["forget", "--db", "{db}"], "name files or folders"),
    (["forget", "nope.md", "--db", "{db}"], "give a file or folder that was indexed"),
    (["forget", "--older-than", "garbage", "--db", "{db}"], "is not a date"),
    (["forget", "--undo", "99", "--db", "{db}"], "'recall forget --list' shows"),
    (["migrate", "{missing}", "{tmp}/out.db"], "check the source path"),
    (["migrate", "{db}", "{db}"], "migrate into a new file"),
    (["report", "--db", "{missing}"], "run 'recall index PATH' first"),
    (["report", "--db", "{text}"], "choose another --db"),
    (["report", "--db", "{db}", "--out", "{tmp}/no-such-folder/r.html"], "give another --out"),
    (["lint", "{tmp}/no-such-folder"], "pass a folder of notes"),
    (["lint", "{notes}", "--vocabularies", "bogus"], "choose one of"),
    (["fix", "{tmp}/no-such-folder"], "pass a folder of notes"),
    (["check", "nope.md", "--corpus", "{notes}"], "pass note files"),
    (["models", "check", "{tmp}/no-model"], "pass a folder with model.onnx"),
]


def _invoke(args: list[str], place: dict[str, str]) -> tuple[int, str, str]:
    res = runner.invoke(app, [*(a.format(**place) for a in args), "--json"])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize(("args", "said"), COMMAND_ERRORS, ids=lambda v: " ".join(v)[:40])
def test_a_command_error_is_one_json_object_with_the_next_step(
    place: dict[str, str], args: list[str], said: str
) -> None:
    code, out, err = _invoke(args, place)
    assert code == 2, (out, err)
    error = json.loads(out)["error"]  # the whole of stdout is the one object
    assert error == {"code": "USAGE_ERROR", "message": error["message"], "exit": 2}
    assert error["message"].startswith("recall "), error
    assert said in error["message"], error
    assert error["message"] in err  # and the line on stderr for people
    assert "Traceback" not in out + err


#: Errors the argument parser finds, before any command runs.
PARSER_ERRORS = [
    (["search", "q", "-k", "abc"], "recall search: Invalid value for '-k' / '--k': not a whole"),
    (["search", "q", "-k", "0"], "recall search: Invalid value for '-k' / '--k'"),
    (["search"], "recall search: Missing argument 'QUERY'"),
    (["serach", "q"], "recall: No such command 'serach'. Did you mean 'search'?"),
    (["index", "{notes}", "--embedder", "bert"], "recall index: Invalid value for '--embedder'"),
    (["search", "q", "--embedder", "hashing-3"], "hashing-3 is out of range"),
    (["check", "nope.md"], "recall check: Missing option '--corpus'"),
    (["models", "list", "--bogus"], "recall models list: No such option: --bogus"),
    (["serve", "--bogus"], "recall serve: No such option: --bogus"),
]


@pytest.mark.parametrize(("args", "said"), PARSER_ERRORS, ids=lambda v: " ".join(v)[:40])
def test_an_argument_error_is_one_json_object_too(
    place: dict[str, str], args: list[str], said: str
) -> None:
    code, out, _ = _invoke(args, place)
    assert code == 2, out
    error = json.loads(out)["error"]
    assert error["code"] == "USAGE_ERROR" and error["exit"] == 2
    assert said in error["message"], error
    assert "Input should be" not in error["message"]


def test_every_other_outcome_is_one_json_object(place: dict[str, str]) -> None:
    """Results (0), reports with findings (1) and trust refusals (3)."""
    outcomes = {
        ("stats", "--db", "{db}"): 0,
        ("search", "rate limit", "--db", "{db}", "--mode", "development"): 0,
        ("doctor", "--db", "{db}"): 0,
        ("doctor", "--db", "{damaged}"): 1,
        ("lint", "{bad}"): 1,
        ("index", "{bad}", "--db", "{tmp}/bad.db"): 1,
        ("search", "rate limit", "--db", "{db}"): 3,
    }
    for args, expected in outcomes.items():
        code, out, err = _invoke(list(args), place)
        assert code == expected, (args, out, err)
        data = json.loads(out)
        assert isinstance(data, (dict, list)) and "error" not in data, (args, data)
        if expected == 3:
            assert data["refused"] is True and data["code"] and data["message"], data
