"""How well `remember` names the note a new note replaces, on knowledge updates from public text.

Each memory of `benches/data/knowledge_updates` (short notes written from public changelogs and
release notes, in the order they were recorded; an updating note's `replaces` names the notes it
makes out of date, see the folder's README) is played back through the MCP tools as an agent
would: every note is written with `remember` (no `supersedes`: the agent forgot), into a fresh
folder and store on the chosen embedder (default: the default model), and the reply's
`candidates` are kept. Two worlds are played: `undeclared`, where the agent never declares (the
list depends on the notes' text alone, and a chain's older notes are still in force), and
`declared`, where after each update the agent declares what it truly replaces with `declare`, so
that a chain's later update meets the note then in force. In the declared world a note that a
first update replaced in part (a statement buried among others) is already superseded when a
second update meets it, and is named through the first update's note: such an update counts as
missed.

Prints, over all updates and per kind (and over all for `recall check`'s own list of the same
note, before `remember`'s listing rules: at most one note found by closeness alone, none named
through a note already replaced): the share whose replaced note is the first candidate, in
the top 3 and anywhere in the list (at most 5), the mean number of candidates per update and
per note that replaces nothing, and precision (replaced notes among the candidates listed for
updates; within the top 3 as well); the `remember` call's median and p95 time.

Usage: python benches/check_candidates.py [--embedder minilm-l6] [--only MEMORY ...]
       [--world undeclared declared] [--misses] [--without-sentence-leg]
       (--misses prints each update whose replaced note is not in the top 3;
       --without-sentence-leg turns `recall check`'s sentence leg off, to see what it adds)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from machine import cpu_model

import recall
from recall.authoring.check import check
from recall.mcp_server import Tools

DATA = Path(__file__).resolve().parent / "data" / "knowledge_updates"


def play(
    memory: dict[str, Any], embedder: str, work: Path, declaring: bool
) -> list[dict[str, Any]]:
    """Every note of `memory` remembered in order; per note, what the reply proposed."""
    root = work / memory["memory"]
    root.mkdir()
    out: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    with recall.open(work / f"{memory['memory']}.db", embedder=embedder) as mem:
        tools = Tools(mem, [root])
        for note in memory["notes"]:
            started = time.perf_counter()
            reply = tools.call("remember", {"title": note["title"], "text": note["text"]})
            seconds = time.perf_counter() - started
            if reply.is_error:
                raise SystemExit(f"{memory['memory']} {note['id']}: {reply.data}")
            files[note["id"]] = reply.data["file"]
            truth = {files[r] for r in note.get("replaces", [])}
            listed = [c["file"] for c in reply.data["candidates"]]
            # `recall check`'s own list for the same note, before remember's listing rules.
            raw = check([reply.data["path"]], [root], store=mem, limit=5).files[0].candidates
            unlisted = [Path(c.note).name for c in raw if not c.declared]
            out.append(
                {
                    "id": note["id"],
                    "kind": note.get("kind", []),
                    "truth": truth,
                    "listed": listed,
                    "check": unlisted,
                    "seconds": seconds,
                    "title": note["title"],
                    "evidence": [c["evidence"] for c in reply.data["candidates"]],
                    "replaced": [
                        n["title"]
                        for n in memory["notes"]
                        if n["id"] in set(note.get("replaces", []))
                    ],
                }
            )
            if truth and declaring:
                declared = tools.call(
                    "declare",
                    {"file": reply.data["file"], "supersedes": [Path(f).name for f in truth]},
                )
                if declared.is_error or declared.data["warnings"]:
                    raise SystemExit(f"{memory['memory']} {note['id']}: {declared.data}")
    return out


def rank(row: dict[str, Any]) -> int | None:
    """1-based place of the first replaced note among the candidates, or None."""
    for place, file in enumerate(row["listed"], 1):
        if file in row["truth"]:
            return place
    return None


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    updates = [r for r in rows if r["truth"]]
    others = [r for r in rows if not r["truth"]]
    places = [rank(r) for r in updates]
    n = len(updates) or 1
    listed = sum(len(r["listed"]) for r in updates)
    right = sum(len(set(r["listed"]) & r["truth"]) for r in updates)
    top3 = sum(len(r["listed"][:3]) for r in updates)
    right3 = sum(len(set(r["listed"][:3]) & r["truth"]) for r in updates)
    return {
        "updates": len(updates),
        "first": sum(p == 1 for p in places) / n,
        "top3": sum(p is not None and p <= 3 for p in places) / n,
        "listed": sum(p is not None for p in places) / n,
        "per_update": listed / n,
        "per_other": sum(len(r["listed"]) for r in others) / (len(others) or 1),
        "precision": right / (listed or 1),
        "precision3": right3 / (top3 or 1),
    }


def line(name: str, s: dict[str, float]) -> str:
    return (
        f"{name:<20} {s['updates']:>4.0f} {s['first']:>6.2f} {s['top3']:>6.2f} "
        f"{s['listed']:>6.2f} {s['per_update']:>7.2f} {s['per_other']:>7.2f} "
        f"{s['precision']:>6.2f} {s['precision3']:>6.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument(
        "--world", nargs="+", choices=("undeclared", "declared"), default=["undeclared", "declared"]
    )
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--without-sentence-leg", action="store_true")
    args = parser.parse_args()
    if args.without_sentence_leg:
        from recall.authoring import predecessors

        predecessors.SENTENCE_TOP = 0
    memories = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA.glob("*.json"))]
    if args.only:
        memories = [m for m in memories if m["memory"] in set(args.only)]
    print(f"# check_candidates: {args.embedder}, {len(memories)} memories; {cpu_model()}")
    for world in args.world:
        report(world, memories, args.embedder, args.misses)


def report(world: str, memories: list[dict[str, Any]], embedder: str, misses: bool) -> None:
    rows: list[dict[str, Any]] = []
    per_memory: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="recall-updates-") as scratch:
        for memory in memories:
            played = play(memory, embedder, Path(scratch), world == "declared")
            per_memory[memory["memory"]] = played
            rows += played
    header = f"{world:<20} {'n':>4} {'first':>6} {'top3':>6} {'listed':>6} {'cand/u':>7} "
    header += f"{'cand/o':>7} {'prec':>6} {'prec@3':>6}"
    print(f"\n{header}")
    for name, played in per_memory.items():
        print(line(name, summary(played)))
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        for kind in r["kind"]:
            by_kind[kind].append(r)
    for kind in sorted(by_kind):
        print(line(f"kind {kind}", summary(by_kind[kind])))
    print(line("all", summary(rows)))
    print(line("all, check's list", summary([{**r, "listed": r["check"]} for r in rows])))
    times = sorted(r["seconds"] for r in rows)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    print(
        f"remember: median {statistics.median(times) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms over {len(times)} calls"
    )
    if misses:
        for r in rows:
            place = rank(r)
            if r["truth"] and (place is None or place > 3):
                print(f"\n{r['id']} {r['title']!r} replaces {r['replaced']} (place {place})")
                for file, evidence in zip(r["listed"], r["evidence"]):
                    print(f"  {file}: {'; '.join(evidence)}")


if __name__ == "__main__":
    sys.exit(main())
