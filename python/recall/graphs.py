"""A model's optimised graph, saved once (SPEC §10, cold start).

Opening an onnxruntime session optimises the model's graph first. For the default model that is
most of a cold `recall search`: the int8 file's weights are dequantised and constant-folded to
fp32 on every start (about 0.5 s on two cores), or, computed in int8, rewritten
(`recall.int8_graph`) and optimised. `saved_graph(ort, model, int8=…)` runs that once per
model content, compute (and rewrite version) and onnxruntime version and keeps the result in
the user's cache folder (`recall.digests.cache_dir()`, under `graphs/`, in a folder named
`<model digest>[-int8.<rewrite version>]-ort<version>-<cpu>`: the graph, its weights in a file
of their own that the session maps instead of parsing, and a seal). A session opened on the
saved graph starts in tens of milliseconds instead of hundreds and computes the same outputs
bit for bit (`tests/test_graphs.py` checks this on the default model); it costs the default
model 56 MB of cache (87 MB more for its fp32 graph, which only a store indexed before int8
compute uses).

The saved graph is derived data, checked before every use: the seal holds its files' sha256s,
written when it is saved and compared on each open (each file hashed once per file identity,
`recall.digests`), so a damaged or changed graph is saved again. It is saved at onnxruntime's
"extended" level, which holds no layout tied to this machine's CPU; the session still opens it
at the full level. A graph that cannot be saved, read or opened is skipped, and the model file
is opened as before. The model's own pin and fingerprint are of the shipped file and do not
change.

Owns: where a saved graph lives, saving it, and checking it. Does not own: the session's
options or errors (`recall.models.open_session`).
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from recall.digests import cache_dir, sha256_of
from recall.int8_graph import VERSION as int8_graph_version
from recall.int8_graph import int8_graph

__all__ = ["graph_folder", "saved_graph"]


def graph_folder() -> Path:
    """Where saved graphs live: `graphs/` in recall's cache folder."""
    return cache_dir() / "graphs"


#: A saved graph's files, in its own folder: the graph, its weights (kept outside the graph, so
#: a session maps them instead of parsing them), and the seal (their sha256s).
GRAPH, WEIGHTS, SEAL = "model.onnx", "weights.data", "seal"


def _names(ort: Any, model: Path, int8: bool) -> tuple[str, str]:
    """The model's content prefix (shared by every runtime's graph of it) and this graph's name."""
    prefix = sha256_of(model)[:32]
    kind = f"-int8.{int8_graph_version}" if int8 else ""
    return prefix, f"{prefix}{kind}-ort{ort.__version__}-{platform.machine() or 'cpu'}"


def _seal_of(folder: Path) -> str:
    """The sha256 of each of the graph's files there is (a model with no large weights has no
    weights file)."""
    return "".join(
        f"{sha256_of(folder / f)}  {f}\n" for f in (GRAPH, WEIGHTS) if (folder / f).is_file()
    )


def _checked(folder: Path) -> bool:
    try:
        seal = (folder / SEAL).read_text(encoding="ascii")
        return f"  {GRAPH}\n" in seal and seal == _seal_of(folder)
    except (OSError, ValueError):
        return False


def _save(ort: Any, model: Path, root: Path, name: str, prefix: str, int8: bool) -> Path:
    """Optimise `model` (rewritten for int8 compute when `int8`) into the folder `root/name`
    and seal it; the model's graphs for other runtimes, computed alike, are removed."""
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}-"))
    folder = root / name
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(work / GRAPH)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", WEIGHTS
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        options.log_severity_level = 3
        source: str | bytes = int8_graph(model.read_bytes())[0] if int8 else str(model)
        ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        # A damaged graph of this name goes first; a folder is replaced only when empty.
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (folder / SEAL).write_text(_seal_of(folder), encoding="ascii")
    # Other runtimes' graphs of this model computed alike, and work folders a killed save left
    # behind. The other compute's graph stays: a process may use both (an fp32 store's
    # built-in model beside a new int8 one).
    kind = f"{prefix}-int8." if int8 else f"{prefix}-ort"
    for old in [*root.glob(f"{kind}*"), *root.glob(f".{prefix}-*")]:
        if old.name != name and not (old.name.startswith(".") and _recent(old)):
            with contextlib.suppress(OSError):
                if old.is_dir():
                    shutil.rmtree(old)
                else:
                    old.unlink()
    return folder / GRAPH


def _recent(path: Path) -> bool:
    """Changed within the last hour: a work folder another process may still be saving into."""
    try:
        return time.time() - path.stat().st_mtime < 3600
    except OSError:
        return True


def saved_graph(ort: Any, model: Path, *, int8: bool = False) -> Path | None:
    """`model`'s graph optimised by this onnxruntime (its int8 weights computed in int8 when
    `int8`: `recall.int8_graph`), saved once and checked on every use; None when it cannot be
    saved or read (then the caller opens the model itself)."""
    try:
        prefix, name = _names(ort, model, int8)
        root = graph_folder()
        if _checked(root / name):
            return root / name / GRAPH
        return _save(ort, model, root, name, prefix, int8)
    except Exception:  # an unusable cache, a full disk, a runtime that cannot save: skip it
        return None
