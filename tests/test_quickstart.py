"""`recall quickstart` (SPEC §8.2): the shipped demo indexes, calibrates to a certified
boundary with the default embedder, and shows the three outcomes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from recall import demo


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    recall_bin = shutil.which("recall") or str(Path(sys.executable).parent / "recall")
    # The quickstart runs on the default embedder for new stores, whatever the suite's default.
    env = {k: v for k, v in os.environ.items() if k != "RECALL_EMBEDDER"}
    return subprocess.run(
        [recall_bin, "quickstart", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_demo_files_ship_inside_the_package() -> None:
    assert (demo.DEMO_DIR / "notes").is_dir()
    lines = (demo.DEMO_DIR / "queries.jsonl").read_text().splitlines()
    labels = [json.loads(line)["answerable"] for line in lines if line.strip()]
    assert labels.count(True) >= 20 and labels.count(False) >= 20


def test_quickstart_json_shows_the_three_outcomes(tmp_path: Path) -> None:
    proc = _run("--db", str(tmp_path / "qs.db"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["index"]["ok"] and data["calibration"]["certified"] is True
    assert data["calibration"]["embedder"] == "minilm-l6"
    ok_q, stale_q, refused_q = data["questions"]

    first = ok_q["result"]["hits"][0]
    assert not ok_q["result"]["abstained"]
    assert (first["verdict"], first["provenance"]["file"]) == ("ok", ok_q["file"])

    hits = stale_q["result"]["hits"]
    assert (hits[0]["verdict"], hits[0]["provenance"]["file"]) == ("ok", stale_q["successor"])
    (stale,) = [h for h in hits if h["provenance"]["file"] == stale_q["stale"]]
    assert stale["verdict"] == "superseded"
    assert stale["validity"]["superseded_by"] == stale_q["successor"]
    assert stale["score"] > hits[0]["score"], "the stale memo is the nearer match"

    assert refused_q["result"]["abstained"] and refused_q["result"]["reason"]


def test_quickstart_human_output(tmp_path: Path) -> None:
    proc = _run("--db", str(tmp_path / "qs.db"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "certified" in out and "superseded" in out and "abstained:" in out
    assert "recall index ~/notes" in out, "it says how to do the same with your own notes"
