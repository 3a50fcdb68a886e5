"""The hashing embedder: deterministic, normalised, and equal to a pure-Python reading of its
definition (SPEC §4)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import recall
from recall.embedders import HashingEmbedder

MASK = (1 << 64) - 1


def _token_hash(token: str) -> int:
    h = 0xCBF29CE484222325
    for b in token.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & MASK
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & MASK
    return h ^ (h >> 31)


def oracle(text: str, dim: int) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float64)
    for h in {_token_hash(t.lower()) for t in re.split(r"[^\w]+", text) if t}:
        v[h % dim] += -1.0 if h >> 63 else 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


# Latin-1 plus a few scripts where Unicode "alphanumeric" means the same in Rust and Python.
_ALPHABET = st.characters(codec="latin-1") | st.sampled_from("αβγΣσςДжл中文字_-·")


@given(st.text(_ALPHABET, max_size=200), st.sampled_from([8, 64, 256]))
def test_matches_python_oracle(text: str, dim: int) -> None:
    got = HashingEmbedder(dim).embed([text])[0]
    np.testing.assert_allclose(got, oracle(text, dim), atol=1e-6)


def test_shape_dtype_and_norm() -> None:
    e = recall.get_embedder("hashing-512")
    assert isinstance(e, recall.Embedder)
    out = e.embed(["alpha beta", "", "Gamma, gamma!"])
    assert out.shape == (3, e.dim) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out[[0, 2]], axis=1), 1.0)
    assert not out[1].any()


@pytest.mark.parametrize(
    ("spec", "name"), [("hashing-64", "hashing-64"), (" hashing-512 ", "hashing-512")]
)
def test_names(spec: str, name: str) -> None:
    assert recall.get_embedder(spec).name == name


@pytest.mark.parametrize("spec", ["hashing-4", "hashing-100000", "hashing", "onnx", "hashing-x"])
def test_bad_names(spec: str) -> None:
    with pytest.raises(recall.EmbedderError):
        recall.get_embedder(spec)


def test_fingerprint_differs_by_dimension() -> None:
    assert HashingEmbedder(64).fingerprint != HashingEmbedder(128).fingerprint
    assert HashingEmbedder(64).fingerprint == HashingEmbedder(64).fingerprint
