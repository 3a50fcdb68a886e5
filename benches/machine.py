"""What the benchmarks share: the machine they ran on, the p95 they print, the `recall` command
they run and the child processes they time (benches/ is on sys.path when a script runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def recall_command() -> list[str]:
    """The installed `recall` console script next to this interpreter, else `-m recall.cli`."""
    script = Path(sys.executable).with_name("recall")
    if script.exists():
        return [str(script)]
    found = shutil.which("recall")
    return [found] if found else [sys.executable, "-m", "recall.cli"]


def child_json(python: str, script: str, *args: str, stdin: str | None = None) -> dict[str, Any]:
    """Run `script` in a new process of `python` with `args` (and `stdin`): the JSON object it
    prints last. A child that fails stops the bench with its error."""
    child = subprocess.run(
        [python, "-c", script, *args], input=stdin, capture_output=True, text=True, check=True
    )
    out: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    return out


def cpu_model() -> str:
    """The CPU model `lscpu` reports, or "unknown CPU"."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip() or "unknown CPU"
    return "unknown CPU"
