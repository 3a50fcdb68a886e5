"""The entailment judge (SPEC §6) on a tiny ONNX cross-encoder the suite builds and runs with
onnxruntime: only `ok` hits are judged, one pass each; those below 0.5 become `not_entailed`;
nothing left means a near-miss abstention; an unavailable judge is a strict-mode refusal."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

import recall
from recall.cli import app
from recall.judge import Judge

from .conftest import write_corpus
from .onnx_models import build_judge
from .test_search import certified

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
WORDS = ["broker", "rabbitmq", "kafka", "jobs", "background", "which", "run", "answer"]
CORPUS = {
    "broker.md": "# Broker\nbroker background jobs run on rabbitmq answer",
    "kafka.md": "# Kafka\nbroker background jobs kafka evaluation notes",
    "old.md": "---\nvalid_until: 2020-01-01\n---\n# Old\nbroker background jobs run",
}
QUERY = "broker for the background jobs"


@pytest.fixture
def judge_dir(tmp_path: Path) -> Path:
    build_judge(tmp_path / "judge", WORDS, entailing=["answer"])
    return tmp_path / "judge"


class Counting:
    """A real judge that counts the passages it is asked about."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.passages: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def score(self, question: str, passages: Sequence[str]) -> npt.NDArray[np.float64]:
        self.passages.extend(passages)
        return self.inner.score(question, passages)


def _store(tmp_path: Path, corpus: Path, judge: object, threshold: float = 0.2) -> recall.Memory:
    write_corpus(corpus, CORPUS)
    mem = recall.open(tmp_path / "m.db", judge=judge)  # type: ignore[arg-type]
    mem.index(corpus, now=NOW)
    certified(mem, threshold=threshold)
    return mem


def test_scores_are_probabilities(judge_dir: Path) -> None:
    judge = Judge(judge_dir)
    probs = judge.score("which broker", ["rabbitmq answer", "kafka", "answer kafka"])
    np.testing.assert_allclose(probs, 1 / (1 + np.exp([-4.0, 4.0, -4.0])), atol=1e-6)


def test_two_label_models_need_the_entailment_index(tmp_path: Path) -> None:
    build_judge(tmp_path / "two", WORDS, entailing=["answer"], two_labels=True)
    with pytest.raises(recall.JudgeError, match="outputs 2 logits") as info:
        Judge(tmp_path / "two")
    assert "recall-judge.json" in str(info.value)
    build_judge(tmp_path / "two", WORDS, entailing=["answer"], two_labels=True, config={"label": 1})
    probs = Judge(tmp_path / "two").score("q", ["answer", "kafka"])
    np.testing.assert_allclose(probs, 1 / (1 + np.exp([-8.0, 8.0])), atol=1e-6)


def test_a_bias_moves_a_single_logit_before_the_sigmoid(tmp_path: Path) -> None:
    build_judge(tmp_path / "plain", WORDS, entailing=["answer"])
    plain = Judge(tmp_path / "plain").score("q", ["answer", "kafka"])
    np.testing.assert_allclose(plain, 1 / (1 + np.exp([-4.0, 4.0])), atol=1e-6)
    build_judge(tmp_path / "biased", WORDS, entailing=["answer"], config={"bias": 5})
    biased = Judge(tmp_path / "biased").score("q", ["answer", "kafka"])
    np.testing.assert_allclose(biased, 1 / (1 + np.exp([-9.0, -1.0])), atol=1e-6)
    for bad in ("1", True, float("inf")):
        build_judge(tmp_path / "bad", WORDS, entailing=["answer"], config={"bias": bad})
        with pytest.raises(recall.JudgeError, match="bias"):
            Judge(tmp_path / "bad")


def test_only_ok_hits_are_judged_and_misses_demoted(
    tmp_path: Path, corpus: Path, judge_dir: Path
) -> None:
    counting = Counting(Judge(judge_dir))
    with _store(tmp_path, corpus, counting) as mem:
        plain = mem.search(QUERY, now=NOW)
        assert counting.passages == [], "no judging unless asked"
        ok_before = [h.provenance.file for h in plain.hits if h.ok]
        assert sorted(ok_before) == ["broker.md", "kafka.md"]
        assert {h.provenance.file: h.verdict for h in plain.hits}["old.md"] == "expired"

        res = mem.search(QUERY, now=NOW, entail=True)
    assert len(counting.passages) == 2, "one pass per ok hit, the expired one is not judged"
    verdicts = {h.provenance.file: (h.verdict, h.entailment) for h in res.hits}
    assert verdicts["broker.md"][0] == "ok" and verdicts["broker.md"][1] > 0.5
    assert verdicts["kafka.md"][0] == "not_entailed" and verdicts["kafka.md"][1] < 0.5
    assert verdicts["old.md"] == ("expired", None)
    assert [h.verdict for h in res.hits][:2] == ["ok", "not_entailed"]
    assert not res.abstained and res.timings_ms["judge"] > 0


def test_nothing_entailed_abstains_with_a_near_miss_reason(tmp_path: Path, corpus: Path) -> None:
    build_judge(tmp_path / "strict-judge", WORDS, entailing=[])
    with _store(tmp_path, corpus, tmp_path / "strict-judge") as mem:
        res = mem.search(QUERY, now=NOW, entail=True)
    assert res.abstained and "near miss" in res.reason
    assert res.hits[0].verdict == "not_entailed"
    assert res.reason.startswith(f"the best match {res.hits[0].provenance.file}")
    assert res.to_dict()["hits"][0]["entailment"] < 0.5


def test_unavailable_judge_refuses_in_strict_and_degrades_in_development(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-judge"
    monkeypatch.setenv("RECALL_JUDGE", str(missing))
    with _store(tmp_path, corpus, None) as mem:
        with pytest.raises(recall.TrustRefusal) as info:
            mem.search(QUERY, now=NOW, entail=True)
        assert info.value.code == "DEPENDENCY_UNAVAILABLE"
        assert str(missing) in info.value.message and "does not exist" in info.value.message
        res = mem.search(QUERY, now=NOW, entail=True, mode="development")
        assert res.trust_state == "degraded" and res.timings_ms["judge"] == 0.0
        assert all(h.entailment is None for h in res.hits)
        assert mem.search(QUERY, now=NOW).trust_state == "trusted"


def test_corrupted_judge_model_is_refused_with_its_path(
    tmp_path: Path, corpus: Path, judge_dir: Path
) -> None:
    model = judge_dir / "model.onnx"
    model.write_bytes(model.read_bytes()[:40])
    with pytest.raises(recall.JudgeError, match="not a loadable ONNX model") as info:
        Judge(judge_dir)
    assert str(model) in str(info.value)
    with _store(tmp_path, corpus, judge_dir) as mem, pytest.raises(recall.TrustRefusal) as ref:
        mem.search(QUERY, now=NOW, entail=True)
    assert ref.value.code == "DEPENDENCY_UNAVAILABLE" and str(model) in ref.value.message


def test_cli_entail(tmp_path: Path, corpus: Path, judge_dir: Path) -> None:
    _store(tmp_path, corpus, None).close()
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    base = ["search", QUERY, "--db", db, "--as-of", "2026-11-30", "--json"]
    res = runner.invoke(app, [*base, "--entail", "--judge", str(judge_dir)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [h["verdict"] for h in data["hits"]][:2] == ["ok", "not_entailed"]
    res = runner.invoke(app, [*base, "--entail"], env={"RECALL_JUDGE": str(tmp_path / "none")})
    assert res.exit_code == 3 and "DEPENDENCY_UNAVAILABLE" in res.output
    # Nothing configured: recall's own judge answers.
    res = runner.invoke(app, [*base, "--entail"], env={"RECALL_JUDGE": ""})
    assert res.exit_code == 0, res.output
    assert all(
        h["entailment"] is not None for h in json.loads(res.stdout)["hits"] if h["verdict"] == "ok"
    )


def test_the_shipped_judge_runs_when_none_is_configured(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recall's own judge (training/judge/README.md) is what `entail` runs by default; the
    folder records what made it, and an install without it says what to pass instead."""
    import recall.judge as judging

    monkeypatch.delenv("RECALL_JUDGE", raising=False)
    made = json.loads((judging.SHIPPED / "training.json").read_text(encoding="utf-8"))
    assert len(made["pairs_sha256"]) == 64 and made["seed"] == 0
    judge = judging.get_judge(None)
    assert judge.name == f"onnx:{judging.SHIPPED}"
    # One question, its answer and a sibling subject's: the answer comes first.
    answer, other = judge.score(
        "How long are audit logs kept?",
        [
            "# Retention\n\nAudit logs are kept for seven years in the archive bucket, then "
            "deleted by the lifecycle rule.",
            "# Retention\n\nInvoices are kept for ten years, as the tax office requires, in the "
            "finance archive.",
        ],
    )
    assert answer > other
    with _store(tmp_path, corpus, None) as mem:
        res = mem.search(QUERY, now=NOW, entail=True)
        assert res.timings_ms["judge"] > 0.0
        assert all(
            h.entailment is not None for h in res.hits if h.verdict in ("ok", "not_entailed")
        )
    assert judging.available(None)
    monkeypatch.setattr(judging, "SHIPPED", tmp_path / "not-installed")
    assert not judging.available(None) and judging.available(tmp_path / "named")
    with pytest.raises(recall.JudgeError, match="no judge of its own") as info:
        judging.get_judge(None)
    assert "--judge" in str(info.value) and "RECALL_JUDGE" in str(info.value)
