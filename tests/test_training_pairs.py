"""The judge's training pairs (`training/judge/pairs.py`): each question's own section is the
answer and the sections beside it, on the same topic by construction, are its near misses."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "training" / "judge" / "pairs.py"

FAQ = """General Python FAQ
==================

Why is the sky of this FAQ blue?
--------------------------------

Because the interpreter reflects short wavelengths of light more than long ones, the sky of this
FAQ looks blue to every reader who has ever opened it in a browser with default colours.

How do I stop a runaway loop?
-----------------------------

Press Control-C in the terminal: the interpreter raises :exc:`KeyboardInterrupt` in the main
thread, which ends the loop unless the loop catches that exception and carries on regardless.

Where do the release notes live?
--------------------------------

The release notes of each version are kept in the ``whatsnew`` folder of the documentation,
one page per minor version, with the changes grouped by module and by kind of change.
"""

LIBRARY = """:mod:`shelf` --- Keeping objects
================================

Functions
---------

.. function:: keep(obj, name)

   Store *obj* under *name* in the shelf, replacing whatever was kept under that name before;
   the object must be picklable, and the shelf is written to disk when it is closed.

.. function:: fetch(name)

   Return the object kept under *name*, or raise :exc:`KeyError` when nothing was kept under
   it; fetching does not remove the object, and a runaway loop of fetches is harmless.

   .. versionadded:: 3.2
"""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("judge_pairs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_pairs"] = module
    spec.loader.exec_module(module)
    return module


def _sources(tmp_path: Path) -> Path:
    sources = tmp_path / "_sources"
    (sources / "faq").mkdir(parents=True)
    (sources / "library").mkdir()
    (sources / "faq" / "general.rst.txt").write_text(FAQ, encoding="utf-8")
    (sources / "library" / "shelf.rst.txt").write_text(LIBRARY, encoding="utf-8")
    return sources


def test_a_question_is_answered_by_its_section_and_missed_by_its_neighbours(
    tmp_path: Path,
) -> None:
    pairs = _script()
    rows = pairs.pairs(pairs.read(_sources(tmp_path)), seed=0, siblings=2)
    loop = [r for r in rows if r["question"] == "How do I stop a runaway loop?"]
    labels = {(r["label"], r["negative"]) for r in loop}
    assert labels == {(1, None), (0, "sibling"), (0, "lookalike")}
    answer = next(r for r in loop if r["label"] == 1)["passage"]
    assert answer.startswith("Press Control-C") and ":exc:" not in answer
    assert all("Control-C" not in r["passage"] for r in loop if r["label"] == 0)
    # The lookalike shares the question's words from another page: the fetch entry.
    lookalike = next(r for r in loop if r["negative"] == "lookalike")
    assert lookalike["passage"].startswith("Return the object kept")
    fetch = [r for r in rows if r["question"] == "What does shelf.fetch do?"]
    assert {r["label"] for r in fetch} == {0, 1}
    assert next(r for r in fetch if r["label"] == 0)["passage"].startswith("Store obj")
    assert all("versionadded" not in r["passage"] for r in rows)


def test_the_same_sources_give_the_same_bytes_and_their_digest(tmp_path: Path) -> None:
    sources = _sources(tmp_path)
    outs = []
    for n in range(2):
        out = tmp_path / f"pairs-{n}.jsonl"
        run = subprocess.run(
            [sys.executable, str(SCRIPT), str(out), "--sources", str(sources)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "sha256 " in run.stdout
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and all(json.loads(line) for line in outs[0].splitlines())
    missing = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "x.jsonl"), "--sources", str(tmp_path / "no")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode != 0 and "apt-get install python3.11-doc" in missing.stderr
