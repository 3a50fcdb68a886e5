"""ONNX embedders (SPEC §4): `onnx:DIR` on tiny models the suite builds, run by onnxruntime, and
the built-in default `minilm-l6` against pinned vectors and an independent reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import recall
from recall import models
from recall.cli import app
from recall.embedders import embed_queries
from recall.models import OnnxEmbedder

from .conftest import write_corpus
from .onnx_models import build_embedder, build_judge, reference_embedding

WORDS = [
    "alpha", "beta", "gamma", "delta", "rate", "limit", "broker", "queue", "release", "weekly",
    "query:", "passage:",
]  # fmt: skip


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, np.ndarray]:
    table = build_embedder(tmp_path / "tiny", WORDS)
    return tmp_path / "tiny", table


def _ids(vocab_words: list[str], text: str) -> list[int]:
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *vocab_words])}
    return [vocab["[CLS]"], *(vocab.get(w, 1) for w in text.lower().split()), vocab["[SEP]"]]


def test_mean_pooling_over_the_mask_and_l2(tiny: tuple[Path, np.ndarray]) -> None:
    directory, table = tiny
    e = OnnxEmbedder(directory)
    assert (e.dim, e.name) == (8, f"onnx:{directory.resolve()}")
    texts = ["alpha beta", "rate limit broker queue release weekly gamma", "delta"]
    out = e.embed(texts)
    assert out.shape == (3, 8) and out.dtype == np.float32
    for text, row in zip(texts, out):
        np.testing.assert_allclose(row, reference_embedding(table, _ids(WORDS, text)), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_bucketed_batches_equal_one_by_one(tiny: tuple[Path, np.ndarray]) -> None:
    e = OnnxEmbedder(tiny[0])
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(WORDS[:10], size=int(n))) for n in rng.integers(1, 60, 75)]
    together = e.embed(texts)  # 75 texts: three length-sorted batches of mixed padding
    alone = np.vstack([e.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_pooled_output_cls_pooling_and_prefixes(tmp_path: Path) -> None:
    table = build_embedder(tmp_path / "pooled", WORDS, pooled=True)
    pooled = OnnxEmbedder(tmp_path / "pooled")  # first output is [batch, dim]: used as is
    ids = _ids(WORDS, "alpha gamma")
    want = table[ids].mean(axis=0)
    np.testing.assert_allclose(
        pooled.embed(["alpha gamma"])[0], want / np.linalg.norm(want), atol=1e-5
    )

    build_embedder(tmp_path / "cls", WORDS)
    (tmp_path / "cls" / "recall-embedder.json").write_text(
        json.dumps({"pooling": "cls", "query_prefix": "query: ", "passage_prefix": "passage: "})
    )
    cls = OnnxEmbedder(tmp_path / "cls")
    emb = table[_ids(WORDS, "passage: alpha gamma")]
    first = emb[0] + emb.mean(axis=0)
    np.testing.assert_allclose(
        cls.embed(["alpha gamma"])[0], first / np.linalg.norm(first), atol=1e-5
    )
    assert not np.allclose(cls.embed(["alpha"]), cls.embed_query(["alpha"]))
    np.testing.assert_allclose(embed_queries(cls, ["alpha"]), cls.embed_query(["alpha"]))


def test_int32_inputs_and_inputs_recall_cannot_feed(tmp_path: Path) -> None:
    table = build_embedder(tmp_path / "i32", WORDS, int32=True)
    got = OnnxEmbedder(tmp_path / "i32").embed(["rate limit"])[0]
    np.testing.assert_allclose(
        got, reference_embedding(table, _ids(WORDS, "rate limit")), atol=1e-5
    )
    build_embedder(tmp_path / "pos", WORDS, extra_input="position_ids")
    with pytest.raises(recall.EmbedderError, match="position_ids") as info:
        OnnxEmbedder(tmp_path / "pos")
    assert str(tmp_path / "pos" / "model.onnx") in str(info.value)


def test_fingerprint_follows_the_files(tiny: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    directory, _ = tiny
    same = OnnxEmbedder(directory).fingerprint
    assert OnnxEmbedder(directory).fingerprint == same
    build_embedder(tmp_path / "other", WORDS, seed=1)
    assert OnnxEmbedder(tmp_path / "other").fingerprint != same
    (directory / "recall-embedder.json").write_text('{"max_tokens": 64}')
    assert OnnxEmbedder(directory).fingerprint != same, "the config changes the vectors"


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("no-dir", "does not exist"),
        ("no-model", "model.onnx is missing"),
        ("no-tokenizer", "tokenizer.json is missing"),
        ("corrupt-model", "is not a loadable ONNX model"),
        ("corrupt-tokenizer", "is not a tokenizer.json"),
        ("bad-config-json", "is not valid JSON"),
        ("unknown-config-key", "unknown key 'pool'"),
        ("bad-pooling", "pooling must be mean, cls or none"),
        ("bad-output", "names output 'nope'"),
    ],
)
def test_broken_model_directories_fail_loudly(
    tiny: tuple[Path, np.ndarray], damage: str, expected: str
) -> None:
    directory, _ = tiny
    named = directory
    if damage == "no-dir":
        named = directory / "absent"
    elif damage == "no-model":
        named = directory / "model.onnx"
        named.unlink()
    elif damage == "no-tokenizer":
        named = directory / "tokenizer.json"
        named.unlink()
    elif damage == "corrupt-model":
        named = directory / "model.onnx"
        data = bytearray(named.read_bytes())
        data[len(data) // 3 : len(data) // 3 + 64] = b"\xff" * 64
        named.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "corrupt-tokenizer":
        named = directory / "tokenizer.json"
        named.write_text('{"model": 3}')
    else:
        named = directory / "recall-embedder.json"
        named.write_text(
            {
                "bad-config-json": "{pooling: mean",
                "unknown-config-key": '{"pool": "mean"}',
                "bad-pooling": '{"pooling": "max"}',
                "bad-output": '{"output": "nope"}',
            }[damage]
        )
    with pytest.raises(recall.EmbedderError, match=expected) as info:
        recall.get_embedder(f"onnx:{named if damage == 'no-dir' else directory}")
    assert str(named.resolve() if named.exists() else named) in str(info.value)


def test_onnx_store_remembers_its_model(
    tiny: tuple[Path, np.ndarray], tmp_path: Path, corpus: Path
) -> None:
    write_corpus(corpus, {"a.md": "alpha beta gamma", "b.md": "rate limit broker queue"})
    spec = f"onnx:{tiny[0]}"
    with recall.open(tmp_path / "m.db", embedder=spec) as mem:
        mem.index(corpus)
        assert mem.stats().embedder == f"onnx:{tiny[0].resolve()}"
    with recall.open(tmp_path / "m.db") as mem:  # reopened: the store names its model
        res = mem.search("rate limit queue", mode="development")
        assert res.hits[0].provenance.file == "b.md"
        assert res.hits[0].score > res.hits[1].score


# --- the built-in default ------------------------------------------------------------------

#: First 8 dimensions, then the mean of v[i]·i/384, of the L2-normalised mean-pooled vectors.
#: Computed once with onnx's pure-Python ReferenceEvaluator running the shipped model.onnx
#: (token ids from tokenizer.json, pooling and L2 in numpy): an implementation independent of
#: onnxruntime. `test_minilm_matches_the_reference_evaluator` re-derives one of them live.
PINNED = {
    "The cat sits on the mat.": [
        0.130867, -0.032577, -0.022619, 0.03991, -0.036047, 0.041354, 0.03233, 0.040244,
        -0.092273,
    ],
    "How many requests per second may a client send?": [
        0.012956, -0.025255, -0.055756, -0.009866, -0.07329, -0.075403, 0.026543, -0.019543,
        0.316333,
    ],
    "Releases ship to production every Tuesday and Thursday.": [
        -0.014258, -0.062243, 0.006364, -0.002206, -0.021026, 0.041084, -0.081556, -0.036771,
        0.518671,
    ],
}  # fmt: skip


def _summary(v: np.ndarray) -> np.ndarray:
    return np.append(v[:8], v @ np.arange(384) / 384)


@pytest.fixture(scope="module")
def minilm() -> OnnxEmbedder:
    e = recall.get_embedder("minilm-l6")
    assert isinstance(e, OnnxEmbedder)
    return e


@pytest.fixture(scope="module")
def minilm_fp32() -> OnnxEmbedder:
    """The built-in computed in fp32, as stores indexed before int8 compute keep it."""
    spec = models.BUILTINS["minilm-l6"]
    return OnnxEmbedder(
        models.builtin_dir("minilm-l6"),
        name="minilm-l6",
        model_file=models.builtin_model_file(spec),
    )


def test_minilm_fp32_vectors_match_pinned_values(minilm_fp32: OnnxEmbedder) -> None:
    assert (minilm_fp32.name, minilm_fp32.dim, minilm_fp32.int8) == ("minilm-l6", 384, False)
    vectors = minilm_fp32.embed(list(PINNED))
    for row, want in zip(vectors, PINNED.values()):
        np.testing.assert_allclose(_summary(row), want, atol=1e-4)
    # Embedded with other texts of other lengths: the same vectors.
    mixed = minilm_fp32.embed(["short", *PINNED, "a much longer passage " * 20])
    np.testing.assert_allclose(mixed[1:4], vectors, atol=1e-5)


def _reference_vector(model: Any, text: str, ids: list[int], ops: list[Any]) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    feed = np.array([ids], dtype=np.int64)
    (hidden,) = ReferenceEvaluator(model, new_ops=ops).run(
        ["last_hidden_state"],
        {"input_ids": feed, "attention_mask": np.ones_like(feed), "token_type_ids": 0 * feed},
    )
    want = hidden[0].mean(axis=0)
    return np.asarray(want / np.linalg.norm(want))


def test_minilm_fp32_matches_the_reference_evaluator(minilm_fp32: OnnxEmbedder) -> None:
    onnx = pytest.importorskip("onnx")
    spec = models.BUILTINS["minilm-l6"]
    text = "Which message broker runs our background jobs?"
    want = _reference_vector(
        onnx.load(str(models.builtin_model_file(spec))),
        text,
        minilm_fp32._encode([text], "")[0],
        [],
    )
    np.testing.assert_allclose(minilm_fp32.embed([text])[0], want, atol=1e-4)


def test_minilm_int8_matches_the_reference_evaluator(minilm: OnnxEmbedder) -> None:
    """The default computes in int8: onnx's pure-Python evaluator runs the rewritten graph
    (standard DynamicQuantizeLinear and MatMulInteger), independently of onnxruntime's fused
    integer kernels."""
    onnx = pytest.importorskip("onnx")
    from recall.int8_graph import int8_graph

    assert (minilm.name, minilm.dim, minilm.int8) == ("minilm-l6", 384, True)
    spec = models.BUILTINS["minilm-l6"]
    graph = onnx.load_from_string(int8_graph(models.builtin_model_file(spec).read_bytes())[0])
    for text in list(PINNED)[:2]:
        want = _reference_vector(graph, text, minilm._encode([text], "")[0], [])
        np.testing.assert_allclose(minilm.embed([text])[0], want, atol=1e-5)


def test_minilm_int8_agrees_with_fp32_and_is_fingerprinted_apart(
    minilm: OnnxEmbedder, minilm_fp32: OnnxEmbedder
) -> None:
    texts = [*PINNED, *PARAPHRASE_CORPUS.values()]
    cosines = (minilm.embed(texts) * minilm_fp32.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.98, cosines
    assert minilm.fingerprint != minilm_fp32.fingerprint


@pytest.mark.parametrize("compute", ["int8", "fp32"])
def test_a_texts_vector_depends_on_nothing_else_in_the_call(
    compute: str, minilm: OnnxEmbedder, minilm_fp32: OnnxEmbedder
) -> None:
    """Each text runs on its own, so the activation scale int8 compute picks is its own; the
    query session (every core) and the workers (a share of them each) give the same bits."""
    model = minilm if compute == "int8" else minilm_fp32
    alone = np.vstack([model.embed([text]) for text in PINNED])  # the query session
    many = ["short", *PINNED, "a much longer passage " * 20] * 6  # shared over every worker
    mixed = model.embed(many)
    assert len(model._sessions) == min(models.cores(), models.MAX_WORKERS)
    for start in range(0, len(many), 5):
        assert np.array_equal(mixed[start + 1 : start + 4], alone)
    assert np.array_equal(model.embed_query(["short"])[0], model.embed(["short"])[0])


def test_a_store_made_in_fp32_keeps_fp32_and_new_stores_get_int8(
    minilm_fp32: OnnxEmbedder, tmp_path: Path, corpus: Path
) -> None:
    write_corpus(corpus, {"a.md": "# Broker\nWe run background jobs on RabbitMQ."})
    with recall.open(tmp_path / "old.db", embedder=minilm_fp32) as mem:
        mem.index(corpus)
    for spec in (None, "minilm-l6"):
        with recall.open(tmp_path / "old.db", embedder=spec) as mem:
            assert isinstance(mem.embedder, OnnxEmbedder) and not mem.embedder.int8
            assert mem.embedder.fingerprint == minilm_fp32.fingerprint
            mem.index(corpus)  # the same binding: no mismatch
            assert mem.search("Which broker runs jobs?", mode="development").hits
    with recall.open(tmp_path / "new.db", embedder="minilm-l6") as mem:
        mem.index(corpus)
        assert isinstance(mem.embedder, OnnxEmbedder) and mem.embedder.int8
        assert mem.stats().embedder_fingerprint == mem.embedder.fingerprint


def test_builtin_files_are_pinned_and_licensed() -> None:
    spec = models.BUILTINS["minilm-l6"]
    assert models.sha256_file(models.builtin_model_file(spec)) == spec.model_sha256
    folder = models.builtin_dir("minilm-l6")
    assert models.sha256_file(folder / "tokenizer.json") == spec.tokenizer_sha256
    assert "Apache License" in (folder / "LICENSE").read_text()


def test_a_damaged_builtin_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(models, "builtin_model_file", lambda spec: fake)
    with pytest.raises(recall.EmbedderError, match="expected 8199be6f") as info:
        models.load_builtin("minilm-l6")
    assert str(fake) in str(info.value) and "reinstall" in str(info.value)


def test_minilm_is_the_default_for_new_stores(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECALL_EMBEDDER")
    assert recall.DEFAULT_EMBEDDER == "minilm-l6" == recall.get_embedder(None).name
    write_corpus(corpus, {"a.md": "# Broker\nWe run background jobs on RabbitMQ."})
    with recall.open(tmp_path / "m.db") as mem:
        mem.index(corpus)
        assert mem.stats().embedder == "minilm-l6"
    monkeypatch.setenv("RECALL_EMBEDDER", "hashing-64")  # names the default of new stores only
    with recall.open(tmp_path / "m.db") as mem:
        assert mem.embedder.name == "minilm-l6"


PARAPHRASE_CORPUS = {
    "broker.md": "# Message broker\nBackground jobs are queued in RabbitMQ; Kafka was rejected "
    "because the team lacks the operational experience to run it.",
    "passwords.md": "# Password storage\nCustomer passwords are hashed with argon2id using a "
    "memory cost of 64 MiB; bcrypt hashes are upgraded at the next login.",
    "oncall.md": "# On-call\nThe primary engineer is paged first; after fifteen minutes without "
    "acknowledgement the secondary engineer is paged.",
    "releases.md": "# Release schedule\nWe deploy to production every Tuesday and Thursday "
    "after the integration suite passes.",
    "retention.md": "# Log retention\nApplication logs are kept for thirty days, audit logs "
    "for one year.",
}


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("How do we keep user credentials safe at rest?", "passwords.md"),
        ("Who gets woken up when the pager goes off at night?", "oncall.md"),
    ],
)
def test_paraphrase_found_by_minilm_not_by_hashing(
    tmp_path: Path, corpus: Path, question: str, answer: str
) -> None:
    write_corpus(corpus, PARAPHRASE_CORPUS)
    firsts = {}
    for name in ("minilm-l6", "hashing-512"):
        with recall.open(tmp_path / f"{name}.db", embedder=name) as mem:
            mem.index(corpus)
            query = embed_queries(mem.embedder, [question])[0]
            docs = mem.embedder.embed(
                [f"{Path(f).stem}\n{t}" for f, t in PARAPHRASE_CORPUS.items()]
            )
            firsts[name] = list(PARAPHRASE_CORPUS)[int(np.argmax(docs @ query))]
            res = mem.search(question, mode="development")
            if name == "minilm-l6":
                assert res.hits[0].provenance.file == answer
                assert res.hits[0].retrieval and res.hits[0].retrieval.dense_rank == 1
    assert firsts == {"minilm-l6": answer, "hashing-512": firsts["hashing-512"]}
    assert firsts["hashing-512"] != answer, "hashing has no notion of a paraphrase"


def test_env_names_onnx_default(
    tiny: tuple[Path, np.ndarray], tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_EMBEDDER", f"onnx:{tiny[0]}")
    write_corpus(corpus, {"a.md": "alpha"})
    with recall.open(tmp_path / "m.db") as mem:
        mem.index(corpus)
        assert mem.stats().embedder == f"onnx:{tiny[0].resolve()}"


# --- recall models -------------------------------------------------------------------------


def test_cli_models_list_and_check(tiny: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["models", "list", "--json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    assert row["name"] == "minilm-l6" and row["default"] and row["problem"] is None
    assert Path(row["model"]).is_file() and "Apache-2.0" in row["licence"]

    res = runner.invoke(app, ["models", "check", str(tiny[0]), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["dim"] == 8 and abs(data["norm"] - 1.0) < 1e-5
    assert data["passages_per_second"] > 0 and data["query_ms_p50"] > 0

    res = runner.invoke(app, ["models", "check", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_cli_models_quantize_reports_the_change(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    build_embedder(tmp_path / "fp32", WORDS, dim=16, matmul=True)
    out = tmp_path / "int8"
    args = ["models", "quantize", str(tmp_path / "fp32"), str(out)]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (out / "model.onnx").is_file() and (out / "tokenizer.json").is_file()
    assert report["bytes_after"] < report["bytes_before"], "the projection weights became int8"
    assert 0.9 < report["cosine_mean"] <= 1.0 + 1e-6
    assert report["questions"] >= 40 and report["passages"] > 0
    assert report["candidate"]["embedder"] == f"onnx:{out}"
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "not empty" in again.output


def test_cli_models_quantize_a_judge_compares_its_probabilities(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from recall.judge import Judge

    build_judge(tmp_path / "fp32", WORDS, entailing=["rate"], config={"max_tokens": 64})
    out = tmp_path / "int8"
    args = ["models", "quantize", str(tmp_path / "fp32"), str(out), "--judge"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["judge"] is True and report["pairs"] >= 40 * 4
    # The config travels with the model, and the folder is a judge recall loads.
    assert json.loads((out / "recall-judge.json").read_text()) == {"max_tokens": 64}
    assert Judge(out).name == f"onnx:{out}"
    assert report["probability_change_max"] <= 0.01 and report["crossed_half"] == 0.0
    assert report["candidate"]["pairs_per_second"] > 0
    shown = CliRunner().invoke(app, [*args[:3], str(tmp_path / "again"), "--judge"])
    assert shown.exit_code == 0 and "pairs on the other side of 0.5: 0.0%" in shown.stdout
    not_a_judge = CliRunner().invoke(app, [*args[:2], str(tmp_path / "none"), str(tmp_path / "x")])
    assert not_a_judge.exit_code == 2
