"""Indexing throughput, by default with the hashing embedder (SPEC §10, issue targets):

- fresh index of N generated notes: chunks/s (target >= 2,000);
- the declarations reader's cost: the same fresh index with `recall.indexing.declare` replaced
  (in this process only) by a frontmatter-only reader (frontmatter and its `supersedes:` edges,
  no status sections, field lines, MADR keys or opening sentences), runs of the two interleaved;
  any reader costs at least that, so full / frontmatter-only bounds the slowdown against any
  earlier reader (target <= 1.05); and `declare()` over every text against `frontmatter.parse()`;
- with `--reader-before FILE` (an earlier release's `recall/vocabularies.py`, e.g. from
  `git show d3989aa:python/recall/vocabularies.py > /tmp/reader-before.py`), the same fresh
  index with that reader too, interleaved: the slowdown against it (target <= 1.05);
- unchanged re-index of the same N files: seconds (target <= 2 s at 10k files);
- baselines measured in the same run: reading + hashing every file (the floor of an unchanged
  re-index) and parse + chunk + embed without the store (the floor of a fresh index).

About 15 % of the notes declare a status the way teams write it (a Nygard `## Status` section in
a numbered `decisions/0012-slug.md`, a `Status:` field line, a MADR `status:` key, an opening
sentence "This note has been superseded by ADR 12."), and about 5 % mention a replacement in
passing (a sentence the reader must read and refuse).

With `--embedder minilm-l6` (and a few hundred notes) it measures the model's index path: the
fresh index embeds on a worker thread while files are read and batches written, so its chunks/s
against the sequential parse+chunk+embed baseline shows what the pipeline overlaps.

The index runs are timed without the calibration a first run ends with (`calibrate=False`);
`benches/first_answer.py` times that, as a user meets it.

Usage: python benches/index_throughput.py [--notes 10000] [--runs 5] [--reindex-runs 5]
       [--embedder hashing-512] [--reader-before FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# benches/ is on sys.path when this runs as a script.
from machine import cpu_model, p95

import recall
import recall.indexing
from recall import _core
from recall.chunking import chunk
from recall.frontmatter import parse
from recall.indexing import _embed_text, _title
from recall.vocabularies import Declarations, Edge, Statement, declare

WORDS = [
    "api",
    "gateway",
    "latency",
    "budget",
    "request",
    "limit",
    "retry",
    "backoff",
    "shard",
    "replica",
    "index",
    "query",
    "cache",
    "deploy",
    "freeze",
    "rollback",
    "incident",
    "review",
    "owner",
    "decision",
    "memo",
    "postgres",
    "migration",
    "backup",
    "restore",
    "quota",
    "tenant",
    "region",
    "failover",
    "alert",
    "threshold",
    "runbook",
    "escalation",
    "release",
    "train",
]

#: Share of notes that declare a status, and how they write it (weights).
DECLARING = 0.15
FORMS = {"nygard": 4, "field": 2, "madr": 2, "prose": 2}
#: Share of notes that mention a replacement in passing (read, and refused: another subject).
MENTIONING = 0.05
NYGARD_STATUS = ["Accepted", "Accepted", "❌ Rejected", "Superseded"]
FIELD_STATUS = ["Accepted", "Deprecated", "Proposed", "Superseded"]
MADR_STATUS = ["accepted", "rejected", "deprecated", "superseded"]


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 18))
    return " ".join(words).capitalize() + f" {rng.randint(1, 9999)}."


def note(
    i: int,
    rng: random.Random,
    form: str | None = None,
    header: str = "",
    fm_extra: tuple[str, ...] = (),
    supersedes: str | None = None,
    opening: str = "",
    mention: str = "",
) -> str:
    """One note: frontmatter (every third), title, 1-3 sections of prose. `rng` draws the prose
    exactly as before declarations were added; `form` and the strings place a declaration."""
    parts = []
    fm = list(fm_extra)
    if i % 3 == 0:
        fm.insert(0, f"valid_from: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
        if supersedes is not None:
            fm.append(f"supersedes: {supersedes}")
    if fm:
        parts.append("---\n" + "\n".join(fm) + "\n---\n")
    parts.append(f"# ADR {i}: Decision {i}\n\n" if form == "nygard" else f"# Decision {i}\n\n")
    parts.append(header)
    for s in range(rng.randint(1, 3)):
        parts.append(f"## Section {s}\n\n")
        for p in range(rng.randint(1, 3)):
            prose = " ".join(sentence(rng) for _ in range(rng.randint(2, 6)))
            if s == 0 and p == 0:
                prose = opening + prose + mention
            parts.append(prose + "\n\n")
        if rng.random() < 0.2:
            parts.append("```\nretry --max 5 --backoff exp\n```\n\n")
    return "".join(parts)


def generate(root: Path, n: int, seed: int = 7) -> Counter[str]:
    """Write n notes under root; return how many use each declaration form ("mention" counts
    notes that only mention a replacement). The prose is drawn from `seed` as before; the
    declarations from a second seeded RNG, so they do not change the prose."""
    rng = random.Random(seed)
    drng = random.Random(seed * 1_000 + 1)
    names: list[str] = []
    numbered: list[tuple[int, str]] = []  # (ADR number, file name) of the decisions/ notes
    forms: Counter[str] = Counter()
    for i in range(n):
        form = None
        if drng.random() < DECLARING:
            form = drng.choices(list(FORMS), weights=list(FORMS.values()))[0]
        mention = ""
        if form is None and drng.random() < MENTIONING:
            mention = " The retry section was replaced by the backoff runbook last quarter."
            forms["mention"] += 1
        earlier = drng.choice(numbered) if numbered else None
        header, opening = "", ""
        fm_extra: tuple[str, ...] = ()
        if form == "nygard":
            said = drng.choice(NYGARD_STATUS)
            if said == "Superseded":
                said = f"Superseded by [ADR {earlier[0]}]({earlier[1]})" if earlier else "Accepted"
            header = f"## Status\n\n{said}\n\n## Context\n\n{sentence(drng)}\n\n"
        elif form == "field":
            said = drng.choice(FIELD_STATUS)
            if said == "Superseded":
                said = f"Superseded by ADR {earlier[0]}" if earlier else "Accepted"
            header = f"Status: {said}\n\n"
        elif form == "madr":
            said = drng.choice(MADR_STATUS)
            if said == "superseded":
                said = f"superseded by ADR-{earlier[0]:04d}" if earlier else "accepted"
            fm_extra = (f"status: {said}", f"date: 2026-{drng.randint(1, 12):02d}-01")
        elif form == "prose":
            target = earlier[0] if earlier else 1
            opening = f"This note has been superseded by ADR {target}. "
        if form is not None:
            forms[form] += 1
        if form == "nygard":
            slug = "-".join(drng.sample(WORDS, 2))
            name = f"decisions/{i:04d}-{slug}.md"
            numbered.append((i, f"{i:04d}-{slug}.md"))
        else:
            name = f"team-{i % 20:02d}/note-{i:05d}.md"
        supersedes = None
        if i > 0 and i % 9 == 0:
            supersedes = names[i - 3].rsplit("/", 1)[-1]
        names.append(name)
        text = note(i, rng, form, header, fm_extra, supersedes, opening, mention)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return forms


def frontmatter_only(path: str, text: str, sidecar: object = None) -> Declarations:
    """The least any declarations reader does: frontmatter and its `supersedes:` edges (a
    note's metadata file is not read)."""
    if not path.lower().endswith((".md", ".markdown", ".mdx")):
        return Declarations(None, None, None, (), None)
    fm = parse(text)
    line = fm.lines.get("supersedes", 0)
    edges = tuple(
        Edge(
            ref,
            _core.resolution_key(ref),
            False,
            Statement("frontmatter", line, f"supersedes: {ref}"),
        )
        for ref in fm.supersedes
    )
    return Declarations(fm, None, None, edges, None)


def load_reader(path: Path) -> Callable[[str, str], object]:
    """`declare` of an earlier release's vocabularies module, fed to today's index run."""
    spec = importlib.util.spec_from_file_location("reader_before", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules["reader_before"] = module
    spec.loader.exec_module(module)

    # Its edges predate a standing: every one is a full edge. It reads no metadata file.
    module.Edge.standing = None
    before: Callable[[str, str], object] = module.declare
    return lambda path, text, sidecar=None: before(path, text)


def timed_loop(fn: Callable[[str, str], object], items: list[tuple[str, str]]) -> float:
    t = time.perf_counter()
    for rel, text in items:
        fn(rel, text)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5, help="fresh runs of each reader, interleaved")
    ap.add_argument("--reindex-runs", type=int, default=5)
    ap.add_argument("--embedder", default="hashing-512")
    ap.add_argument("--reader-before", type=Path, help="an earlier release's vocabularies.py")
    args = ap.parse_args()
    readers: dict[str, Callable[[str, str], object]] = {
        "full": declare,
        "frontmatter": frontmatter_only,
    }
    if args.reader_before is not None:
        readers["before"] = load_reader(args.reader_before)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notes"
        forms = generate(root, args.notes)
        files = sorted(root.rglob("*.md"))
        texts = [(f.relative_to(root).as_posix(), f.read_text(encoding="utf-8")) for f in files]

        # Check the reader reads what was planted: a statement in every declaring note, none
        # in the others (a mention in passing is refused), and the baseline reads none.
        declaring = sum(n for form, n in forms.items() if form != "mention")
        read = [declare(rel, text) for rel, text in texts]
        with_statements = sum(1 for d in read if d.statements)
        assert with_statements == declaring, (with_statements, forms)
        assert not any(frontmatter_only(rel, text).statements for rel, text in texts)

        # Baseline 1: read + hash every file (what an unchanged re-index cannot avoid).
        hash_times = []
        for _ in range(args.reindex_runs):
            t = time.perf_counter()
            for f in files:
                hashlib.blake2b(f.read_bytes(), digest_size=16).hexdigest()
            hash_times.append(time.perf_counter() - t)

        # Baseline 2: parse + chunk + embed, no store.
        embedder = recall.get_embedder(args.embedder)
        t = time.perf_counter()
        n_chunks = 0
        for f in files:
            fm = parse(f.read_text(encoding="utf-8"))
            chunks = chunk(fm.body, base_byte=fm.body_offset, base_line=fm.body_line)
            title = _title(fm, chunks, f.name)
            embedder.embed([_embed_text(title, c) for c in chunks])
            n_chunks += len(chunks)
        pipeline_s = time.perf_counter() - t

        # The reader alone: declare() against parse() over every text, interleaved.
        declare_times, parse_times, before_times = [], [], []
        for run in range(max(args.reindex_runs, 5)):
            for which in ("declare", "parse") if run % 2 == 0 else ("parse", "declare"):
                if which == "declare":
                    declare_times.append(timed_loop(declare, texts))
                else:
                    parse_times.append(timed_loop(lambda _rel, text: parse(text), texts))
            if "before" in readers:
                before_times.append(timed_loop(readers["before"], texts))

        # Fresh index with the full reader and with the frontmatter-only one, interleaved
        # (ABBA order), each into a new store.
        fresh: dict[str, list[float]] = {name: [] for name in readers}
        cpu: dict[str, list[float]] = {name: [] for name in readers}  # process CPU seconds
        stats = {}
        for run in range(args.runs):
            order = list(readers) if run % 2 == 0 else list(reversed(readers))
            for reader in order:
                db = Path(tmp) / f"fresh-{reader}-{run}.db"
                recall.indexing.declare = readers[reader]  # type: ignore[assignment]
                try:
                    with recall.open(db, embedder=args.embedder) as mem:
                        t, c = time.perf_counter(), time.process_time()
                        report = mem.index(root, calibrate=False)
                        fresh[reader].append(time.perf_counter() - t)
                        cpu[reader].append(time.process_time() - c)
                        # Check the result before trusting the timing.
                        assert report.ok and len(report.added) == args.notes, report.refused[:3]
                        assert report.chunks == n_chunks, (report.chunks, n_chunks)
                        stats[reader] = mem.stats()
                finally:
                    recall.indexing.declare = declare
                if run > 0:
                    os.remove(db)  # keep one store of each (the re-index reads fresh-full-0)
        by_vocabulary = {
            reader: {name: active for name, active, _ in s.edges_by_vocabulary if active}
            for reader, s in stats.items()
        }
        full_vocab, base_vocab = by_vocabulary["full"], by_vocabulary["frontmatter"]
        assert all(full_vocab.get(v) for v in ("nygard", "madr", "prose")), full_vocab
        assert stats["full"].retired > 0, stats["full"]
        assert set(base_vocab) <= {"frontmatter"} and stats["frontmatter"].retired == 0, (
            base_vocab,
            stats["frontmatter"].retired,
        )
        size = stats["full"].file_size_bytes

        reindex = []
        with recall.open(Path(tmp) / "fresh-full-0.db") as mem:
            for _ in range(args.reindex_runs):
                t = time.perf_counter()
                report = mem.index(root, calibrate=False)
                reindex.append(time.perf_counter() - t)
                assert report.unchanged == args.notes and report.embedded == 0

    full, base = fresh["full"], fresh["frontmatter"]
    fresh_med, base_med = statistics.median(full), statistics.median(base)
    ratio = fresh_med / base_med
    pairs = sorted(f / b for f, b in zip(full, base))
    cpu_ratio = statistics.median(cpu["full"]) / statistics.median(cpu["frontmatter"])
    dec_med, parse_med = statistics.median(declare_times), statistics.median(parse_times)
    machine = f"{platform.machine()} {cpu_model()}, {os.cpu_count()} CPUs"
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {machine}, python {platform.python_version()}, load average {load}")
    print(f"corpus: {args.notes} notes, {n_chunks} chunks, {embedder.name}")
    print(
        f"  declaring: {declaring} notes ({declaring / args.notes:.0%}: "
        + ", ".join(f"{form} {forms[form]}" for form in FORMS)
        + f"), mentioning a replacement: {forms['mention']}"
    )
    print(
        "  edges in force, full reader: "
        + ", ".join(f"{v} {n}" for v, n in sorted(full_vocab.items()))
        + f"; retired {stats['full'].retired}"
        + "; frontmatter-only: "
        + ", ".join(f"{v} {n}" for v, n in sorted(base_vocab.items()))
        + f"; retired {stats['frontmatter'].retired}"
    )
    print(
        f"fresh index:        median {fresh_med:.2f} s, p95 {p95(full):.2f} s "
        f"-> {n_chunks / fresh_med:,.0f} chunks/s"
        + (" (target >= 2,000)" if embedder.name.startswith("hashing") else "")
        + f"; runs {', '.join(f'{x:.2f}' for x in full)}; "
        f"CPU median {statistics.median(cpu['full']):.2f} s"
    )
    print(
        f"  baseline frontmatter-only reader: median {base_med:.2f} s, p95 {p95(base):.2f} s; "
        f"runs {', '.join(f'{x:.2f}' for x in base)}; "
        f"CPU median {statistics.median(cpu['frontmatter']):.2f} s"
    )
    print(
        f"  full / frontmatter-only: {ratio:.3f}x (medians; per interleaved pair "
        f"{pairs[0]:.3f}-{pairs[-1]:.3f}; process CPU {cpu_ratio:.3f}x): "
        + ("within" if ratio <= 1.05 else "NOT within")
        + " 1.05 (bound on the slowdown against any earlier reader)"
    )
    if "before" in fresh:
        before = fresh["before"]
        before_med = statistics.median(before)
        against = fresh_med / before_med
        pairs_before = sorted(f / b for f, b in zip(full, before))
        cpu_before = statistics.median(cpu["full"]) / statistics.median(cpu["before"])
        print(
            f"  baseline reader before ({args.reader_before}): median {before_med:.2f} s, "
            f"p95 {p95(before):.2f} s; runs {', '.join(f'{x:.2f}' for x in before)}; "
            f"CPU median {statistics.median(cpu['before']):.2f} s"
        )
        print(
            f"  full / before: {against:.3f}x (medians; per interleaved pair "
            f"{pairs_before[0]:.3f}-{pairs_before[-1]:.3f}; process CPU {cpu_before:.3f}x): "
            + ("within" if against <= 1.05 else "NOT within")
            + " 1.05"
        )
    print(
        f"  declare() over {len(texts)} texts: median {dec_med:.3f} s, "
        f"p95 {p95(declare_times):.3f} s ({(dec_med / len(texts)) * 1e6:.0f} us per note); "
        f"baseline frontmatter.parse(): median {parse_med:.3f} s, p95 {p95(parse_times):.3f} s; "
        f"ratio {dec_med / parse_med:.1f}x; "
        f"reader's extra {dec_med - parse_med:.3f} s = {(dec_med - parse_med) / base_med:.1%} "
        "of the frontmatter-only index"
    )
    if before_times:
        before_med = statistics.median(before_times)
        print(
            f"  the previous reader's declare() over the same texts: median {before_med:.3f} s, "
            f"p95 {p95(before_times):.3f} s ({(before_med / len(texts)) * 1e6:.0f} us per note); "
            f"today's extra {dec_med - before_med:.3f} s = {(dec_med - before_med) / base_med:.1%} "
            "of the frontmatter-only index"
        )
    print(
        f"  baseline parse+chunk+embed (no store): {pipeline_s:.2f} s "
        f"({n_chunks / pipeline_s:,.0f} chunks/s); store share "
        f"{max(fresh_med - pipeline_s, 0) / fresh_med:.0%}"
    )
    print(
        f"unchanged re-index: median {statistics.median(reindex):.3f} s, p95 {p95(reindex):.3f} s "
        "(target <= 2 s at 10k files)"
    )
    print(
        f"  baseline read+hash only: median {statistics.median(hash_times):.3f} s; ratio "
        f"{statistics.median(reindex) / statistics.median(hash_times):.2f}x"
    )
    print(f"store size: {size / n_chunks:,.0f} bytes per chunk ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
