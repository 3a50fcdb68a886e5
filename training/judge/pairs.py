"""Training pairs for the judge (SPEC §6), made from the Python documentation's reST sources.

A judge must tell the passage that answers a question from a near miss: a passage on the same
topic that answers a nearby question. The Python documentation has that structure throughout,
so the labels need no annotator:

- FAQ pages: each question is a heading and its answer the section under it (`faq`); the
  answers beside it on the same page are near misses by construction (`sibling`).
- Sections of the library reference, the HOWTOs, the tutorial and the language reference: the
  heading is the question (`heading`), the section its answer, the other sections under the
  same parent heading its near misses.
- Entries (`.. function::`, `.. method::`, `.. class::` and the like): "What does NAME do?"
  (`entry`), answered by the entry's description; the other entries of the same section are
  near misses.

Besides the siblings, each question gets one passage from another page that shares the most of
its words without being its answer (`lookalike`): the question's terms, not its answer.

Source: `python3.11-doc` (Debian), `/usr/share/doc/python3.11/html/_sources`; the Python
documentation is under the PSF License Agreement (Python 3.11). The script never reads recall's
evaluation sets. Output: JSON lines `{"question", "passage", "label", "kind", "negative",
"group"}` (`group` is the page: split train and held-out by it), with the output's SHA-256
printed. Seeded: the same sources give the same bytes.

Usage: python training/judge/pairs.py OUT.jsonl [--sources DIR] [--seed 0] [--siblings 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
FOLDERS = ("faq", "library", "howto", "tutorial", "reference")
#: A passage is cut after this many characters (the judge reads about 256 tokens of it).
PASSAGE_CHARS = 1200
#: A section shorter than this is no answer (a heading over a list of entries).
MIN_CHARS = 120

_UNDERLINE = re.compile(r"([=\-~^\"'`#*+:.])\1{3,}\s*")
_ENTRY = re.compile(
    r"\.\. (function|method|class|attribute|data|exception|decorator|classmethod|staticmethod)"
    r":: ([A-Za-z_][\w.]*)"
)
_ROLE = re.compile(r":[a-z:]+:`~?!?([^`<]*?)(?:\s*<[^>]*>)?`")
_INLINE = re.compile(r"``([^`]+)``|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|`([^`]+)`_?")
_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")
_STOP_WORDS = """
    the and for that with this are not can from you use how does what why which when into will
    its has have was were should would there their them these those then than also any all but
    only one more most other some such may must
"""
_STOP = frozenset(_STOP_WORDS.split())


@dataclass
class Passage:
    page: str
    parent: str
    question: str
    text: str
    kind: str

    @property
    def words(self) -> frozenset[str]:
        return frozenset(w for w in _WORD.findall(self.text.lower()) if w not in _STOP)


def clean(lines: list[str]) -> str:
    """reST to plain prose: directives and their options dropped, roles and marks unwrapped."""
    out: list[str] = []
    skipping = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(".. "):
            # A directive's own block (index, note options, audit events) is dropped; the prose
            # of notes and warnings that follows its options is kept.
            skipping = not stripped.startswith(
                (
                    ".. note::",
                    ".. warning::",
                    ".. versionchanged::",
                    ".. versionadded::",
                    ".. deprecated::",
                )
            )
            continue
        if stripped.startswith(":") and re.match(r":[\w-]+:( |$)", stripped):
            continue
        if skipping and stripped:
            if line.startswith("   "):
                continue
            skipping = False
        if not stripped:
            skipping = False
        out.append(stripped)
    text = " ".join(" ".join(out).split())
    text = _ROLE.sub(r"\1", text)
    text = _INLINE.sub(lambda m: next(g for g in m.groups() if g is not None), text)
    return text


def sections(page: str, lines: list[str], kind: str) -> list[Passage]:
    """The page's headed sections (heading = question) and its entries."""
    found: list[Passage] = []
    heads = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and not lines[i].startswith(" ")
        and _UNDERLINE.fullmatch(lines[i + 1])
        and len(lines[i + 1].strip()) >= len(lines[i].strip())
        and not _UNDERLINE.fullmatch(lines[i])
    ]
    levels: dict[str, int] = {}
    stack: list[tuple[int, str]] = []
    for n, i in enumerate(heads):
        title = clean([lines[i]])
        level = levels.setdefault(lines[i + 1].strip()[0], len(levels))
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent = stack[-1][1] if stack else page
        stack.append((level, title))
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        body = lines[i + 2 : end]
        if n + 1 < len(heads) and end >= 1 and _UNDERLINE.fullmatch(lines[end - 1] or " "):
            body = body[:-1]  # an overline belongs to the next heading
        text = clean(body)
        if len(text) >= MIN_CHARS:
            found.append(Passage(page, parent, title, text[:PASSAGE_CHARS], kind))
        found.extend(entries(page, title, body))
    return found


def entries(page: str, section: str, body: list[str]) -> list[Passage]:
    out: list[Passage] = []
    module = page.rsplit("/", 1)[-1]
    for i, line in enumerate(body):
        match = _ENTRY.match(line.strip())
        if match is None or line.startswith("    "):
            continue
        indent = len(line) - len(line.lstrip())
        block: list[str] = []
        for nxt in body[i + 1 :]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            block.append(nxt)
        text = clean(block)
        if len(text) < MIN_CHARS:
            continue
        name = match.group(2)
        qualified = (
            name if "." in name or module in ("functions", "stdtypes") else f"{module}.{name}"
        )
        out.append(
            Passage(page, section, f"What does {qualified} do?", text[:PASSAGE_CHARS], "entry")
        )
    return out


def read(sources: Path) -> list[Passage]:
    passages: list[Passage] = []
    for folder in FOLDERS:
        for path in sorted((sources / folder).glob("*.rst.txt")):
            page = f"{folder}/{path.name.removesuffix('.rst.txt')}"
            lines = path.read_text(encoding="utf-8").splitlines()
            passages.extend(sections(page, lines, "faq" if folder == "faq" else "heading"))
    # A question asked twice (two "Examples" sections) cannot have one answer.
    counts: dict[str, int] = {}
    for p in passages:
        counts[p.question.casefold()] = counts.get(p.question.casefold(), 0) + 1
    return [p for p in passages if counts[p.question.casefold()] == 1]


def pairs(passages: list[Passage], seed: int, siblings: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    by_parent: dict[tuple[str, str, str], list[int]] = {}
    for i, p in enumerate(passages):
        by_parent.setdefault((p.page, p.parent, p.kind), []).append(i)
    postings: dict[str, list[int]] = {}
    words = [p.words for p in passages]
    for i, ws in enumerate(words):
        for w in ws:
            postings.setdefault(w, []).append(i)
    rows: list[dict[str, object]] = []
    for i, p in enumerate(passages):
        near = [j for j in by_parent[(p.page, p.parent, p.kind)] if j != i]
        if not near:
            continue
        row = {"question": p.question, "kind": p.kind, "group": p.page}
        rows.append({**row, "passage": p.text, "label": 1, "negative": None})
        for j in rng.sample(near, min(siblings, len(near))):
            rows.append({**row, "passage": passages[j].text, "label": 0, "negative": "sibling"})
        asked = frozenset(w for w in _WORD.findall(p.question.lower()) if w not in _STOP)
        scores: dict[int, int] = {}
        for w in asked:
            for j in postings.get(w, ()):
                if passages[j].page != p.page:
                    scores[j] = scores.get(j, 0) + 1
        if scores:
            best = max(scores.values())
            ties = sorted(j for j, s in scores.items() if s == best)
            j = ties[rng.randrange(len(ties))]
            rows.append({**row, "passage": passages[j].text, "label": 0, "negative": "lookalike"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sources", type=Path, default=SOURCES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--siblings", type=int, default=2)
    args = parser.parse_args()
    if not args.sources.is_dir():
        raise SystemExit(
            f"{args.sources} is not a folder: install the Python documentation "
            "(apt-get install python3.11-doc) or pass --sources"
        )
    rows = pairs(read(args.sources), args.seed, args.siblings)
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    args.out.write_text(data, encoding="utf-8")
    kinds: dict[str, int] = {}
    for r in rows:
        key = f"{r['kind']}/{r['negative'] or 'answer'}"
        kinds[key] = kinds.get(key, 0) + 1
    print(
        f"{len(rows)} pairs, {len({r['group'] for r in rows})} pages: "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    )
    print(f"sha256 {hashlib.sha256(data.encode('utf-8')).hexdigest()}")


if __name__ == "__main__":
    sys.exit(main())
