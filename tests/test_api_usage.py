"""The Python API fails like a library (SPEC §8.1): a wrong type or value passed to
`recall.open` or a `Memory` method raises `recall.UsageError` at the call, naming the parameter
and what it accepts, and nothing is written; an unknown embedder is refused before the store
file exists. Python's own signature errors (a missing argument) stay `TypeError`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.evaluation import evaluate_store

from .conftest import EXAMPLES
from .test_calibration import RATE, _labelled

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[recall.Memory]:
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as m:
        m.index(EXAMPLES, now=NOW)
        m.calibrate(_labelled(), now=NOW)
        yield m


Call = Callable[[recall.Memory], object]

BAD_CALLS: list[tuple[str, Call, str]] = [
    # search
    ("search-now-str", lambda m: m.search("q", now="2025-06-01"), "now must be a datetime"),
    ("search-now-date", lambda m: m.search("q", now=dt.date(2025, 6, 1)), "now must be"),
    ("search-known-str", lambda m: m.search("q", known_as_of="2025"), "known_as_of must be"),
    ("search-none", lambda m: m.search(None), "query must be a non-empty string"),
    ("search-blank", lambda m: m.search("  "), "query must be a non-empty string"),
    ("search-bytes", lambda m: m.search(b"q"), "query must be"),
    ("search-k-str", lambda m: m.search("q", k="5"), "k must be an int in 1..100"),
    ("search-k-bool", lambda m: m.search("q", k=True), "k must be an int"),
    ("search-k-float", lambda m: m.search("q", k=5.0), "k must be an int"),
    ("search-k-0", lambda m: m.search("q", k=0), "k must be an int in 1..100"),
    ("search-k-101", lambda m: m.search("q", k=101), "k must be an int in 1..100"),
    ("search-mode", lambda m: m.search("q", mode="lenient"), "mode must be 'strict'"),
    ("search-mode-int", lambda m: m.search("q", mode=1), "mode must be"),
    ("search-entail", lambda m: m.search("q", entail="yes"), "entail must be True or False"),
    # explain
    ("explain-query", lambda m: m.explain(None, "onboarding.md"), "query must be"),
    ("explain-file", lambda m: m.explain("q", 3), "file must be a non-empty path"),
    ("explain-file-empty", lambda m: m.explain("q", ""), "file must be"),
    ("explain-now", lambda m: m.explain("q", "onboarding.md", now="2025"), "now must be"),
    # index
    ("index-int", lambda m: m.index(42), "paths must be a path or an iterable"),
    ("index-bytes", lambda m: m.index(b"notes"), "paths must be"),
    ("index-empty", lambda m: m.index([]), "paths must be at least one"),
    ("index-empty-str", lambda m: m.index(""), "paths must be a non-empty path"),
    ("index-item", lambda m: m.index([EXAMPLES, 3]), "each of paths must be"),
    ("index-now", lambda m: m.index(EXAMPLES, now="2025-06-01"), "now must be"),
    ("index-prune", lambda m: m.index(EXAMPLES, allow_prune="yes"), "allow_prune must be"),
    ("index-progress", lambda m: m.index(EXAMPLES, progress=5), "progress must be a callable"),
    # calibrate
    ("calibrate-int", lambda m: m.calibrate(5), "labelled must be"),
    ("calibrate-dict", lambda m: m.calibrate({"query": "q", "answerable": True}), "labelled"),
    ("calibrate-empty", lambda m: m.calibrate([]), "labelled is empty"),
    ("calibrate-short", lambda m: m.calibrate([("q",)]), "labelled item 1: expected a"),
    ("calibrate-item", lambda m: m.calibrate([("q", True), 7]), "labelled item 2"),
    ("calibrate-bool", lambda m: m.calibrate([("q", "yes")]), "'answerable' must be"),
    ("calibrate-query", lambda m: m.calibrate([{"query": 1, "answerable": True}]), "'query'"),
    ("calibrate-now", lambda m: m.calibrate(_labelled(), now="2025"), "now must be"),
    ("calibrate-replace", lambda m: m.calibrate(_labelled(), replace=1), "replace must be"),
    ("import-record", lambda m: m.import_calibration(5), "record must be"),
    ("use-number", lambda m: m.use_calibration("1"), "number must be an int"),
    ("evaluate-k", lambda m: evaluate_store(m, [], k=True), "k must be an int"),
]


@pytest.mark.parametrize(
    ("call", "needle"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS]
)
def test_bad_arguments_raise_usage_error_naming_the_parameter(
    mem: recall.Memory, call: Call, needle: str
) -> None:
    before = (mem.stats(), mem.calibration_history())
    with pytest.raises(recall.UsageError) as err:
        call(mem)
    assert needle in str(err.value)
    assert str(err.value).startswith("recall "), "says where it comes from"
    assert isinstance(err.value, recall.RecallError)
    assert (mem.stats(), mem.calibration_history()) == before, "nothing was written"


def test_message_says_what_was_given(mem: recall.Memory) -> None:
    with pytest.raises(recall.UsageError) as err:
        mem.search("q", now="2025-06-01")
    message = str(err.value)
    assert "'2025-06-01' (str)" in message and "fromisoformat('2025-06-01')" in message
    with pytest.raises(recall.UsageError, match=r"got True \(bool\)"):
        mem.search("q", k=True)


def test_a_missing_argument_is_pythons_type_error(mem: recall.Memory) -> None:
    with pytest.raises(TypeError, match="'query'"):
        mem.search(now="2025-06-01")  # type: ignore[call-arg]


GOOD_CALLS: list[tuple[str, Call]] = [
    ("naive-now", lambda m: m.search(RATE, now=dt.datetime(2026, 11, 30))),
    ("k-bounds", lambda m: (m.search(RATE, k=1, now=NOW), m.search(RATE, k=100, now=NOW))),
    ("mode", lambda m: m.search(RATE, mode="development", now=NOW)),
    ("explain-path", lambda m: m.explain(RATE, EXAMPLES / "rate-limits-v2.md", now=NOW)),
    ("index-generator", lambda m: m.index((p for p in [EXAMPLES]), now=NOW)),
    (
        "calibrate-mixed",
        lambda m: m.calibrate([*_labelled()[:2], {"query": "x", "answerable": 0 == 1}]),
    ),
]


@pytest.mark.parametrize("call", [c[1] for c in GOOD_CALLS], ids=[c[0] for c in GOOD_CALLS])
def test_accepted_forms_still_work(mem: recall.Memory, call: Call) -> None:
    assert call(mem) is not None


# --- recall.open ----------------------------------------------------------------------------

BAD_OPENS: list[tuple[str, dict[str, Any], str]] = [
    ("bert", {"embedder": "bert"}, "embedder='bert' names no embedder: unknown embedder"),
    ("hashing-4", {"embedder": "hashing-4"}, "embedder='hashing-4' names no embedder"),
    ("onnx-empty", {"embedder": "onnx:"}, "onnx: needs a model directory"),
    ("onnx-missing", {"embedder": "onnx:/no/such/model"}, "/no/such/model does not exist"),
    ("embedder-int", {"embedder": 5}, "embedder must be an embedder name"),
    ("judge-int", {"judge": 5}, "judge must be a judge model directory"),
    ("judge-empty", {"judge": ""}, "judge must be"),
]


@pytest.mark.parametrize(
    ("kwargs", "needle"), [c[1:] for c in BAD_OPENS], ids=[c[0] for c in BAD_OPENS]
)
def test_open_refuses_before_creating_the_file(
    tmp_path: Path, kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(recall.UsageError) as err:
        recall.open(tmp_path / "x.db", **kwargs)
    assert needle in str(err.value) and str(err.value).startswith("recall open:")
    assert list(tmp_path.iterdir()) == [], "no store file, no -wal or -shm left behind"
    with pytest.raises(recall.UsageError):
        recall.Memory(tmp_path / "x.db", **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", [42, None, "", b"x.db"], ids=["int", "none", "empty", "bytes"])
def test_open_refuses_a_path_that_is_not_one(tmp_path: Path, path: Any) -> None:
    with pytest.raises(recall.UsageError, match="path must be a non-empty path"):
        recall.open(path)


def test_unknown_embedder_on_an_existing_store_leaves_it_alone(mem: recall.Memory) -> None:
    path = Path(mem.path)
    size = path.stat().st_size
    with pytest.raises(recall.UsageError, match="unknown embedder"):
        recall.open(path, embedder="bert")
    assert path.stat().st_size == size and mem.search(RATE, now=NOW).calibrated


def test_embedder_objects_and_paths_are_accepted(tmp_path: Path) -> None:
    with recall.open(tmp_path / "a.db", embedder=recall.HashingEmbedder(64)) as mem:
        assert mem.embedder.name == "hashing-64"
    with recall.open(str(tmp_path / "b.db"), embedder=" hashing-128 ") as mem:
        assert mem.embedder.name == "hashing-128"


def test_cli_unknown_embedder_exits_2_and_creates_no_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    res = CliRunner().invoke(app, ["index", str(EXAMPLES), "--db", str(db), "--embedder", "bert"])
    assert res.exit_code == 2 and "unknown embedder 'bert'" in res.stderr
    assert not db.exists() and "Traceback" not in res.output
