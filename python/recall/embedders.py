"""Embedders: the `Embedder` protocol and the built-in `hashing-D` family (SPEC §4).

Owns: embedder names, dimensions and fingerprints, and turning a name into an embedder. The
hashing itself runs in the Rust core (`_core.hashing_embed`). Does not own: storing vectors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from recall import _core
from recall.errors import EmbedderError

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "HashingEmbedder", "get_embedder"]

#: The embedded default: needs no model. 512 dimensions was chosen by measurement
#: (benches/hashing_dim.py, figures in benches/RESULTS.md): within 6 % of hashing-4096's MRR
#: at an eighth of the bytes; 384 loses another 13 %.
DEFAULT_EMBEDDER = "hashing-512"

_HASHING = re.compile(r"hashing-(\d+)")
_HASHING_VERSION = "recall-hashing-v1"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows of length `dim`."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class HashingEmbedder:
    """Deterministic token hashing into `dim` dimensions; no model, no state."""

    def __init__(self, dim: int) -> None:
        if not 8 <= dim <= 8192:
            raise EmbedderError(
                f"recall embedder: hashing-{dim} is out of range; pick a dimension in 8..8192"
            )
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def fingerprint(self) -> str:
        # The version tag changes whenever tokenisation or hashing changes, so stores built with
        # an older scheme are recognised as another lineage.
        return hashlib.sha256(f"{_HASHING_VERSION}:{self._dim}".encode()).hexdigest()[:16]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raw = _core.hashing_embed(list(texts), self._dim)
        return np.frombuffer(raw, dtype="<f4").reshape(len(texts), self._dim)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"


def get_embedder(spec: str | Embedder | None) -> Embedder:
    """Resolve an embedder name (`hashing-D`) or pass an `Embedder` through; None = default."""
    if spec is None:
        spec = DEFAULT_EMBEDDER
    if not isinstance(spec, str):
        return spec
    match = _HASHING.fullmatch(spec.strip())
    if match:
        return HashingEmbedder(int(match.group(1)))
    raise EmbedderError(
        f"recall embedder: unknown embedder '{spec}'; available: hashing-D "
        f"(e.g. {DEFAULT_EMBEDDER} or hashing-64)"
    )
