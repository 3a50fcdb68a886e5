"""A model's optimised graph saved once (`recall.graphs`): a session opened on it gives the same
vectors bit for bit, a damaged graph is saved again, and a cache that cannot be used never
stops a model from loading."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from recall import graphs, int8_graph, models
from recall.models import OnnxEmbedder, load_builtin

from .onnx_models import build_embedder

TEXTS = [
    "what do we charge for EDI onboarding?",
    "The cache cut p99 latency by 40% after version 3 shipped; memory use did not change. " * 4,
    "rate limit",
]


def _vectors(embedder: OnnxEmbedder) -> np.ndarray:
    return np.vstack([embedder.embed(TEXTS), embedder.embed_query(TEXTS)])


def _count_saves(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    saved: list[Path] = []
    real = graphs._save

    def counting(ort: object, model: Path, *rest: object) -> Path:
        saved.append(model)
        return real(ort, model, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(graphs, "_save", counting)
    return saved


def test_the_default_models_saved_graph_gives_its_vectors_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: no cache folder to save in, so the session optimises the shipped file.
    unusable = tmp_path / "a-file"
    unusable.write_text("")
    monkeypatch.setenv("RECALL_CACHE_DIR", str(unusable))
    reference = _vectors(load_builtin("minilm-l6"))
    assert not list(tmp_path.glob("**/*.data"))

    monkeypatch.setenv("RECALL_CACHE_DIR", str(tmp_path / "cache"))
    saved = _count_saves(monkeypatch)
    first = load_builtin("minilm-l6")
    (folder,) = graphs.graph_folder().iterdir()
    assert len(saved) == 1
    assert folder.name.startswith(models.BUILTINS["minilm-l6"].model_sha256[:32])
    assert {p.name for p in folder.iterdir()} == {graphs.GRAPH, graphs.WEIGHTS, graphs.SEAL}
    again = load_builtin("minilm-l6")
    assert len(saved) == 1, "the second open uses the saved graph"
    assert np.array_equal(_vectors(first), reference)
    assert np.array_equal(_vectors(again), reference)
    assert first.fingerprint == again.fingerprint
    assert first.int8 and f"-int8.{int8_graph.VERSION}-ort" in folder.name

    # The fp32 graph of the same model (a store indexed before int8 compute) is saved beside
    # it; neither removes the other.
    spec = models.BUILTINS["minilm-l6"]
    OnnxEmbedder(models.builtin_dir("minilm-l6"), model_file=models.builtin_model_file(spec))
    assert len(saved) == 2 and folder.is_dir()
    assert len(list(graphs.graph_folder().iterdir())) == 2
    load_builtin("minilm-l6")
    assert len(saved) == 2


def test_a_damaged_graph_is_saved_again_and_an_unusable_cache_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_embedder(tmp_path / "tiny", ["alpha", "beta", "gamma"], dim=64, matmul=True)
    monkeypatch.setenv("RECALL_CACHE_DIR", str(tmp_path / "cache"))
    saved = _count_saves(monkeypatch)
    want = OnnxEmbedder(tmp_path / "tiny").embed(["alpha beta", "gamma"])
    (folder,) = graphs.graph_folder().iterdir()
    assert len(saved) == 1

    # Weights changed behind the seal's back: the seal no longer matches, so it is saved again.
    weights = folder / graphs.WEIGHTS
    data = bytearray(weights.read_bytes())
    data[-4:] = b"\x00\x00\x80\x7f"  # the last weight becomes infinity
    weights.write_bytes(bytes(data))
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    got = OnnxEmbedder(tmp_path / "tiny").embed(["alpha beta", "gamma"])
    assert len(saved) == 2 and np.array_equal(got, want)

    # A graph left by another onnxruntime version of the same model is removed on saving.
    prefix = folder.name.split("-ort")[0]
    stale = graphs.graph_folder() / f"{prefix}-ort0.0.1-cpu"
    stale.mkdir()
    loose = graphs.graph_folder() / f"{prefix}-ort0.0.2-cpu.onnx"
    loose.write_bytes(b"left by another version")
    # Work folders of saves that were killed: an old one goes, a recent one may still be in use.
    killed, saving = (graphs.graph_folder() / f".{folder.name}-{n}" for n in ("a", "b"))
    for work in (killed, saving):
        work.mkdir()
        (work / graphs.WEIGHTS).write_bytes(b"partial")
    os.utime(killed, (1_000_000_000, 1_000_000_000))
    (folder / graphs.SEAL).unlink()
    OnnxEmbedder(tmp_path / "tiny")
    assert len(saved) == 3 and folder.is_dir()
    assert not stale.exists() and not loose.exists()
    assert not killed.exists() and saving.is_dir()

    # A cache folder that is a file: nothing is saved and the model loads from its own file.
    unusable = tmp_path / "not-a-folder"
    unusable.write_text("")
    monkeypatch.setenv("RECALL_CACHE_DIR", str(unusable))
    got = OnnxEmbedder(tmp_path / "tiny").embed(["alpha beta", "gamma"])
    assert np.array_equal(got, want)
    assert graphs.saved_graph(onnxruntime, tmp_path / "tiny" / "model.onnx") is None
