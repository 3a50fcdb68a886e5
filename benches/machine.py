"""What the benchmarks print about the machine they ran on (benches/ is on sys.path when a
script runs)."""

from __future__ import annotations

import subprocess


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
