"""Mutation run of the judgment crate against its own tests: how many of the rules' mutants the
crate's suite kills.

Runs `cargo mutants` (install it with `cargo install cargo-mutants`) on recall-judgment alone,
testing each mutant with `cargo test -p recall-judgment`, so the Python suite plays no part, then
prints caught / missed / unviable / timeout per file and every missed mutant. A missed mutant
is a change to a rule that no test of the crate notices.

    python crates/judgment/mutants.py                  # every file of the crate (~15 min, 2 cores)
    python crates/judgment/mutants.py -f trust.rs -f graph.rs
    python crates/judgment/mutants.py --json           # the tally for scripts

Exits 1 when a mutant is missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

CRATE = Path(__file__).resolve().parent
ROOT = CRATE.parents[1]
OUTCOMES = {
    "CaughtMutant": "caught",
    "MissedMutant": "missed",
    "Unviable": "unviable",
    "Timeout": "timeout",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "-f", "--file", action="append", default=[], help="a file of src/ (repeat; default all)"
    )
    ap.add_argument("-j", "--jobs", type=int, default=1, help="mutants built at once")
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "target" / "mutants")
    ap.add_argument("--json", action="store_true", help="print the tally as JSON")
    args = ap.parse_args()
    if shutil.which("cargo-mutants") is None:
        print("cargo-mutants is not installed: run `cargo install cargo-mutants`", file=sys.stderr)
        return 2
    cmd = ["cargo", "mutants", "-p", "recall-judgment", "--test-package", "recall-judgment"]
    cmd += ["-o", str(args.out), "-j", str(args.jobs), "--no-shuffle"]
    for f in args.file:
        cmd += ["-f", str(Path("crates/judgment/src") / Path(f).name)]
    # cargo-mutants exits non-zero when a mutant is missed; the outcomes say so below.
    subprocess.run(cmd, cwd=ROOT, check=False, stdout=sys.stderr if args.json else None)
    path = args.out / "mutants.out" / "outcomes.json"
    if not path.is_file():
        print(f"no outcomes at {path}: the run did not finish", file=sys.stderr)
        return 2
    tally, missed = read(path)
    if args.json:
        print(json.dumps({"files": tally, "missed": missed}, indent=2))
    else:
        show(tally, missed)
    return 1 if missed else 0


def read(path: Path) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Per file, the count of each outcome; and the missed mutants' names."""
    tally: dict[str, Counter[str]] = {}
    missed: list[str] = []
    for o in json.loads(path.read_text())["outcomes"]:
        mutant = o["scenario"]
        if not isinstance(mutant, dict):  # the unmutated baseline
            continue
        name = mutant["Mutant"]["name"]
        outcome = OUTCOMES.get(o["summary"], o["summary"])
        tally.setdefault(Path(mutant["Mutant"]["file"]).name, Counter())[outcome] += 1
        if outcome == "missed":
            missed.append(name)
    return {f: dict(c) for f, c in sorted(tally.items())}, missed


def show(tally: dict[str, dict[str, int]], missed: list[str]) -> None:
    kinds = ("caught", "missed", "unviable", "timeout")
    print(f"\n{'file':<16}" + "".join(f"{k:>10}" for k in kinds))
    total: Counter[str] = Counter()
    for f, counts in tally.items():
        total.update(counts)
        print(f"{f:<16}" + "".join(f"{counts.get(k, 0):>10}" for k in kinds))
    print(f"{'all':<16}" + "".join(f"{total.get(k, 0):>10}" for k in kinds))
    for name in missed:
        print(f"missed: {name}")


if __name__ == "__main__":
    sys.exit(main())
