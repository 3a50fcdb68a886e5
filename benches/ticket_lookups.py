"""Identifier lookups among near-identical notes, under the calibration a store makes itself
(SPEC §7: a self-made fit must keep certifying where notes differ only by their codes).

A seeded corpus of N tickets (default 3,000) written alike: `INC-NNNNN: SYSTEM EVENT` over 6
systems and 4 events, each body the same three sentences with the ticket's own times, durations,
owners and numbers. `Memory.index` indexes it and calibrates itself (no labelled question); then
`--lookups` tickets drawn with a seed are each asked for by their code in strict mode ("What
happened in INC-40213?", and three other phrasings), and every answer is counted: right (the
first `ok` hit is the ticket asked for), wrong (an `ok` hit from another ticket comes first),
abstained or refused. Prints the self-made fit (threshold, AUC, certified), then the counts.

Usage: python benches/ticket_lookups.py [--tickets 3000] [--lookups 100]
       [--embedder minilm-l6]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

# benches/ is on sys.path when this runs as a script.
from machine import cpu_model

import recall
from recall.errors import TrustRefusal

SYSTEMS = ["payments", "checkout", "search", "identity", "billing", "storage"]
EVENTS = [
    ("latency spike", "p99 latency rose to {a} ms for {b} minutes"),
    ("error rate", "the error rate reached {a} percent for {b} minutes"),
    ("outage", "the service was down for {b} minutes after {a} failed health checks"),
    ("disk full", "a volume reached {a} percent and writes failed for {b} minutes"),
]
OWNERS = ["Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun"]
PHRASINGS = [
    "What happened in {id}?",
    "{id}",
    "Who handled {id} and what was the cause?",
    "Tell me about incident {id}.",
]
SEED = 20261205


def tickets(folder: Path, count: int) -> list[tuple[str, str]]:
    """Write `count` tickets; (code, file name) of each."""
    rng = random.Random(SEED)
    codes = rng.sample(range(10000, 99999), count)
    out = []
    for code in codes:
        system = rng.choice(SYSTEMS)
        event, what = rng.choice(EVENTS)
        ident = f"INC-{code}"
        text = (
            f"# {ident}: {system} {event}\n\n"
            f"On day {rng.randint(1, 28)} at {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
            f"{what.format(a=rng.randint(2, 999), b=rng.randint(2, 240))} on {system}. "
            f"{rng.choice(OWNERS)} was on call and paged {rng.choice(OWNERS)}. "
            f"The fix was rolled out in {rng.randint(2, 90)} minutes and {ident} was closed.\n"
        )
        name = f"{ident.lower()}.md"
        (folder / name).write_text(text, encoding="utf-8")
        out.append((ident, name))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=3000)
    parser.add_argument("--lookups", type=int, default=100)
    parser.add_argument("--embedder", default="minilm-l6")
    args = parser.parse_args()
    os.environ.pop("RECALL_TRUST_MODE", None)
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="recall-tickets-") as scratch:
        notes = Path(scratch) / "notes"
        notes.mkdir()
        written = tickets(notes, args.tickets)
        with recall.open(Path(scratch) / "t.db", embedder=args.embedder) as mem:
            started = time.perf_counter()
            report = mem.index(notes)
            took = time.perf_counter() - started
            record, why = mem.calibration()
            print(
                f"{args.tickets} tickets indexed with {args.embedder} in {took:.1f} s; "
                + (
                    f"calibration {record.source}: threshold {record.threshold:.3f}, "
                    f"certified {record.certified} ({record.certified_reason})"
                    if record is not None
                    else f"no calibration ({why})"
                )
                + f"; trust: {report.trust['line'] if report.trust else '-'}"
            )
            rng = random.Random(SEED + 1)
            counts = {"right": 0, "wrong": 0, "abstained": 0, "refused": 0}
            for i, (ident, name) in enumerate(rng.sample(written, args.lookups)):
                query = PHRASINGS[i % len(PHRASINGS)].format(id=ident)
                try:
                    result = mem.search(query, mode="strict")
                except TrustRefusal as refusal:
                    counts["refused"] += 1
                    if counts["refused"] == 1:
                        print(f"  refused: {refusal.code}: {refusal}")
                    continue
                ok = result.ok_hits
                if not ok:
                    counts["abstained"] += 1
                elif ok[0].provenance.file == name:
                    counts["right"] += 1
                else:
                    counts["wrong"] += 1
                    print(f"  WRONG: {query!r} answered from {ok[0].provenance.file}")
    n = args.lookups
    print(
        f"lookups: right {counts['right']}/{n} = {counts['right'] / n:.2f}, wrong "
        f"{counts['wrong']}, abstained {counts['abstained']}, refused {counts['refused']}"
    )


if __name__ == "__main__":
    main()
