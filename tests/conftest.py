"""Shared fixtures: real stores on tmp_path, corpora written to disk, hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import recall

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Most tests exercise rules, not retrieval quality: they build stores with the fast, model-free
# hashing embedder. Tests of the default (`minilm-l6`) clear this variable themselves.
os.environ.setdefault("RECALL_EMBEDDER", "hashing-512")


def write_corpus(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write `{relative path: content}` under root and return root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    return root


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[recall.Memory]:
    with recall.open(tmp_path / "memory.db") as m:
        yield m


EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "notes"
