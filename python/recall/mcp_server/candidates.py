"""The notes a new note may replace, as `remember` shows them to an agent (SPEC §8.4).

Owns: running `recall check` on one note against every corpus root (the semantic leg over the
server's open memory) and turning its ranked candidates into what an agent acts on: the
reference `declare` takes, the file as search shows it, the direction and the evidence in
words, bounded to `MAX_CANDIDATES`. Candidates already joined to the note by a declared edge
are left out, and of those found by closeness in the store alone only the closest. Nothing is
declared here: the agent names what the note replaces. Does not own: the legs or the ranking
(`recall.authoring`), or writing (`remember`, `declare`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recall.api import Memory
    from recall.authoring.check import Candidate

__all__ = ["DRY_RUN_STEP", "MAX_CANDIDATES", "NEXT_STEP", "candidates"]

#: At most this many candidates are listed, best first.
MAX_CANDIDATES = 5

NEXT_STEP = (
    "If the new note states a newer value of the same fact as a candidate (or reverses it), "
    "call declare with this file and supersedes naming that candidate's note; search then "
    "serves the new note and marks the old one superseded. Leave candidates that are only "
    "related: a wrong declaration retires a true note."
)
DRY_RUN_STEP = (
    "Nothing was written. If the note states a newer value of the same fact as a candidate (or "
    "reverses it), call remember again with supersedes naming that candidate's note; leave "
    "candidates that are only related: a wrong declaration retires a true note."
)


def candidates(memory: Memory, roots: Sequence[Path], path: Path) -> list[dict[str, Any]]:
    """The notes the note at `path` may replace (or be replaced by), best first."""
    from recall.authoring.check import check

    setting = memory.stats().vocabularies if memory.exists else "all"
    report = check(
        [path],
        [str(r) for r in roots],
        store=memory,
        vocabularies=setting,
        limit=MAX_CANDIDATES,
    )
    found = report.files[0].candidates if report.files else ()
    listed: dict[str, dict[str, Any]] = {}
    close_only = 0
    for c in found:
        if c.declared:
            continue
        if all(r.kind == "semantic" for r in c.reasons):
            # Closeness alone is weak evidence: only the closest such note is listed, and
            # never through a note it already replaced (benches/check_candidates.py).
            close_only += 1
            if close_only > 1 or c.current:
                continue
        evidence = [f"{r.kind}: {r.detail}" for r in c.reasons]
        if c.relation == "predecessor" and c.current:
            # Already replaced: a newer value replaces the note in force at the chain's end.
            kinds = ", ".join(dict.fromkeys(r.kind for r in c.reasons))
            evidence = [f"replaces {os.path.basename(c.note)}, which matched ({kinds})"]
            heads = [h for h in c.current if os.path.realpath(h) != os.path.realpath(path)]
        else:
            heads = [c.note]
        for head in heads:
            entry = listed.setdefault(head, _entry(head, c, roots))
            entry["rank"] = max(entry["rank"], round(c.rank, 3))
            entry["evidence"] += [e for e in evidence if e not in entry["evidence"]]
    ranked = sorted(listed.values(), key=lambda e: (-e["rank"], e["file"]))
    return ranked[:MAX_CANDIDATES]


def _entry(note: str, c: Candidate, roots: Sequence[Path]) -> dict[str, Any]:
    name = os.path.basename(note)
    return {
        "note": name,
        "file": _file(note, roots),
        "relation": c.relation,
        "evidence": [],
        "rank": 0.0,
        "suggestion": c.suggestion if note == c.note else f"supersedes: {name}",
    }


def _file(note: str, roots: Sequence[Path]) -> str:
    """The note's path in its root, as search's provenance shows it."""
    where = Path(os.path.realpath(note))
    for root in roots:
        if where.is_relative_to(root):
            return where.relative_to(root).as_posix()
    return note  # a document of the store that no root holds: SOURCE/FILE
