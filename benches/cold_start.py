"""Cold-process search: `recall search` from a fresh interpreter on a 10k-chunk store (SPEC §10).

Target: `recall search QUERY --db DB --json` takes <= 0.3 s wall, spawn to exit. Each figure is
a new process, timed from spawn to exit, over several runs (median and p95):

- (a) `python -c pass`: the interpreter floor, the baseline measured in the same run;
- (b) `python -c "import recall"` (and `import recall.cli`, which adds typer);
- (c) `recall search QUERY --db DB --mode development --json`: the headline;
- (d) the same with `--mode strict` on a store calibrated from labelled queries (answerable:
  Zipf queries of one note's words; unanswerable: made-up words the vocabulary never holds).

The store is a `ZipfCorpus` sized to about N chunks (`notes_for`: a note makes 1.6 chunks on
average) and indexed with `--embedder` (`hashing-512` by default, so no model is loaded and the
figures are the import and process overhead plus one search). With an ONNX embedder
(`minilm-l6`) the search also loads the model; then (c) is timed twice: with recall's cache
folder (the model files' digests remembered, `recall.digests`, and the model's optimised graph
saved, `recall.graphs`; both made by the warm-up runs) and with a cache folder that cannot be
written, so every start hashes the model files and optimises the graph again (the baseline, in
the same run). Also printed: the modules that `python -X importtime -c "import recall.cli"`
spends the most time in.

Usage: python benches/cold_start.py [--chunks 10000] [--runs 15] [--embedder hashing-512]
       (with minilm-l6, --chunks 1000 indexes in 15–30 s)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# benches/ is on sys.path when this runs as a script.
from machine import cpu_model, p95, recall_command
from zipf_corpus import ZipfCorpus

import recall

TARGET_S = 0.3
WARMUP = 2
TOP_IMPORTS = 12
LABELLED_PER_CLASS = 40


def clean_env(pycache: Path) -> dict[str, str]:
    """The environment without recall's own variables, so the command line alone decides, and
    with a bytecode cache in `pycache`: an installed package has its modules compiled, so the
    figures should not include compiling them (the warm-up runs fill the cache)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def timed(
    commands: dict[str, list[str]],
    runs: int,
    env: dict[str, str],
    envs: dict[str, dict[str, str]] | None = None,
) -> dict[str, list[float]]:
    """Wall seconds from spawn to exit of each command, `runs` times after WARMUP untimed runs;
    `envs` gives a command its own environment instead of `env`.

    The commands take turns, one run each per round, so a load that comes and goes on the
    machine falls on all of them alike and the ratios to the floor hold."""
    times: dict[str, list[float]] = {label: [] for label in commands}
    for i in range(WARMUP + runs):
        for label, cmd in commands.items():
            t = time.perf_counter()
            run_env = (envs or {}).get(label, env)
            proc = subprocess.run(cmd, capture_output=True, env=run_env, check=False)
            elapsed = time.perf_counter() - t
            if proc.returncode != 0:
                raise SystemExit(
                    f"{' '.join(cmd)} exited {proc.returncode}:\n"
                    + proc.stderr.decode(errors="replace")
                )
            if i >= WARMUP:
                times[label].append(elapsed)
    return times


def run_json(cmd: list[str], env: dict[str, str]) -> Any:
    proc = subprocess.run(cmd, capture_output=True, env=env, check=False, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return json.loads(proc.stdout)


def made_up_query(rng: random.Random) -> str:
    """Words the corpus never holds: its pseudo-words use no 'q', 'w', 'x' or 'y'."""
    return " ".join(
        "".join(rng.choice("qwxy") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
        for _ in range(6)
    )


def calibrate(db: Path, corpus: ZipfCorpus) -> tuple[bool, str]:
    """Fit a calibration from labelled queries; (certified, reason)."""
    rng = random.Random(3)
    positives = [(q, True) for q, _ in corpus.queries(LABELLED_PER_CLASS, seed=101)]
    negatives = [(made_up_query(rng), False) for _ in range(LABELLED_PER_CLASS)]
    with recall.open(db) as mem:
        _, fit = mem.calibrate(positives + negatives)
    return fit.certified, fit.certified_reason


def import_costs(args: list[str], env: dict[str, str]) -> list[tuple[int, int, str]]:
    """(cumulative us, self us, module) from `python -X importtime ARGS`, with a warm cache.
    The module name keeps its indentation: two spaces per level of nesting."""
    cmd = [sys.executable, "-X", "importtime", *args]
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    err = subprocess.run(cmd, capture_output=True, env=env, check=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line.split(":", 1)[1].split("|")
        rows.append((int(cum_us), int(self_us), name[1:].rstrip()))
    return sorted(rows, reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--embedder", default="hashing-512")
    args = ap.parse_args()

    py = sys.executable
    cli = recall_command()
    corpus = ZipfCorpus(ZipfCorpus(1).notes_for(args.chunks))
    query, target = corpus.queries(1)[0]

    with tempfile.TemporaryDirectory() as tmp:
        env = clean_env(Path(tmp) / "pycache")
        env["RECALL_CACHE_DIR"] = str(Path(tmp) / "cache")
        root = Path(tmp) / "notes"
        corpus.write(root)
        # Two stores of the same notes: (c) searches an uncalibrated one, (d) a calibrated one.
        dbs = {mode: Path(tmp) / f"{mode}.db" for mode in ("development", "strict")}
        for db in dbs.values():
            t = time.perf_counter()
            with recall.open(db, embedder=args.embedder) as mem:
                report = mem.index(root, calibrate=False)
                chunks = mem.stats().chunks
            index_s = time.perf_counter() - t
            assert report.ok and len(report.added) == corpus.n, report.refused[:3]

        def search(mode: str) -> list[str]:
            return [*cli, "search", query, "--db", str(dbs[mode]), "--json", "--mode", mode]

        # Check the result before timing it: the query's target note is among the hits.
        found = run_json(search("development"), env)
        files = [h["provenance"]["file"] for h in found["hits"]]
        assert any(f.endswith(corpus.relpath(target)) for f in files), (target, files)

        commands = {
            "(a) python -c pass": [py, "-c", "pass"],
            "(b) python -c 'import recall'": [py, "-c", "import recall"],
            "    python -c 'import recall.cli'": [py, "-c", "import recall.cli"],
            "(c) recall search --mode development": search("development"),
        }
        envs: dict[str, dict[str, str]] = {}
        if not args.embedder.startswith("hashing-"):
            # The baseline: a cache folder that is a file, so nothing is ever remembered or saved.
            unusable = Path(tmp) / "no-cache"
            unusable.write_text("")
            label = "(c) the same, nothing cached"
            commands[label] = search("development")
            envs[label] = {**env, "RECALL_CACHE_DIR": str(unusable)}
        certified, why = calibrate(dbs["strict"], corpus)
        skipped = ""
        if certified:
            result = run_json(search("strict"), env)
            assert result["trust_state"] == "trusted", result["trust_state"]
            commands["(d) recall search --mode strict"] = search("strict")
        else:
            skipped = f"(d) skipped: the calibration is not certified ({why})"
        rows = list(timed(commands, args.runs, env, envs).items())
        costs = import_costs(["-c", "import recall.cli"], env)
        # What the search imports while it runs too (typer loads its coercion layer then).
        during = import_costs(["-m", "recall.cli", *search("development")[len(cli) :]], env)

    floor = statistics.median(rows[0][1])
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, python {platform.python_version()}")
    print(f"store: {corpus.n} notes, {chunks} chunks, {args.embedder}, indexed in {index_s:.1f} s")
    shown = [Path(cli[-1]).name if len(cli) == 1 else "python -m recall.cli"]
    print(f"command: {' '.join(shown + search('development')[len(cli) :])}")
    print(
        f"wall time per process, spawn to exit, {args.runs} runs each after {WARMUP} warm-up, "
        "in turns; bytecode cached:"
    )
    for label, xs in rows:
        med = statistics.median(xs)
        print(
            f"  {label:<38} median {med * 1e3:6.0f} ms, p95 {p95(xs) * 1e3:6.0f} ms "
            f"({med / floor:4.1f}x the interpreter floor)"
        )
    if skipped:
        print(f"  {skipped}")
    print(f"top {TOP_IMPORTS} imports, `python -X importtime -c 'import recall.cli'` (cumulative):")
    for cum, own, name in costs[:TOP_IMPORTS]:
        print(f"  {cum / 1e3:7.1f} ms cumulative, {own / 1e3:6.1f} ms self  {name}")
    top_level = [(cum, name) for cum, _, name in during if not name.startswith(" ")]
    total = sum(own for _, own, _ in during)
    print(
        f"imports of the whole `recall search` (python -X importtime -m recall.cli search ...): "
        f"{total / 1e3:.0f} ms in {len(during)} modules; the largest top-level ones:"
    )
    for cum, name in top_level[:6]:
        print(f"  {cum / 1e3:7.1f} ms cumulative  {name}")
    headline = [
        xs
        for label, xs in rows
        if label.startswith(("(c)", "(d)")) and not label.endswith("nothing cached")
    ]
    worst = max(statistics.median(xs) for xs in headline)
    verdict = "MET" if worst <= TARGET_S else "NOT MET"
    print(
        f"target: cold `recall search` <= {TARGET_S:.1f} s (median): {verdict} "
        f"(slowest of (c)/(d): {worst:.3f} s)"
    )


if __name__ == "__main__":
    main()
