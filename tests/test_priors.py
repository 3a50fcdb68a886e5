"""The prior calibration shipped for a built-in embedder (SPEC §7, `recall.priors`): when it
serves a store, that a record it cannot trust is never applied, and the trust an index run
reports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import recall
from recall import priors
from recall.cli import app
from recall.embedders import get_embedder
from recall.errors import TrustRefusal

FINGERPRINT = get_embedder("hashing-512").fingerprint
NOTES = {
    "rates.md": "# API rate limits\n\nThe public API allows 120 requests per minute per key.\n",
    "leave.md": "# Parental leave\n\nParents get sixteen weeks of paid leave.\n",
    "deploys.md": "# Deploy windows\n\nWe deploy on weekdays between nine and four.\n",
}


def _record(**changes: object) -> dict[str, object]:
    record = {
        "id": "prior-hashing-512-test",
        "embedder": "hashing-512",
        "fingerprint": FINGERPRINT,
        "threshold": 0.3,
        "scale": 0.05,
        "certified": True,
        "source": "prior",
        "features": ["dense"],
    }
    return {**record, **changes}


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A priors folder of the test's own in place of the package's."""
    folder = tmp_path / "priors"
    folder.mkdir()
    monkeypatch.setattr(priors, "PRIORS", folder)
    priors._shipped.cache_clear()
    yield folder
    priors._shipped.cache_clear()


def _write(folder: Path, record: dict[str, object], name: str = "hashing-512.json") -> None:
    corpora = [{"set": "platform", "fitted_on": True, "false_abstain": 0.1}]
    (folder / name).write_text(json.dumps({"record": record, "corpora": corpora}))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_store_too_small_to_calibrate_itself_is_served_by_the_prior(
    shipped: Path, corpus: Path, tmp_path: Path
) -> None:
    _write(shipped, _record())
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus)
        assert report.calibrated is None  # three notes make too few questions
        assert report.trust is not None and report.trust["state"] == "prior"
        assert report.trust["answers"] and "prior calibration" in report.trust["line"]
        result = mem.search("how many API requests per minute?")
        stats = mem.stats()
    assert result.trust_state == "trusted" and result.calibration is not None
    assert result.calibration["source"] == "prior"
    assert [h.provenance.file for h in result.ok_hits][:1] == ["rates.md"]
    assert stats.calibration is not None and stats.calibration["source"] == "prior"
    assert priors.figures(FINGERPRINT)[0]["set"] == "platform"


@pytest.mark.parametrize(
    "record",
    [
        _record(certified=False),
        _record(source="labelled"),
        _record(threshold=float("nan")),
        _record(fingerprint="0000000000000000"),
        "not json",
    ],
    ids=["uncertified", "not-a-prior", "non-finite", "another-embedder", "damaged"],
)
def test_a_prior_that_cannot_be_trusted_is_never_applied(
    shipped: Path, corpus: Path, tmp_path: Path, record: object
) -> None:
    if isinstance(record, str):
        (shipped / "hashing-512.json").write_text(record)
    else:
        _write(shipped, record)  # type: ignore[arg-type]
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        report = mem.index(corpus)
        assert report.trust is not None and report.trust["state"] == "missing"
        assert "no prior calibration" in report.trust["line"]
        with pytest.raises(TrustRefusal) as refused:
            mem.search("how many API requests per minute?")
    assert refused.value.code == "CALIBRATION_MISSING"


def test_the_store_s_own_calibration_replaces_the_prior(
    shipped: Path, corpus: Path, tmp_path: Path
) -> None:
    """A fit on the user's questions (or a certified self-made one) takes over; a self-made fit
    short of questions does not: it could not certify anything, so the prior stays."""
    _write(shipped, _record())
    with recall.open(tmp_path / "m.db", embedder="hashing-512") as mem:
        mem.index(corpus)
        mem.calibrate_self(replace=True)
        short, _ = mem._stored(mem._store.embedder())  # type: ignore[arg-type]
        assert short is not None and priors.short_of_questions(short)
        assert mem.calibration()[0] == priors.prior_for(FINGERPRINT)
        labelled = [("how many API requests per minute?", True)] * 20
        labelled += [("which pension scheme do we pay into?", False)] * 20
        own, fitted = mem.calibrate(labelled, replace=True)
        assert mem.calibration()[0] == own and own.source == "labelled"
        assert mem.trust()["state"] == ("labelled" if fitted.certified else "uncertified")


def test_index_says_what_trust_the_store_has(tmp_path: Path, corpus: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    res = runner.invoke(app, ["index", str(corpus), "--db", db, "--embedder", "hashing-512"])
    assert res.exit_code == 0, res.output
    assert "trust: strict search refuses (CALIBRATION_MISSING)" in " ".join(res.stdout.split())
    res = runner.invoke(app, ["index", str(corpus), "--db", db, "--json"])
    trust = json.loads(res.stdout)["trust"]
    assert trust["state"] == "missing" and trust["answers"] is False


def test_stats_and_search_name_the_prior_as_the_prior(
    shipped: Path, corpus: Path, tmp_path: Path
) -> None:
    """A prior is neither the user's labels nor made from the notes, and the terminal says so."""
    _write(shipped, _record())
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    res = runner.invoke(app, ["index", str(corpus), "--db", db, "--embedder", "hashing-512"])
    assert res.exit_code == 0, res.output
    for args in (["stats", "--db", db], ["search", "how many API requests?", "--db", db]):
        res = runner.invoke(app, args)
        shown = " ".join(res.stdout.split())
        assert res.exit_code == 0, res.output
        assert "prior-hashing-512-test (prior shipped with recall, certified)" in shown
        assert "labelled" not in shown


def test_an_evaluation_under_the_prior_says_so(shipped: Path, corpus: Path, tmp_path: Path) -> None:
    """`recall eval --calibration prior` judges with the prior, not with folds of the set's
    labels, and its report says which."""
    from recall.evaluation import evaluate_shipped
    from recall.evaluation.formats import format_markdown, format_table

    _write(shipped, _record())
    evalset = tmp_path / "set"
    (evalset / "notes").mkdir(parents=True)
    for note in corpus.iterdir():
        (evalset / "notes" / note.name).write_text(note.read_text(encoding="utf-8"))
    questions = [
        {"query": "how many API requests per minute?", "answerable": True,
         "category": "paraphrase", "relevant": ["rates.md"], "expect": "ok"},
        {"query": "which pension scheme do we pay into?", "answerable": False,
         "category": "far_gap", "expect": "abstain"},
    ]  # fmt: skip
    (evalset / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    meta = {"now": "2026-06-01", "indexed_at": "2026-05-31T00:00:00Z", "touched": {}}
    (evalset / "meta.json").write_text(json.dumps(meta))
    (report,) = evaluate_shipped(["hashing-512"], evalset=evalset, calibrations=("prior",))
    assert report.calibration_source == "prior" and not report.cross_fitted
    shown = format_table([report]) + format_markdown([report])
    assert "the prior shipped with recall" in shown
    assert "cross-fitted" not in shown
