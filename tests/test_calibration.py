"""Calibration (SPEC §7): threshold placement, scale, certification, leave-one-out rates,
staleness, files, the plot and the CLI; strict mode refuses with each code (SPEC §5.6)."""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import recall
from recall import _core
from recall.calibration import (
    RECORD_PREFIX,
    auc,
    fit,
    hanley_mcneil,
    meta_key,
    quantile,
    scale_for,
    threshold_for,
)
from recall.calibration.statistics import _leave_one_out
from recall.cli import app

from .conftest import EXAMPLES, write_corpus


@pytest.mark.parametrize(
    ("xs", "q", "want"),
    [
        ([3.0, 1.0, 2.0], 0.05, 1.0),
        ([3.0, 1.0, 2.0], 0.95, 3.0),
        ([5.0], 0.5, 5.0),
        (list(range(20)), 0.05, 1),
        (list(range(20)), 0.95, 19),
        (list(range(40)), 0.25, 10),
    ],
)
def test_quantile_is_a_sample(xs: list[float], q: float, want: float) -> None:
    assert quantile(xs, q) == want


@pytest.mark.parametrize(
    ("answerable", "unanswerable", "want"),
    [
        # The midpoint of the gap between the floor and the ceiling, rounded down.
        ([0.6, 0.7, 0.8], [0.1, 0.2, 0.3], 0.45),
        # 3 samples: the 5th percentile collapses onto the minimum.
        ([0.61, 0.9, 0.95], [0.2, 0.25, 0.301], 0.455),
        ([0.5], [], 0.5),
        ([], [0.32], 0.32),
        ([], [], 0.5),
        # Rounded down to 3 decimals, never up.
        ([0.6009], [0.2], 0.4),
    ],
)
def test_threshold_table(answerable: list[float], unanswerable: list[float], want: float) -> None:
    assert threshold_for(answerable, unanswerable) == want


def test_one_outlier_does_not_move_the_boundary_with_20_samples() -> None:
    answerable = [0.60 + i * 0.01 for i in range(20)]
    unanswerable = [0.10 + i * 0.01 for i in range(20)]
    base = threshold_for(answerable, unanswerable)
    outlier = [0.05] + answerable[1:]  # the lowest answerable sample dives
    assert threshold_for(outlier, unanswerable) == base
    assert base != math.floor(min(outlier) * 1000) / 1000, "never the lowest answerable sample"


def test_scale() -> None:
    assert scale_for([0.6], [0.1, 0.2]) == 0.05
    assert scale_for([0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 0.3, 0.4]) == pytest.approx((0.7 - 0.4) / 4)
    assert scale_for([0.3, 0.31], [0.3, 0.31]) == 0.01


def test_auc_and_interval() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.5], [0.5]) == 0.5, "ties count half"
    assert auc([], [0.1]) is None
    low, high = hanley_mcneil(0.95, 30, 30)
    assert 0.85 < low < 0.95 < high <= 1.0


def test_the_interval_is_the_hanley_mcneil_95_percent_interval() -> None:
    """Checked against the published formula computed here, with the normal quantile taken
    from the standard library rather than written as a constant."""
    z = statistics.NormalDist().inv_cdf(0.975)
    for area, n_pos, n_neg in [(0.95, 30, 30), (0.9, 20, 45), (0.75, 120, 80), (0.99, 25, 25)]:
        q1, q2 = area / (2 - area), 2 * area**2 / (1 + area)
        variance = (
            area * (1 - area) + (n_pos - 1) * (q1 - area**2) + (n_neg - 1) * (q2 - area**2)
        ) / (n_pos * n_neg)
        low, high = hanley_mcneil(area, n_pos, n_neg)
        assert low == pytest.approx(max(0.0, area - z * math.sqrt(variance)), abs=1e-4)
        assert high == pytest.approx(min(1.0, area + z * math.sqrt(variance)), abs=1e-4)


def test_a_memory_too_small_makes_no_calibration_of_its_own(tmp_path: Path) -> None:
    """SPEC §7: a self-made fit needs 20 answerable questions from the notes; a handful of
    notes makes fewer, and the index run fits nothing (search says what to do instead)."""
    from recall import selfcal

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(4):
        (notes / f"n{i}.md").write_text(
            f"# Retry policy {i}\n\nRetry {i + 2} times.\n\n## Backoff\n\nWait {i} s.\n"
        )
    with recall.open(tmp_path / "m.db", embedder="hashing-64") as mem:
        report = mem.index(notes)
        made = sum(p.answerable for p in selfcal.probes(mem._store))
        assert 2 <= made < 20, made
        assert report.calibrated is None and mem.calibration()[0] is None


def test_certification_needs_20_per_class_and_a_high_lower_bound() -> None:
    rng = random.Random(1)
    good = [("q", True, 0.6 + rng.random() * 0.3) for _ in range(20)] + [
        ("q", False, rng.random() * 0.3) for _ in range(20)
    ]
    assert fit(good).certified and fit(good).auc == 1.0
    assert not fit(good[1:]).certified and "at least 20" in fit(good[1:]).certified_reason
    noisy = [("q", i % 2 == 0, rng.random()) for i in range(80)]
    f = fit(noisy)
    assert not f.certified and "lower bound" in f.certified_reason
    assert f.threshold == threshold_for(
        [s for _, a, s in noisy if a], [s for _, a, s in noisy if not a]
    ), "certification never moves the threshold"


def test_certification_is_refused_below_a_lower_bound_of_0_90() -> None:
    """Overlaps of every size between 40 answerable and 40 unanswerable samples: certified
    exactly when the AUC's 95 % lower bound reaches 0.90, with bounds on both sides of it."""
    seen = set()
    for overlap in range(0, 40, 2):
        samples = [("q", True, float(i + 40 - overlap)) for i in range(40)]
        samples += [("q", False, float(j)) for j in range(40)]
        f = fit(samples)
        assert f.auc_interval is not None
        low = f.auc_interval[0]
        assert f.certified == (low >= 0.90), (overlap, low)
        seen.add(round(low, 1))
    assert {0.8, 0.9, 1.0} <= seen, seen  # bounds just under, around and over the line


def test_leave_one_out_rates() -> None:
    samples = [("a", True, 0.9), ("b", True, 0.8), ("c", False, 0.1), ("d", False, 0.85)]
    f = fit(samples)
    assert f.loo_false_confidence == 0.5 and f.loo_false_abstain is not None
    assert 0.0 <= f.loo_false_abstain <= 1.0


@given(
    st.floats(-1, 1),
    st.floats(-1, 1),
    st.floats(-1, 1),
    st.floats(0.01, 1.0),
)
def test_confidence_properties(a: float, b: float, threshold: float, scale: float) -> None:
    def conf(score: float) -> float:
        ((_, _, c, *_),) = _core.judge(
            [("a", "a.md", None, None, None, None)],
            [],
            [(0, score)],
            {},
            _core.Policy(now_us=0, threshold=threshold, scale=scale),
        )
        return c

    lo, hi = sorted((a, b))
    assert 0.0 < conf(lo) <= conf(hi) <= 1.0
    t32 = float(__import__("numpy").float32(threshold))
    assert conf(t32) == pytest.approx(0.5, abs=1e-6)


# --- against a real store -------------------------------------------------------------------

RATE = "how many requests per second does the public API allow?"


def _labelled(n: int = 20) -> list[tuple[str, bool]]:
    answerable = [
        "public API requests per second per API key",
        "burst capacity requests refilled",
        "HTTP 429 Too Many Requests Retry-After",
        "PostgreSQL PgBouncer transaction mode pool size",
        "schema migrations applied by the deploy pipeline",
        "nightly base backups WAL archiving restores rehearsed",
        "on-call rotates weekly Mondays escalation team lead",
        "production deploys freeze December January security fixes",
        "restart the gateway systemctl healthz",
        "reindex a shard search-admin replica",
        "new engineers production read access write access deploys",
        "drain the node first then restart then check healthz",
        "platform team gateway new load balancers",
        "search team evaluating hybrid retrieval",
    ]
    unanswerable = [
        "quarterly marketing budget for trade shows",
        "office coffee machine descaling schedule",
        "parental leave policy duration",
        "which font does the brand guide mandate",
        "travel reimbursement per diem Tokyo",
        "kubernetes pod autoscaling memory limits",
        "GDPR data retention for invoices",
        "who designed the company logo",
    ]
    pairs = [(q, True) for q in answerable] + [(q, False) for q in unanswerable]
    return pairs * (n // 8 + 1)


def test_calibrate_stores_a_record_and_search_uses_it(backend: Callable[[str], str]) -> None:
    with recall.open(backend("m.db")) as mem:
        mem.index(EXAMPLES)
        calibration, fitted = mem.calibrate(_labelled())
        assert fitted.n_answerable >= 20 and fitted.n_unanswerable >= 20
        assert calibration.threshold == fitted.threshold
        assert mem.calibration()[0] == calibration
        exported = mem.export_calibration()
        assert exported["fingerprint"] == mem.embedder.fingerprint
        assert exported["chunk_count"] == mem.stats().chunks
        if calibration.certified:
            res = mem.search(RATE)
            assert res.calibrated and res.trust_state == "trusted"
            assert res.calibration is not None and res.calibration["stale"] is False
        # What a search reads before it embeds, in one call, is what the three reads give.
        store = mem._store
        before = (
            store.freshness(),
            store.embedder(),
            store.meta(meta_key(exported["fingerprint"])),
        )
        assert before[2] is not None
        assert store.search_state(RECORD_PREFIX) == before
    with recall.open(backend("other.db")) as other:
        assert other._store.search_state(RECORD_PREFIX) == ((0, None, None, 0), None, None)
        other.index(EXAMPLES)
        assert other._store.search_state(RECORD_PREFIX)[2] is None
        assert other.import_calibration(exported).threshold == calibration.threshold


def test_calibration_goes_stale_after_a_quarter_of_the_chunks_change(
    backend: Callable[[str], str], corpus: Path
) -> None:
    write_corpus(corpus, {f"n{i}.md": f"# Note {i}\n\nTopic {i} text.\n" for i in range(8)})
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus)
        mem.import_calibration(
            {
                "id": "x",
                "embedder": "hashing-512",
                "fingerprint": mem.embedder.fingerprint,
                "threshold": 0.2,
                "scale": 0.05,
                "certified": True,
                "chunk_count": 8,
                "churn": mem.stats().chunk_churn,
            }
        )
        (corpus / "n0.md").write_text("# Note 0\n\nEdited.\n")
        (corpus / "n1.md").write_text("# Note 1\n\nEdited.\n")
        mem.index(corpus)  # 2 of 8 chunks changed: exactly 25 %, not more
        assert mem.search("topic").calibrated
        (corpus / "n2.md").unlink()
        mem.index(corpus)  # 3 of 8
        with pytest.raises(recall.TrustRefusal) as err:
            mem.search("topic")
        assert err.value.code == "CALIBRATION_STALE" and "recall calibrate" in str(err.value)
        res = mem.search("topic", mode="development")
        assert res.trust_state == "degraded" and res.calibration is not None
        assert res.calibration["stale"] is True


def test_labelled_files(tmp_path: Path) -> None:
    from recall.calibration import load_queries

    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(
        '{"query": "a", "answerable": true}\n\n# comment\n{"query": "b", "answerable": false}\n'
    )
    assert load_queries(jsonl) == [("a", True), ("b", False)]
    js = tmp_path / "q.json"
    js.write_text(json.dumps({"queries": [{"query": "c", "answerable": True}]}))
    assert load_queries(js) == [("c", True)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "a", "answerable": "yes"}\n')
    with pytest.raises(recall.UsageError, match="bad.jsonl line 1"):
        load_queries(bad)
    with pytest.raises(recall.UsageError, match="cannot read"):
        load_queries(tmp_path / "missing.jsonl")


def test_cli_calibrate_plot_export_import_and_refusal_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"query": q, "answerable": a}) + "\n" for q, a in _labelled())
    )
    assert runner.invoke(app, ["index", str(EXAMPLES), "--db", db]).exit_code == 0
    # CALIBRATION_MISSING before any calibration.
    res = runner.invoke(app, ["search", RATE, "--db", db, "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["code"] == "CALIBRATION_MISSING"
    plot = tmp_path / "fit.png"
    res = runner.invoke(app, ["calibrate", str(queries), "--db", db, "--plot", str(plot)])
    data = json.loads(runner.invoke(app, ["calibrate", str(queries), "--db", db, "--json"]).stdout)
    assert res.exit_code == (0 if data["fit"]["certified"] else 1)
    assert "threshold" in res.stdout and plot.read_bytes().startswith(b"\x89PNG")
    export = tmp_path / "cal.json"
    assert runner.invoke(app, ["calibrate", "--export", str(export), "--db", db]).exit_code == 0
    record = json.loads(export.read_text())
    nowhere = tmp_path / "missing" / "cal.json"
    res = runner.invoke(app, ["calibrate", "--export", str(nowhere), "--db", db])
    assert res.exit_code == 2 and "cannot write" in res.output
    assert "Traceback" not in res.output and not nowhere.exists()
    # CALIBRATION_UNCERTIFIED: the same record marked uncertified.
    record["certified"] = False
    uncertified = tmp_path / "uncertified.json"
    uncertified.write_text(json.dumps(record))
    assert (
        runner.invoke(app, ["calibrate", "--import", str(uncertified), "--db", db]).exit_code == 0
    )
    res = runner.invoke(app, ["search", RATE, "--db", db, "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["code"] == "CALIBRATION_UNCERTIFIED"
    # A bad record is refused at import, with the reason.
    record["threshold"] = 7
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    res = runner.invoke(app, ["calibrate", "--import", str(bad), "--db", db])
    assert res.exit_code == 2 and "outside" in res.stderr
    # LINEAGE_MISMATCH and INDEX_NOT_READY.
    other = str(tmp_path / "other.db")
    assert (
        runner.invoke(
            app, ["index", str(EXAMPLES), "--db", other, "--embedder", "hashing-64"]
        ).exit_code
        == 0
    )
    with (
        recall.open(other, embedder="hashing-512") as mem,
        pytest.raises(recall.TrustRefusal) as err,
    ):
        mem.search(RATE)
    assert err.value.code == "LINEAGE_MISMATCH"
    empty = tmp_path / "empty.db"
    gone = write_corpus(tmp_path / "no-notes", {"only.md": "# Only\n\nA note to remove.\n"})
    with recall.open(empty, embedder="hashing-512") as mem:
        assert mem.index(gone).ok
        (gone / "only.md").unlink()
        # Its one note removed: the store is there, with nothing in it.
        assert mem.index(gone, allow_prune=True).removed == ["only.md"]
    res = runner.invoke(app, ["search", RATE, "--db", str(empty), "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["code"] == "INDEX_NOT_READY"
    res = runner.invoke(app, ["search", RATE, "--db", other, "--embedder", "hashing-512"])
    assert res.exit_code == 3 and "LINEAGE_MISMATCH" in res.stderr
    # Usage: exactly one of QUERIES, --import, --export.
    assert runner.invoke(app, ["calibrate", "--db", db]).exit_code == 2


def test_cli_uncertified_fit_exits_1_and_stale_refuses(tmp_path: Path, corpus: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    write_corpus(corpus, {f"n{i}.md": f"# Note {i}\n\nTopic {i} text.\n" for i in range(8)})
    assert runner.invoke(app, ["index", str(corpus), "--db", db]).exit_code == 0
    few = tmp_path / "few.jsonl"
    few.write_text(
        '{"query": "topic 1", "answerable": true}\n{"query": "unrelated", "answerable": false}\n'
    )
    res = runner.invoke(app, ["calibrate", str(few), "--db", db])
    flat = " ".join(res.stdout.split())
    assert res.exit_code == 1 and "not certified" in flat and "at least 20" in flat
    with recall.open(db) as mem:
        record = mem.export_calibration()
    record["certified"] = True
    certified = tmp_path / "cert.json"
    certified.write_text(json.dumps(record))
    assert runner.invoke(app, ["calibrate", "--import", str(certified), "--db", db]).exit_code == 0
    assert runner.invoke(app, ["search", "topic", "--db", db]).exit_code == 0
    for i in range(3):
        (corpus / f"n{i}.md").write_text(f"# Note {i}\n\nRewritten.\n")
    assert runner.invoke(app, ["index", str(corpus), "--db", db]).exit_code == 0
    res = runner.invoke(app, ["search", "topic", "--db", db, "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["code"] == "CALIBRATION_STALE"


@given(
    st.lists(st.floats(0, 1).map(lambda x: round(x, 2)), max_size=30),
    st.lists(st.floats(0, 1).map(lambda x: round(x, 2)), max_size=30),
)
def test_leave_one_out_is_a_refit_without_each_sample(
    answerable: list[float], unanswerable: list[float]
) -> None:
    """The O(n log n) leave-one-out rates equal refitting the threshold without each sample."""
    false_conf = sum(
        u >= threshold_for(answerable, unanswerable[:i] + unanswerable[i + 1 :])
        for i, u in enumerate(unanswerable)
    )
    false_abst = sum(
        a < threshold_for(answerable[:i] + answerable[i + 1 :], unanswerable)
        for i, a in enumerate(answerable)
    )
    assert _leave_one_out(answerable, unanswerable) == (
        false_conf / len(unanswerable) if unanswerable else None,
        false_abst / len(answerable) if answerable else None,
    )
