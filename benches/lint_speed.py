"""`recall lint` on 10,000 notes (SPEC §8.4, §10): wall time of what a user runs, against the
floor of reading every file.

Measures, over several runs (median and p95):
- (a) baseline: reading every file's bytes in Python (walk + open + read), the floor of any
  tool that looks at every note;
- (b) `lint()` in process: walk, read, declare every vocabulary, resolve, every rule;
- (c) `recall lint DIR --json` as a subprocess, spawn to exit: the headline (target <= 2 s);
- (d) `fix()` dry run in process (proposals and refusals for every closure phrase).

The corpus is seeded: 10,000 notes of 80–160 Zipf words in 10 folders of notes plus an `adr/`
folder (Nygard ADRs) and a `peps/` folder (PEP-style `.rst`), with frontmatter edges (5 %),
dangling references, versioned siblings, closure prose (plain and hedged), malformed dates,
empty windows and supersession cycles. The findings per code are known from the generator and
checked before anything is timed.

Usage: python benches/lint_speed.py [--notes 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

# benches/ is on sys.path when this runs as a script.
from machine import cpu_model, p95, recall_command
from zipf_corpus import ZipfCorpus

from recall.authoring.fix import fix
from recall.authoring.lint import lint

TARGET_S = 2.0
FOLDERS = 10


class LintCorpus:
    """`n` notes; `expected` counts the findings per code the generator planted."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.words = ZipfCorpus(n, seed=23)
        self.expected: Counter[str] = Counter()
        self.files: dict[str, str] = {}
        per_folder = max(1, n // FOLDERS)
        for i in range(n):
            self._note(i, f"f{min(i // per_folder, FOLDERS - 1):02d}")

    def body(self, i: int) -> str:
        return " ".join(self.words.words(i)) + "."

    def _put(self, rel: str, text: str) -> None:
        self.files[rel] = text

    def _note(self, i: int, folder: str) -> None:
        slot, hundred = i % 100, i // 100
        name = f"{folder}/note-{i:05d}.md"
        plain = f"# Note {i}\n\n{self.body(i)}\n"
        if slot in (1, 21, 41, 61):
            self._put(name, f"---\nsupersedes: note-{i - 1:05d}.md\n---\n{plain}")
        elif slot == 81:
            self._put(name, f"---\nsupersedes: gone-{i:05d}.md\n---\n{plain}")
            self.expected["E001"] += 1
        elif slot == 10:
            closure = f"This note is superseded by [the next one](note-{i + 1:05d}.md)."
            self._put(name, f"# Note {i}\n\n{self.body(i)} {closure}\n")
            self.expected["W002"] += 1
        elif slot == 30:
            hedge = f"This may replace [an older note](note-{i - 1:05d}.md) next quarter."
            self._put(name, f"# Note {i}\n\n{hedge} {self.body(i)}\n")
        elif slot == 50:
            self._put(f"{folder}/plan-{i:05d}-v1.md", plain)
        elif slot == 51:
            v1 = f"plan-{i - 1:05d}-v1.md"
            if hundred % 2 == 0:
                self._put(
                    f"{folder}/plan-{i - 1:05d}-v2.md", f"---\nsupersedes: {v1}\n---\n{plain}"
                )
            else:
                self._put(f"{folder}/plan-{i - 1:05d}-v2.md", plain)
                self.expected["W001"] += 1
        elif slot == 70:
            if hundred % 5 == 0:
                self._put(name, f"---\nvalid_from: 2026-02-30\n---\n{plain}")
                self.expected["E004"] += 1
            elif hundred % 5 == 1:
                window = "valid_from: 2026-05-01\nvalid_until: 2026-04-01"
                self._put(name, f"---\n{window}\n---\n{plain}")
                self.expected["E005"] += 1
            else:
                self._put(name, f"---\nvalid_until: 2026-04-01\n---\n{plain}")
        elif slot == 90 and hundred % 10 == 0:
            self._put(name, f"---\nsupersedes: note-{i + 1:05d}.md\n---\n{plain}")
            self.expected["E003"] += 1
        elif slot == 91:
            self._put(name, f"---\nsupersedes: note-{i - 1:05d}.md\n---\n{plain}")
        elif slot == 95:
            self._adr(hundred + 1, i)
        elif slot == 96:
            self._pep(hundred + 1, i)
        else:
            self._put(name, plain)

    def _adr(self, number: int, i: int) -> None:
        if number % 10 == 0:
            status = f"Superseded by ADR-{number + 500:04d}"
            self.expected["E001"] += 1
        elif number % 2 == 0:
            status = f"Supersedes ADR-{number - 1:04d}"
        else:
            status = "Accepted"
        text = (
            f"# {number}. Decision {i}\n\nDate: 2026-01-{number % 28 + 1:02d}\n\n## Status\n\n"
            f"{status}\n\n## Context\n\n{self.body(i)}\n\n## Decision\n\nWe do it.\n"
        )
        self._put(f"adr/{number:04d}-decision-{i:05d}.md", text)

    def _pep(self, number: int, i: int) -> None:
        headers = [f"PEP: {number}", f"Title: Proposal {i}", "Status: Final"]
        if number % 4 == 0:
            headers.append(f"Replaces: {number - 1}")
        if number % 20 == 0:
            headers.append(f"Superseded-By: {number + 1000}")
            self.expected["E001"] += 1
        text = "\n".join(headers) + f"\n\n\nAbstract\n========\n\n{self.body(i)}\n"
        self._put(f"peps/pep-{number:04d}.rst", text)

    def write(self, root: Path) -> None:
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def read_all(root: Path) -> int:
    """The baseline: every file's bytes, read in Python."""
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                total += len(handle.read())
    return total


def timed(fn: object, runs: int) -> list[float]:
    assert callable(fn)
    fn()  # warm the page cache and the imports
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()

    corpus = LintCorpus(args.notes)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notes"
        corpus.write(root)
        size = sum(len(t.encode("utf-8")) for t in corpus.files.values())

        # Check the result before timing it.
        report = lint([root])
        got = Counter(report.counts())
        assert report.files == len(corpus.files), (report.files, len(corpus.files))
        assert got == corpus.expected, f"findings {dict(got)} != planted {dict(corpus.expected)}"
        cmd = [*recall_command(), "lint", str(root), "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert done.returncode == 1, done.stderr
        assert Counter(json.loads(done.stdout)["counts"]) == corpus.expected
        planned = fix([root])
        assert len(planned.proposals) == corpus.expected["W002"], len(planned.proposals)

        baseline = timed(lambda: read_all(root), args.runs)
        in_process = timed(lambda: lint([root]), args.runs)
        dry_run = timed(lambda: fix([root]), args.runs)
        cli = timed(lambda: subprocess.run(cmd, capture_output=True, check=False), args.runs)

    base = statistics.median(baseline)
    rows = [
        ("baseline: read every file (Python)", baseline),
        ("lint() in process", in_process),
        ("fix() dry run in process", dry_run),
        ("`recall lint DIR --json` (subprocess)", cli),
    ]
    print(
        f"{len(corpus.files):,} notes, {size / 1e6:.1f} MB; {sum(corpus.expected.values())} "
        f"planted findings {dict(sorted(corpus.expected.items()))}; {args.runs} runs"
    )
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"| {'measure':<40} | {'median':>8} | {'p95':>8} | {'× baseline':>10} |")
    print(f"| {'-' * 40} | {'-' * 8} | {'-' * 8} | {'-' * 10} |")
    for label, xs in rows:
        med = statistics.median(xs)
        print(f"| {label:<40} | {med:>7.3f}s | {p95(xs):>7.3f}s | {med / base:>9.1f}× |")
    headline = statistics.median(cli)
    verdict = "meets" if headline <= TARGET_S else "misses"
    notes = f"{len(corpus.files):,} notes"
    print(f"`recall lint` on {notes}: {headline:.2f} s ({verdict} the {TARGET_S} s target)")


if __name__ == "__main__":
    main()
