"""Two `ok` hits that look like an update nobody declared: how often the warning is right, and
what demoting the older note would cost on sets whose answers are known.

Part 1, the updates: each memory of `benches/data/knowledge_updates` is written note by note
with `remember` and nothing declared (an agent that forgot), into its own store on the chosen
embedder, which then calibrates itself. Each update's title is asked. Counted: the updates whose
replaced note is served `ok` (stale), those where the result warns that the update may replace
it, and the warnings that name a pair the data does not (the older note not replaced, directly
or through a chain, by the newer). Then each note nothing replaces is asked by its title: counted
are those served `ok` and those named the older note of a warned pair (demoting the older would
take a true answer away).

Part 2, answerable sets: each evaluation set (`python/recall/evalset` and `benches/evalsets/*`)
is indexed one note per run in path order, so every note is first indexed after the ones
before it (a single run gives every note one instant and no pair at all), and calibrated on its
own labelled questions. Each answerable question is asked: counted are the questions that
abstain (false abstention), those whose result carries a warning, and those whose relevant note
is the older note of a warned pair, which demoting the older would take from the answer (the
newer stays `ok`, so demotion alone never adds an abstention: it changes which note answers).

Part 3, the cost: `Memory.search` on the first three memories of part 1 (asked each note's
title), in blocks that alternate the check on and off in one process; p50, p95 and the ratio.

Usage: python benches/undeclared_updates.py [--embedder minilm-l6]
       [--part updates answerable cost]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import cpu_model

import recall
from recall.mcp_server import Tools

ROOT = Path(__file__).resolve().parent.parent
UPDATES = ROOT / "benches" / "data" / "knowledge_updates"
SETS = [ROOT / "python" / "recall" / "evalset", *sorted((ROOT / "benches" / "evalsets").iterdir())]


def replaced_by(memory: dict[str, Any]) -> dict[str, set[str]]:
    """Per note id, every earlier note it makes out of date, through chains too."""
    direct = {n["id"]: set(n.get("replaces", [])) for n in memory["notes"]}
    closed: dict[str, set[str]] = {}
    for note in memory["notes"]:  # in writing order: a chain's earlier links are closed first
        out = set(direct[note["id"]])
        for old in direct[note["id"]]:
            out |= closed.get(old, set())
        closed[note["id"]] = out
    return closed


def updates_part(embedder: str, work: Path) -> None:
    total = stale = warned = both = warnings = wrong = 0
    current = current_ok = current_flagged = 0
    for path in sorted(UPDATES.glob("*.json")):
        memory = json.loads(path.read_text(encoding="utf-8"))
        root = work / memory["memory"]
        root.mkdir()
        files: dict[str, str] = {}
        with recall.open(work / f"{memory['memory']}.db", embedder=embedder) as mem:
            tools = Tools(mem, [root])
            for note in memory["notes"]:
                reply = tools.call("remember", {"title": note["title"], "text": note["text"]})
                files[note["id"]] = reply.data["file"]
            calibration, _ = mem.calibrate_self(replace=True)
            stale_of = replaced_by(memory)
            truth = {(files[o], files[n]) for n, olds in stale_of.items() for o in olds}
            for note in memory["notes"]:
                for old in note.get("replaces", []):
                    total += 1
                    result = mem.search(note["title"], k=5)
                    ok = {h.provenance.file for h in result.hits if h.ok}
                    flagged = {
                        (h.provenance.file, h.validity.possibly_superseded_by)
                        for h in result.hits
                        if h.validity.possibly_superseded_by
                    }
                    if files[old] in ok:
                        stale += 1
                        both += files[note["id"]] in ok
                        warned += any(o == files[old] for o, _ in flagged)
                    warnings += len(flagged)
                    wrong += len(flagged - truth)
            retired = {o for olds in stale_of.values() for o in olds}
            for note in memory["notes"]:
                if note["id"] in retired:
                    continue
                # A note nothing replaces, asked by its title: demoting it would be wrong.
                current += 1
                result = mem.search(note["title"], k=5)
                hit = next((h for h in result.hits if h.provenance.file == files[note["id"]]), None)
                if hit is not None and hit.ok:
                    current_ok += 1
                    current_flagged += hit.validity.possibly_superseded_by is not None
            print(
                f"{memory['memory']:<16} calibration certified={calibration.certified} "
                f"threshold={calibration.threshold:.3f}"
            )
    print(
        f"updates {total}: replaced note ok {stale} ({stale / total:.2f}), with the update ok "
        f"beside it {both}; warned {warned} of the {stale} stale ({warned / max(stale, 1):.2f}); "
        f"warnings {warnings}, naming a pair the data does not {wrong}"
    )
    print(
        f"notes nothing replaces {current}, asked by title: ok {current_ok}, named the older "
        f"of a warned pair {current_flagged} ({current_flagged / max(current_ok, 1):.3f} of the "
        "ok: what demoting the older would take from the answer)"
    )


def answerable_part(embedder: str, work: Path) -> None:
    print(f"{'set':<10} {'asked':>5} {'abst':>5} {'warned':>6} {'demoted':>7}")
    sums = [0, 0, 0, 0]
    for folder in SETS:
        notes = folder / "notes"
        db = work / f"{folder.name}.db"
        with recall.open(db, embedder=embedder) as mem:
            files = sorted(p for p in notes.rglob("*") if p.is_file())
            for file in files:
                # One note per run, the folder kept whole so every note keeps its identity.
                visible = work / folder.name
                target = visible / file.relative_to(notes)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(file.read_bytes())
                mem.index(visible, calibrate=False)
            mem.calibrate(folder / "questions.jsonl", replace=True)
            asked = abstained = warned = demoted = 0
            for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines():
                item = json.loads(line)
                if not item.get("answerable") or item.get("expect", "ok") != "ok":
                    continue
                asked += 1
                result = mem.search(item["query"], k=5, mode="development")
                abstained += result.abstained
                warned += bool(result.warnings)
                older = {
                    h.provenance.file for h in result.hits if h.validity.possibly_superseded_by
                }
                demoted += bool(older & set(item.get("relevant", [])))
        print(f"{folder.name:<10} {asked:>5} {abstained:>5} {warned:>6} {demoted:>7}")
        for i, v in enumerate((asked, abstained, warned, demoted)):
            sums[i] += v
    asked, abstained, warned, demoted = sums
    print(
        f"{'all':<10} {asked:>5} {abstained:>5} {warned:>6} {demoted:>7}   false abstention "
        f"{abstained / asked:.3f}; warned {warned / asked:.3f}; relevant note demoted "
        f"{demoted / asked:.3f}"
    )


def cost_part(embedder: str, work: Path) -> None:
    from recall import undeclared

    checked = undeclared.pairs
    stores: list[tuple[recall.Memory, list[str]]] = []
    for path in sorted(UPDATES.glob("*.json"))[:3]:
        memory = json.loads(path.read_text(encoding="utf-8"))
        root = work / memory["memory"]
        root.mkdir()
        mem = recall.open(work / f"{memory['memory']}.db", embedder=embedder)
        tools = Tools(mem, [root])
        for note in memory["notes"]:
            tools.call("remember", {"title": note["title"], "text": note["text"]})
        mem.calibrate_self(replace=True)
        stores.append((mem, [n["title"] for n in memory["notes"]]))
    times: dict[bool, list[float]] = {True: [], False: []}
    for block in range(30):
        for on in (True, False) if block % 2 else (False, True):
            undeclared.pairs = checked if on else lambda hits: []  # type: ignore[assignment]
            for mem, titles in stores:
                for query in titles[block % 10 :: 10][:4]:
                    started = time.perf_counter()
                    mem.search(query)
                    times[on].append(time.perf_counter() - started)
    undeclared.pairs = checked
    for mem, _ in stores:
        mem.close()

    def p(values: list[float], q: float) -> float:
        return sorted(values)[int(q * (len(values) - 1))] * 1e3

    print(
        f"Memory.search, {len(times[True])} searches each: with the check p50 "
        f"{p(times[True], 0.5):.3f} ms p95 {p(times[True], 0.95):.3f} ms; without p50 "
        f"{p(times[False], 0.5):.3f} ms p95 {p(times[False], 0.95):.3f} ms; ratio of p50 "
        f"{p(times[True], 0.5) / p(times[False], 0.5):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument(
        "--part",
        nargs="+",
        choices=("updates", "answerable", "cost"),
        default=["updates", "answerable", "cost"],
    )
    args = parser.parse_args()
    print(f"# undeclared_updates: {args.embedder}; {cpu_model()}")
    with tempfile.TemporaryDirectory(prefix="recall-undeclared-") as scratch:
        if "updates" in args.part:
            (Path(scratch) / "updates").mkdir()
            updates_part(args.embedder, Path(scratch) / "updates")
        if "answerable" in args.part:
            (Path(scratch) / "answerable").mkdir()
            answerable_part(args.embedder, Path(scratch) / "answerable")
        if "cost" in args.part:
            (Path(scratch) / "cost").mkdir()
            cost_part(args.embedder, Path(scratch) / "cost")


if __name__ == "__main__":
    sys.exit(main())
