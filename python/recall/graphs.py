"""A model's optimised graph, saved once (SPEC §10, cold start).

Opening an onnxruntime session optimises the model's graph first. For the default model that is
most of a cold `recall search`: the int8 file's weights are dequantised and constant-folded to
fp32 on every start (about 0.5 s on two cores). `saved_graph(ort, model)` runs those graph
optimisations once per model content and onnxruntime version and keeps the result in the
user's cache folder (`recall.digests.cache_dir()`, `graphs/<model digest>-ort<version>-<cpu>/`:
the graph, its weights in a file of their own that the session maps instead of parsing, and a
seal). A session opened on the saved graph starts in tens of milliseconds instead of hundreds
and computes the same outputs bit for bit (`tests/test_graphs.py` checks this on the default
model); it costs the default model 90 MB of cache.

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

__all__ = ["graph_folder", "saved_graph"]


def graph_folder() -> Path:
    """Where saved graphs live: `graphs/` in recall's cache folder."""
    return cache_dir() / "graphs"


#: A saved graph's files, in its own folder: the graph, its weights (kept outside the graph, so
#: a session maps them instead of parsing them), and the seal (their sha256s).
GRAPH, WEIGHTS, SEAL = "model.onnx", "weights.data", "seal"


def _names(ort: Any, model: Path) -> tuple[str, str]:
    """The model's content prefix (shared by every runtime's graph of it) and this graph's name."""
    prefix = sha256_of(model)[:32]
    return prefix, f"{prefix}-ort{ort.__version__}-{platform.machine() or 'cpu'}"


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


def _save(ort: Any, model: Path, root: Path, name: str, prefix: str) -> Path:
    """Optimise `model` into the folder `root/name` and seal it; older runtimes' graphs of the
    same model are removed."""
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
        ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        # A damaged graph of this name goes first; a folder is replaced only when empty.
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (folder / SEAL).write_text(_seal_of(folder), encoding="ascii")
    # Other runtimes' graphs of this model, and work folders a killed save left behind.
    for old in [*root.glob(f"{prefix}-*"), *root.glob(f".{prefix}-*")]:
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


def saved_graph(ort: Any, model: Path) -> Path | None:
    """`model`'s graph optimised by this onnxruntime, saved once and checked on every use; None
    when it cannot be saved or read (then the caller opens the model file itself)."""
    try:
        prefix, name = _names(ort, model)
        root = graph_folder()
        if _checked(root / name):
            return root / name / GRAPH
        return _save(ort, model, root, name, prefix)
    except Exception:  # an unusable cache, a full disk, a runtime that cannot save: skip it
        return None
