"""A note's own sentences about itself (SPEC §2.5, vocabulary `prose`): "This RFC has been
superseded by [RFC 1974][]", "⚠️ Deprecated", "*Note:* this RFC is obsolete".

Owns: which sentences of a note's opening (lines the caller gives, those a vocabulary already
read left out) are about the note itself, not another subject (`about_itself`), a cheap check
before any sentence is parsed (`may_state_itself`), and what such a sentence says, with the
refusals `fix` knows: reported speech, hedges, negation; partial scope is recorded as partial.
"This note replaces X" is not read here: `fix` and `check` turn it into frontmatter with the
author's consent. Does not own: finding closure phrases (`recall.closures`), reading a
status (`recall.status`), or turning statements into edges (`recall.vocabularies`). Pure and
total: no I/O, never raises.
"""

from __future__ import annotations

import re
from dataclasses import replace

from recall import _core, status
from recall.closures import find_closures
from recall.status import Statement

__all__ = ["about_itself", "may_state_itself", "opening_sentences"]

# Words that may stand before "superseded by" in a note's own statement about itself:
# "*Note:* this RFC has been superseded by", "**DEPRECATED** — This RFC has mostly been".
_SELF_WORDS = frozenset(
    [
        "this",
        "the",
        "present",
        "current",
        "rfc",
        "adr",
        "pep",
        "kep",
        "note",
        "notes",
        "document",
        "doc",
        "record",
        "decision",
        "proposal",
        "page",
        "spec",
        "specification",
        "memo",
        "design",
        "policy",
        "runbook",
        "guide",
        "it",
        "has",
        "have",
        "had",
        "been",
        "is",
        "was",
        "are",
        "were",
        "now",
        "hereby",
        "already",
        "also",
        "therefore",
        "thus",
        "effectively",
        "officially",
        "formally",
        "entirely",
        "fully",
        "completely",
        "mostly",
        "partly",
        "partially",
        "largely",
        "in",
        "part",
        "update",
        "warning",
        "caution",
        "important",
        "info",
        "nb",
        "as",
        "of",
        "since",
        "today",
        "status",
    ]
) | frozenset(status.TERMINAL)


def about_itself(sentence: str, phrase: str, definitions: dict[str, str] | None = None) -> bool:
    """Whether the words before a closure phrase make the note itself its subject ("This RFC has
    been", "*Note:*", nothing at all), not another note or thing."""
    at = max(sentence.lower().find(phrase), 0)
    if status.references(sentence[:at], definitions):
        return False
    return all(word in _SELF_WORDS for word in status.normalise(sentence[:at]).split())


# Cuts text into pieces no longer than a sentence (finer cuts only shorten what stands before a
# word, so they never hide a statement about the note itself).
_CUTS = "\n.!?;:"
_PIECE_END = re.compile(r"[\n.!?;:]")


def may_state_itself(opening: str) -> bool:
    """Whether some piece of the opening has a declaration word with only words about the note
    itself before it (`about_itself`'s test, cheaply, before the sentences are parsed). Only
    the pieces holding a declaration word are read, found in one scan."""
    end = -1
    for at in _core.trigger_offsets(opening, status=False):
        if at < end:
            continue  # this word's piece was read
        cut = _PIECE_END.search(opening, at)
        end = cut.start() if cut is not None else len(opening)
        start = max(opening.rfind(c, 0, at) for c in _CUTS) + 1
        for word in status.normalise(opening[start:end]).split():
            if _core.may_declare(word, status=False):
                return True
            if word not in _SELF_WORDS:
                break
    return False


def opening_sentences(
    text: str,
    name: str,
    definitions: dict[str, str],
    consumed: frozenset[int],
    opening_start: int,
    opening_end: int,
) -> list[tuple[Statement, status.Reading]]:
    """SPEC §2.5: sentences in a note's opening that say this note is superseded, replaced or
    obsoleted by a named note (vocabulary `prose`), with the refusals `fix` knows: reported
    speech, hedges, negation, another subject; partial scope is recorded as partial."""
    said: list[tuple[Statement, status.Reading]] = []
    lines = text.split("\n", opening_end)
    opening = "\n".join(
        line
        for number, line in enumerate(lines[opening_start - 1 : opening_end], opening_start)
        if number not in consumed
    )
    title = _title_line(lines, opening_start, opening_end, consumed)
    if not _core.may_declare(opening, status=False) or not (
        may_state_itself(opening) or title is not None
    ):
        return said
    closures = find_closures(
        text, name, consumed, lines=(opening_start, opening_end), definitions=definitions
    )
    for closure in closures:
        if closure.refusal in ("reported_speech", "hedge", "negated"):
            continue
        if not about_itself(closure.sentence, closure.phrase, definitions) and not (
            closure.line == title and _remark(closure.sentence, closure.phrase, definitions)
        ):
            continue  # another subject: "the retry section was replaced by …", "[RFC 12] is …"
        # SPEC §2.5: the note says it is superseded (or retired); "this note replaces X" is left
        # to `fix` and `check`, which turn it into frontmatter with the author's consent.
        reading = replace(
            status.read(closure.sentence, definitions, sentence=True), predecessors=()
        )
        if closure.direction is None and not set(status.normalise(closure.sentence).split()) <= (
            _SELF_WORDS
        ):
            continue  # a state word in passing ("Deprecated flags are dropped"), not a status
        if closure.refusal == "partial_scope" and not reading.partial:
            reading = replace(reading, partial=True, state=None)
        if reading.partial and closure.direction == "replaces":
            refs = status.references(closure.sentence, definitions)
            reading = replace(reading, predecessors=tuple(refs), successors=())
        if reading.says_anything:
            said.append((Statement("prose", closure.line, closure.sentence), reading))
    return said


# A remark set off in a title: `# Token volumes [Replaced by …]`, `(superseded by …)`, `— …`.
_REMARK_OPENERS = "[(—"


def _title_line(
    lines: list[str], opening_start: int, opening_end: int, consumed: frozenset[int]
) -> int | None:
    """The line of the note's title (its first line of text, a heading) when it sets off a
    remark that may declare something (`# Token volumes [Replaced by …]`); else None."""
    for number in range(opening_start, min(opening_end, len(lines)) + 1):
        line = lines[number - 1].strip()
        if not line:
            continue
        remark = line.startswith("#") and any(c in line for c in _REMARK_OPENERS)
        if remark and number not in consumed and _core.may_declare(line, status=False):
            return number
        return None
    return None


def _remark(sentence: str, phrase: str, definitions: dict[str, str]) -> bool:
    """Whether the closure phrase opens a remark set off in the title ("[Replaced by [X](…)]"):
    the title names its note, so what the remark says is about the note itself."""
    at = sentence.lower().find(phrase)
    opener = max(sentence.rfind(c, 0, at) for c in _REMARK_OPENERS) if at > 0 else -1
    return opener >= 0 and about_itself(sentence[opener + 1 :], phrase, definitions)
