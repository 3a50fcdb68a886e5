"""What `recall report` costs on a thousand notes: the HTML's size and the time to write it.

Writes a seeded corpus of `--notes` notes shaped like a team's decision log (topics with a
revision history: chains of 2–12 notes, a few where two notes claim the same predecessor, an
ambiguous reference, notes withdrawn by a status line, expired and future windows, dangling
references, a few files refused for a malformed date, and most notes in no lineage at all),
indexes it with `hashing-512` (which calibrates itself from the notes), then writes the report
`--runs` times and prints the median and worst time, the size, and what was drawn. The first
write is checked against the corpus (every stored note drawn, every chain's edges drawn) before
anything is timed. Baseline in the same run: `recall stats` on the same store (`Memory.stats`),
the cheapest reader the report calls.

    PYTHONPATH=python python benches/report_size.py --notes 1000 --out /tmp/report-1000.html
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import recall
from recall.report import write_report

TOPICS = [
    "rate limits",
    "database choice",
    "deploy freeze",
    "on-call rotation",
    "cache policy",
    "retention policy",
    "incident process",
    "release train",
    "feature flags",
    "api versioning",
    "logging format",
    "backup schedule",
    "access reviews",
    "cost budget",
    "load balancer",
    "queue sizing",
    "search ranking",
    "schema migrations",
    "secrets rotation",
    "error budget",
]
WORDS = [
    "the",
    "service",
    "keeps",
    "requests",
    "within",
    "budget",
    "while",
    "the",
    "team",
    "reviews",
    "latency",
    "errors",
    "and",
    "load",
    "across",
    "regions",
    "before",
    "each",
    "release",
    "with",
    "owners",
    "for",
    "storage",
    "queues",
    "caches",
    "and",
    "alerts",
]


def _body(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_corpus(root: Path, notes: int, seed: int = 7) -> dict[str, int]:
    """Write `notes` note files (and a few refused ones) under `root`; what was written."""
    rng = random.Random(seed)
    made = {"chains": 0, "chained": 0, "withdrawn": 0, "expired": 0, "refused": 0}
    k = 0

    def put(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    # Decision chains: about 45 % of the notes.
    while made["chained"] < notes * 0.45:
        topic = TOPICS[made["chains"] % len(TOPICS)]
        length = rng.choice([2, 2, 2, 3, 3, 4, 5, 6, 8, 12])
        folder = f"decisions/{topic.replace(' ', '-')}"
        stem = f"{topic.replace(' ', '-')}-{made['chains']:03d}"
        for v in range(1, length + 1):
            front = [f"title: {topic.title()} ({made['chains']}) revision {v}"]
            if v > 1:
                front.append(f"supersedes: {stem}-v{v - 1}.md")
            put(
                f"{folder}/{stem}-v{v}.md",
                "---\n" + "\n".join(front) + f"\n---\n# {topic}\n\n{_body(rng, 60)}\n",
            )
            k += 1
            made["chained"] += 1
        if made["chains"] % 9 == 4:
            # A second note claims the same predecessor: fan-in, the later claim wins.
            put(
                f"{folder}/{stem}-alt.md",
                f"---\ntitle: {topic.title()} ({made['chains']}) alternative\nsupersedes: "
                f"{stem}-v1.md\n---\n{_body(rng, 50)}\n",
            )
            k += 1
            made["chained"] += 1
        made["chains"] += 1
    # Notes in no lineage, some of them retired, expired, not yet valid or dangling.
    while k < notes:
        i = k
        kind = rng.random()
        head = f"title: Memo {i:04d} on {rng.choice(TOPICS)}\n"
        body = _body(rng, 70)
        if kind < 0.05:
            text = f"# Memo {i:04d} on {rng.choice(TOPICS)}\n\nStatus: Withdrawn\n\n{body}\n"
            made["withdrawn"] += 1
        elif kind < 0.10:
            text = f"---\n{head}valid_from: 2024-01-01\nvalid_until: 2025-06-30\n---\n{body}\n"
            made["expired"] += 1
        elif kind < 0.12:
            text = f"---\n{head}valid_from: 2099-01-01\n---\n{body}\n"
        elif kind < 0.14:
            text = f"---\n{head}supersedes: memo-that-never-was-{i}\n---\n{body}\n"
        else:
            text = f"---\n{head}---\n{body}\n"
        put(f"memos/{i // 100:02d}/memo-{i:04d}.md", text)
        k += 1
    for j in range(3):
        put(f"memos/refused-{j}.md", "---\nvalid_from: 2026-02-30\n---\nA date that is not one.\n")
        made["refused"] += 1
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--out", default=None, help="Where to keep the report (default: a temp dir)."
    )
    parser.add_argument("--work", default=None, help="Folder for the corpus and the store.")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="recall-report-"))
    corpus, db = work / "notes", work / "memory.db"
    out = Path(args.out) if args.out else work / "report.html"
    made = write_corpus(corpus, args.notes)
    began = time.perf_counter()
    with recall.open(db, embedder="hashing-512") as mem:
        indexed = mem.index(corpus)
    print(
        f"corpus: {args.notes} notes ({made}); indexed {len(indexed.added)} with "
        f"{len(indexed.refused)} refused in {time.perf_counter() - began:.1f} s"
    )
    with recall.open(db, read_only=True) as mem:
        documents = mem.stats().documents
        first = write_report(mem, out)
        # Checked before timing: every stored note is drawn, and the chains' edges with them.
        assert first.notes == documents, (first.notes, documents)
        assert first.edges >= made["chained"] - made["chains"], first.edges
        times, base = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            mem.stats()
            base.append(time.perf_counter() - t)
            times.append(write_report(mem, out).seconds)
    print(
        f"report: {out} · {first.bytes / 1024:.0f} KiB · {first.notes} notes drawn "
        f"({first.lineages} lineages, {first.singles} in none), {first.edges} edges, "
        f"{first.unread} unread files"
    )
    print(
        f"write: median {statistics.median(times):.3f} s, worst {max(times):.3f} s over "
        f"{args.runs} runs; baseline Memory.stats median {statistics.median(base) * 1e3:.1f} ms "
        f"(report/stats = {statistics.median(times) / statistics.median(base):.0f}x)"
    )


if __name__ == "__main__":
    main()
