"""What the benchmarks share: the machine they ran on, the p95 they print, and the `recall`
command they run (benches/ is on sys.path when a script runs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


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
