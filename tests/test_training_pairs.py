"""The judge's training pairs (`training/judge/pairs.py`): each question's own section is the
answer and the sections beside it, on the same topic by construction, are its near misses."""

from __future__ import annotations

import importlib.util
import json
import os
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


PERLFAQ = """=head1 NAME

perlfaq4 - Data Manipulation

=head1 DESCRIPTION

This section of the FAQ answers questions related to manipulating numbers, dates and strings.

=head2 How do I round a number to two places?

Use C<sprintf> with a precision, as in C<sprintf("%.2f", $n)>: the built-in rounds half to even
on most platforms, and the result is a string that still works as a number in arithmetic.

=head2 How do I find the day of the week for a date?

The core L<Time::Piece> module parses the date and its C<< day_of_week >> method returns a
number from 0 for Sunday to 6 for Saturday, with no module to install from CPAN beforehand.

=head2 How do I reverse a string?

Call C<reverse> in scalar context: C<scalar reverse $string> returns the characters in reverse
order, while in list context E<lt>reverseE<gt> reverses the order of the list it is given.

=cut
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


def _pod(tmp_path: Path) -> Path:
    pod = tmp_path / "pod"
    pod.mkdir()
    (pod / "perlfaq4.pod").write_text(PERLFAQ, encoding="utf-8")
    (pod / "perltoc.pod").write_text("=head2 perlfaq4 - Data Manipulation\n\n" + "x " * 80)
    return pod


def test_a_question_is_answered_by_its_section_and_missed_by_its_neighbours(
    tmp_path: Path,
) -> None:
    pairs = _script()
    rows = pairs.pairs(pairs.unique(pairs.read_rst(_sources(tmp_path), "python")), 0, 2)
    loop = [r for r in rows if r["question"] == "How do I stop a runaway loop?"]
    labels = {(r["label"], r["negative"]) for r in loop}
    assert labels == {(1, None), (0, "sibling"), (0, "lookalike")}
    answer = next(r for r in loop if r["label"] == 1)["passage"]
    # Shown as a hit shows a chunk: under its parent's heading, which its siblings share.
    assert answer.startswith("# General Python FAQ\n\nPress Control-C") and ":exc:" not in answer
    assert all(
        r["passage"].startswith("# General Python FAQ") for r in loop if r["negative"] == "sibling"
    )
    assert all("Control-C" not in r["passage"] for r in loop if r["label"] == 0)
    # The lookalike shares the question's words from another page: the fetch entry.
    lookalike = next(r for r in loop if r["negative"] == "lookalike")
    assert lookalike["passage"].startswith("# Functions\n\nReturn the object kept")
    fetch = [r for r in rows if r["question"] == "What does shelf.fetch do?"]
    assert {r["label"] for r in fetch} == {0, 1}
    assert next(r for r in fetch if r["label"] == 0)["passage"].startswith(
        "# Functions\n\nStore obj"
    )
    assert all("versionadded" not in r["passage"] for r in rows)


def test_the_perl_faq_asks_its_questions_and_answers_them_in_plain_words(tmp_path: Path) -> None:
    pairs = _script()
    passages = pairs.read_pod(_pod(tmp_path))
    # The table of contents asks nothing; the FAQ's questions are its =head2s, answered below.
    assert {p.page for p in passages} == {"perl/perlfaq4"}
    assert [p.question for p in passages] == [
        "How do I round a number to two places?",
        "How do I find the day of the week for a date?",
        "How do I reverse a string?",
    ]
    assert {p.kind for p in passages} == {"faq"} and {p.parent for p in passages} == {"DESCRIPTION"}
    day = passages[1].text
    assert day.startswith("The core Time::Piece module parses the date and its day_of_week method")
    assert "<reverse>" in passages[2].text and "C<" not in passages[2].text


def test_a_swapped_question_keeps_its_answer_and_loses_it(tmp_path: Path) -> None:
    """One word apart: the answer's rarest shared word replaced by a sibling's word the answer
    never uses; the same passage no longer answers the question."""
    pairs = _script()
    make = pairs.Passage
    siblings = [
        make(
            "p/logs",
            "Retention",
            "How long are audit logs kept?",
            "Audit logs are kept for "
            "seven years in the archive bucket, then deleted by the lifecycle rule.",
            "faq",
        ),
        make(
            "p/logs",
            "Retention",
            "How long are invoices kept?",
            "Invoices are kept for ten years, as the tax office requires, in the finance archive.",
            "faq",
        ),
    ]
    filler = [
        make(
            f"p/other{n}",
            f"Other {n}",
            f"What is thing {n}?",
            f"Thing {n} is a filler passage number {n} about nothing in particular at all.",
            "heading",
        )
        for n in range(30)
    ]
    rows = pairs.pairs(siblings + filler, seed=0, siblings=1)
    swap = {
        (r["question"], r["passage"].split("\n\n")[1][:8], r["label"])
        for r in rows
        if r["negative"] == "swap"
    }
    # The rarest word a question shares with its answer is replaced ("audit", tied with "logs"
    # and first by spelling; "invoices"), by the rarest word of the sibling's question that
    # the answer never uses ("invoices"; "logs", tied with "audit" and last by spelling).
    assert swap == {
        ("How long are invoices logs kept?", "Audit lo", 0),
        ("How long are logs kept?", "Invoices", 0),
    }
    answers = {r["question"] for r in rows if r["label"] == 1 and r["group"] == "p/logs"}
    assert answers == {"How long are audit logs kept?", "How long are invoices kept?"}


def test_the_same_sources_give_the_same_bytes_and_their_digest(tmp_path: Path) -> None:
    sources, pod = _sources(tmp_path), str(_pod(tmp_path))
    outs = []
    for n in range(2):
        out = tmp_path / f"pairs-{n}.jsonl"
        run = subprocess.run(
            [sys.executable, str(SCRIPT), str(out), "--rst", f"python={sources}", "--pod", pod],
            capture_output=True,
            text=True,
            check=True,
            # Sets and dicts of strings iterate in another order under another hash seed.
            env={**os.environ, "PYTHONHASHSEED": str(n)},
        )
        assert "sha256 " in run.stdout
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and all(json.loads(line) for line in outs[0].splitlines())
    missing = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "x.jsonl"), "--rst", f"python={tmp_path}/no"],
        capture_output=True,
        text=True,
    )
    assert missing.returncode != 0 and "apt-get install python3.11-doc" in missing.stderr
