"""Instructions a fresh index run executes, per declarations reader, counted by callgrind.

Wall-clock ratios between two readers on a shared 2-core machine spread wider than the effect
they measure (benches/index_throughput.py prints the spread). An instruction count is the same
for the same binary, inputs and environment whatever else the machine does, so this measures
the same comparison without that noise: one fresh index of the same generated corpus
(benches/index_throughput.py's, about 15 % declaring notes) per reader, each under
`valgrind --tool=callgrind`, minus a run that does everything but the index call (interpreter
start, imports, both readers loaded, the store opened). Instructions are not seconds (cache
misses and allocation are not counted); the timed ratios stay in benches/index_throughput.py.

Readers: today's (`full`), the frontmatter-only floor (`frontmatter`), and with
`--reader-before FILE` an earlier release's `recall/vocabularies.py` (`before`).

Needs valgrind (Debian: `apt-get install valgrind`). Runs as many counts at once as there are
cores; at 10,000 notes each takes several minutes.

Usage: python benches/index_instructions.py [--notes 10000] [--reader-before FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def child(reader: str, corpus: Path, before: Path | None, db: Path) -> None:
    """One counted process: load everything, then index (unless `reader` is `none`)."""
    from index_throughput import frontmatter_only, load_reader

    import recall
    import recall.indexing
    import recall.opening  # imported by the reader's first call: not the index's cost
    from recall.vocabularies import declare

    readers = {"full": declare, "frontmatter": frontmatter_only}
    if before is not None:
        readers["before"] = load_reader(before)
    with recall.open(db, embedder="hashing-512") as mem:
        if reader == "none":
            return
        recall.indexing.declare = readers[reader]  # type: ignore[assignment]
        report = mem.index(corpus, calibrate=False)
        assert report.ok and report.added, report.refused[:3]


def count(reader: str, corpus: Path, before: Path | None, work: Path) -> int:
    out = work / f"callgrind.{reader}.out"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        reader,
        "--corpus",
        str(corpus),
        "--db",
        str(work / f"{reader}.db"),
    ]
    if before is not None:
        command += ["--reader-before", str(before)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {reader} run failed:\n{done.stderr[-2000:]}")
    for line in out.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"{out}: no totals line")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--reader-before", type=Path, help="an earlier release's vocabularies.py")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.corpus, args.reader_before, args.db)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    from index_throughput import generate
    from machine import cpu_model

    readers = ["none", "full", "frontmatter"] + (["before"] if args.reader_before else [])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "notes"
        generate(corpus, args.notes)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            counts = dict(
                zip(
                    readers,
                    pool.map(lambda r: count(r, corpus, args.reader_before, work), readers),
                )
            )
    base = counts.pop("none")
    index = {reader: total - base for reader, total in counts.items()}
    print(
        f"machine: {platform.machine()} {cpu_model()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}"
    )
    print(f"corpus: {args.notes} notes (benches/index_throughput.py's), hashing-512")
    print(f"  start, imports, readers loaded, store opened (subtracted): {base:,} instructions")
    for reader, n in index.items():
        print(
            f"  fresh index, {reader} reader: {n:,} instructions ({n / args.notes:,.0f} per note)"
        )
    for other in ("frontmatter", "before"):
        if other in index:
            ratio = index["full"] / index[other]
            print(
                f"  full / {other}: {ratio:.4f}x "
                + ("within" if ratio <= 1.05 else "NOT within")
                + " 1.05"
            )


if __name__ == "__main__":
    main()
