"""Embedders: the `Embedder` protocol, the `hashing-D` family, and turning a name into an
embedder (SPEC §4): `minilm-l6` (the default for new stores), `onnx:DIR`, `hashing-D`.

Owns: embedder names, dimensions and fingerprints. The hashing itself runs in the Rust core
(`_core.hashing_embed`); ONNX models live in `models`. Does not own: storing vectors.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from recall import _core
from recall.errors import EmbedderError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "HashingEmbedder",
    "default_embedder_name",
    "embed_queries",
    "get_embedder",
    "name_problem",
    "query_vector",
]

#: The default for new stores: all-MiniLM-L6-v2, installed with the package (models.BUILTINS).
DEFAULT_EMBEDDER = "minilm-l6"
#: Names the default for new stores in place of DEFAULT_EMBEDDER (like --embedder).
ENV_EMBEDDER = "RECALL_EMBEDDER"

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


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed queries: an embedder may define `embed_query` (a model with a query prefix);
    otherwise queries and passages are embedded alike."""
    import numpy as np

    embed = getattr(embedder, "embed_query", None) or embedder.embed
    return np.ascontiguousarray(embed(texts), dtype="<f4")


def query_vector(embedder: Embedder, text: str) -> bytes:
    """One query's vector as the store takes it: little-endian float32 bytes.

    SPEC §10 (cold search): a hashing embedder's bytes come straight from the Rust core, so a
    search with one never imports numpy. Any other embedder goes through `embed_queries`.
    """
    if type(embedder) is HashingEmbedder:
        return _core.hashing_embed([text], embedder.dim)
    row: npt.NDArray[np.float32] = embed_queries(embedder, [text])[0]
    return row.tobytes()


class HashingEmbedder:
    """Deterministic token hashing into `dim` dimensions; no model, no state."""

    def __init__(self, dim: int) -> None:
        if not 8 <= dim <= 8192:
            raise EmbedderError(
                f"recall embedder: hashing-{dim} is out of range; pick a dimension in 8..8192"
            )
        self._dim = dim
        # The version tag changes whenever tokenisation or hashing changes, so stores built with
        # an older scheme are recognised as another lineage. Made once: every search checks it.
        self._fingerprint = hashlib.sha256(f"{_HASHING_VERSION}:{dim}".encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        raw = _core.hashing_embed(list(texts), self._dim)
        return np.frombuffer(raw, dtype="<f4").reshape(len(texts), self._dim)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"


def default_embedder_name() -> str:
    """The embedder a new store gets when none is named: $RECALL_EMBEDDER, else the default."""
    return (os.environ.get(ENV_EMBEDDER) or "").strip() or DEFAULT_EMBEDDER


#: The forms an embedder name takes, for messages.
ACCEPTED_NAMES = "minilm-l6 (the default), onnx:DIR (an ONNX export with tokenizer.json), hashing-D"


def name_problem(spec: str) -> str | None:
    """Why `spec` names no embedder, found without loading a model; None when it names one.

    A well-formed name can still fail to load (a damaged model file): `get_embedder` says so.
    """
    spec = spec.strip()
    match = _HASHING.fullmatch(spec)
    if match:
        dim = int(match.group(1))
        return None if 8 <= dim <= 8192 else f"hashing-{dim} is out of range (hashing-8..8192)"
    if spec.startswith("onnx:"):
        directory = spec[5:].strip()
        if not directory:
            return "onnx: needs a model directory, e.g. onnx:./my-model"
        if not os.path.isdir(os.path.expanduser(directory)):
            return f"the model directory {directory} does not exist"
        return None
    from recall import models

    if spec in models.BUILTINS:
        return None
    return f"unknown embedder '{spec}'; available: {ACCEPTED_NAMES} (e.g. hashing-512)"


def is_embedder_name(spec: str) -> bool:
    """Whether `spec` has the form of an embedder's name (a built-in model, `onnx:DIR`,
    `hashing-D` in range), whether or not its model is here: what a store can have recorded."""
    spec = spec.strip()
    if spec.startswith("onnx:"):
        return bool(spec[5:].strip())
    problem = name_problem(spec)
    return problem is None


# Loading a model costs hundreds of milliseconds and tens of MB: once per process and name.
_LOADED: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def get_embedder(spec: str | Embedder | None, fingerprint: str | None = None) -> Embedder:
    """Resolve a name (`minilm-l6`, `onnx:DIR`, `hashing-D`) or pass an `Embedder` through;
    None = the default for new stores. `fingerprint`, the one a store was built with, picks
    how a built-in model computes (`recall.models.load_builtin`)."""
    if spec is None:
        spec = default_embedder_name()
    if not isinstance(spec, str):
        return spec
    spec = spec.strip()
    match = _HASHING.fullmatch(spec)
    if match:
        return HashingEmbedder(int(match.group(1)))
    from recall import models

    if spec in models.BUILTINS or spec.startswith("onnx:"):
        key = spec if spec in models.BUILTINS else f"onnx:{os.path.abspath(spec[5:])}"
        if spec in models.BUILTINS:
            key = f"{spec}:{'int8' if models.builtin_int8(spec, fingerprint) else 'fp32'}"
        with _LOCK:
            if key not in _LOADED:
                if spec in models.BUILTINS:
                    _LOADED[key] = models.load_builtin(spec, fingerprint)
                elif not spec[5:].strip():
                    raise EmbedderError(
                        "recall embedder: onnx: needs a model directory, e.g. onnx:./my-model"
                    )
                else:
                    _LOADED[key] = models.OnnxEmbedder(spec[5:].strip())
            return _LOADED[key]
    raise EmbedderError(
        f"recall embedder: unknown embedder '{spec}'; available: "
        f"{', '.join(models.BUILTINS)} (the default), onnx:DIR (an ONNX export with "
        "tokenizer.json), hashing-D (e.g. hashing-512)"
    )
