"""File digests remembered by file identity (`recall.digests`): a model file is hashed once,
again when it changes, and a cache that cannot be used never stops a load."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from recall import digests


def _count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = digests.sha256_file

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(digests, "sha256_file", counting)
    return calls


def test_a_file_is_hashed_once_per_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "model.onnx"
    f.write_bytes(b"weights v1")
    calls = _count_hashing(monkeypatch)
    want = hashlib.sha256(b"weights v1").hexdigest()
    assert digests.sha256_of(f) == want and len(calls) == 1
    assert digests.sha256_of(f) == want and len(calls) == 1, "the second start reads the cache"
    assert (tmp_path / "cache" / digests.CACHE_FILE).is_file()
    # Rewritten in place with the same size: another modification time, hashed again.
    f.write_bytes(b"weights v2")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert digests.sha256_of(f) == hashlib.sha256(b"weights v2").hexdigest()
    assert len(calls) == 2


def test_a_cache_that_cannot_be_used_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_text("{}")
    want = hashlib.sha256(b"{}").hexdigest()
    # Damaged cache file: hashed, and the file replaced by a good one.
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / digests.CACHE_FILE).write_text("not json")
    monkeypatch.setenv("RECALL_CACHE_DIR", str(cache))
    assert digests.sha256_of(f) == want
    assert digests.sha256_of(f) == want
    # A cache folder that is a file: nothing can be written, the digest is still right.
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    monkeypatch.setenv("RECALL_CACHE_DIR", str(blocked))
    assert digests.sha256_of(f) == want
    # A missing file is the caller's error, naming the file.
    with pytest.raises(FileNotFoundError, match="absent"):
        digests.sha256_of(tmp_path / "absent")


def test_the_cache_folder_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_CACHE_DIR", str(tmp_path / "mine"))
    assert digests.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("RECALL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert digests.cache_dir() == tmp_path / "xdg" / "recall"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert digests.cache_dir() == tmp_path / "home" / ".cache" / "recall"


def test_a_cache_holding_a_wrong_digest_is_never_blamed_on_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache that remembers a wrong digest for the built-in model's files: the model loads
    (its files are hashed again and the entries rewritten), no "the file is damaged"."""
    import json

    from recall import models

    cache = tmp_path / "cache"
    monkeypatch.setenv("RECALL_CACHE_DIR", str(cache))
    model = models.load_builtin("minilm-l6")
    entries = json.loads((cache / digests.CACHE_FILE).read_text())
    assert entries, "the load remembered its files' digests"
    (cache / digests.CACHE_FILE).write_text(json.dumps({k: "0" * 64 for k in entries}))
    again = models.load_builtin("minilm-l6")
    assert again.fingerprint == model.fingerprint
    healed = json.loads((cache / digests.CACHE_FILE).read_text())
    files = {str(model.model_path.resolve()), str(model.tokenizer_path.resolve())}
    pinned = [k for k in entries if k.split("|", 1)[0] in files]
    assert pinned and all(healed[k] == entries[k] for k in pinned)
