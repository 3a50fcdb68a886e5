"""Training pairs for the judge (SPEC §6), made from public documentation's structure.

A judge must tell the passage that answers a question from a near miss: a passage on the same
topic that answers a nearby question. Documentation has that structure throughout, so the
labels need no annotator:

- FAQ questions (a heading that ends in "?", the Perl FAQ's `=head2`s): the section under it
  answers it (`faq`); the answers beside it under the same heading are near misses by
  construction (`sibling`).
- Other sections: the heading is the question (`heading`), the section its answer, the other
  sections under the same parent heading its near misses.
- Entries (`.. function::`, `.. method::`, `.. class::` and the like): "What does NAME do?"
  (`entry`), answered by the entry's description; the other entries of the same section are
  near misses. Only a share of them is kept (`--entries`): they are many and all alike.

Besides the siblings, each question gets one passage from another page that shares the most of
its words without being its answer (`lookalike`: the question's terms, not its answer), and
one question one word apart (`swap`): its rarest word held by its answer replaced by the rarest
word of a sibling's question that the answer never uses, paired with the same answer, which no
longer answers it (the question asked of the neighbour's subject). A passage is shown under its
parent's heading, as a search hit shows a note's chunk under the note's title.

Sources (training/judge/README.md says how to fetch each and its licence): reST trees given as
`--rst NAME=DIR` (default: the Python 3.11 documentation, Debian's `python3.11-doc`) and the
Perl manual's POD (`--pod`, Debian's `perl-doc`). The script never reads recall's evaluation
sets. Output: JSON lines `{"question", "passage", "label", "kind", "negative", "group"}`
(`group` is the page: split train and held-out by it), with the output's SHA-256 printed.
Seeded: the same sources give the same bytes.

Usage: python training/judge/pairs.py OUT.jsonl [--rst NAME=DIR ...] [--pod DIR] [--seed 0]
       [--siblings 2] [--entries 0.3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
PERL = Path("/usr/share/perl/5.36/pod")
#: Change logs, C APIs, internals, build helpers: no questions a reader asks of them.
_RST_SKIPPED = frozenset(
    [
        "whatsnew",
        "c-api",
        "releases",
        "changelog",
        "changelogs",
        "internals",
        "dialects",
        "_ext",
        "_theme",
        "_templates",
        "man",
        "misc",
        "announce",
    ]
)
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
_POD_HEAD = re.compile(r"=head[1-3] ")
_POD_DOUBLE = re.compile(r"[A-Z]<<+\s+(.*?)\s+>>+")
_POD_INDEX = re.compile(r"X<[^<>]*>")
_POD_LINK = re.compile(r"L<([^<>]*)>")
_POD_CODE = re.compile(r"[A-Z]<([^<>]*)>")
_POD_ESCAPES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}
#: Tables of contents, change logs, licences and the C API: no questions a reader asks.
_POD_SKIPPED = re.compile(r"perl(toc|5\d+delta|delta|api|intern|artistic|gpl|hist|faq)")
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
    def passage(self) -> str:
        """The text as a search hit shows it: under its parent's heading, as a note's chunk sits
        under the note's title (the answer and its siblings share it)."""
        return self.text if self.parent == self.page else f"# {self.parent}\n\n{self.text}"

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


def sections(page: str, lines: list[str]) -> list[Passage]:
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
            kind = "faq" if title.endswith("?") else "heading"
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


def read_rst(root: Path, name: str) -> list[Passage]:
    """A reST documentation tree's sections and entries; a heading that asks (ends in "?") is
    a question as people ask it (`faq`), any other heading a section's title (`heading`)."""
    passages: list[Passage] = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if not path.is_file() or _RST_SKIPPED & set(parts[:-1]) or "spelling" in path.name:
            continue
        stem = path.name.removesuffix(".txt").removesuffix(".rst")
        if stem == path.name or stem in ("index", "contents", "glossary", "copyright"):
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        page = "/".join((name, *parts[:-1], stem))
        passages.extend(sections(page, lines))
    return passages


def pod_text(lines: list[str]) -> str:
    """POD to plain prose: commands dropped (an `=item`'s text kept), formatting codes unwrapped."""
    out: list[str] = []
    for line in lines:
        if line.startswith("="):
            if line.startswith("=item"):
                out.append(line[5:].strip().lstrip("*").strip())
            continue
        out.append(line.strip())
    text = " ".join(" ".join(out).split())
    text = _POD_DOUBLE.sub(r"\1", text)
    text = _POD_INDEX.sub("", text)
    for _ in range(4):
        text = _POD_LINK.sub(lambda m: m.group(1).split("|")[0].strip('"'), text)
        text = _POD_CODE.sub(lambda m: _POD_ESCAPES.get(m.group(1), m.group(1)), text)
    return text


def read_pod(folder: Path) -> list[Passage]:
    """The Perl FAQ's questions (`=head2`, the answer beneath) and the other manual pages'
    `=head2`/`=head3` sections, each with the siblings under its parent heading."""
    passages: list[Passage] = []
    for path in sorted(folder.glob("perl*.pod")):
        name = path.stem
        if _POD_SKIPPED.fullmatch(name):
            continue
        faq = re.fullmatch(r"perlfaq\d", name) is not None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        heads = [(i, int(line[5])) for i, line in enumerate(lines) if _POD_HEAD.match(line)]
        parents: dict[int, str] = {}
        for n, (i, level) in enumerate(heads):
            title = pod_text([lines[i][7:]])
            parents = {k: v for k, v in parents.items() if k < level}
            parent = parents.get(level - 1, f"perl/{name}")
            parents[level] = title
            if level == 1:
                continue
            end = next((j for j, lvl in heads[n + 1 :] if lvl <= level), len(lines))
            text = pod_text(lines[i + 1 : end])
            if len(text) >= MIN_CHARS:
                kind = "faq" if faq else "heading"
                passages.append(Passage(f"perl/{name}", parent, title, text[:PASSAGE_CHARS], kind))
    return passages


def unique(passages: list[Passage]) -> list[Passage]:
    # A question asked twice (two "Examples" sections) cannot have one answer.
    counts: dict[str, int] = {}
    for p in passages:
        counts[p.question.casefold()] = counts.get(p.question.casefold(), 0) + 1
    return [p for p in passages if counts[p.question.casefold()] == 1]


def content(question: str) -> list[str]:
    return [w for w in _WORD.findall(question.lower()) if w not in _STOP]


def swapped(question: str, word: str, other: str) -> str:
    return re.sub(rf"\b{re.escape(word)}\b", other, question, count=1, flags=re.IGNORECASE)


def pairs(passages: list[Passage], seed: int, siblings: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    by_parent: dict[tuple[str, str, str], list[int]] = {}
    for i, p in enumerate(passages):
        by_parent.setdefault((p.page, p.parent, p.kind == "entry"), []).append(i)
    postings: dict[str, list[int]] = {}
    words = [p.words for p in passages]
    for i, ws in enumerate(words):
        for w in ws:
            postings.setdefault(w, []).append(i)
    rarity = {w: math.log(len(passages) / len(ids)) for w, ids in postings.items()}
    rows: list[dict[str, object]] = []
    for i, p in enumerate(passages):
        near = [j for j in by_parent[(p.page, p.parent, p.kind == "entry")] if j != i]
        if not near:
            continue
        row = {"question": p.question, "kind": p.kind, "group": p.page}
        rows.append({**row, "passage": p.passage, "label": 1, "negative": None})
        for j in rng.sample(near, min(siblings, len(near))):
            rows.append({**row, "passage": passages[j].passage, "label": 0, "negative": "sibling"})
        asked = frozenset(content(p.question))
        scores: dict[int, int] = {}
        for w in asked:
            for j in postings.get(w, ()):
                if passages[j].page != p.page:
                    scores[j] = scores.get(j, 0) + 1
        if scores:
            best = max(scores.values())
            ties = sorted(j for j, s in scores.items() if s == best)
            j = ties[rng.randrange(len(ties))]
            rows.append(
                {**row, "passage": passages[j].passage, "label": 0, "negative": "lookalike"}
            )
        # The question asked of a sibling's subject instead: the rarest word the question shares
        # with its answer, replaced by the rarest word of a sibling's question that the answer
        # never uses. The same passage, one word apart, no longer the answer.
        held = sorted((w for w in asked if w in p.words), key=lambda w: (-rarity.get(w, 0.0), w))
        for j in rng.sample(near, len(near)):
            theirs = [w for w in content(passages[j].question) if w not in p.words]
            theirs = [w for w in theirs if w not in asked and rarity.get(w, 0.0) > 2.0]
            if held and theirs:
                other = max(theirs, key=lambda w: (rarity.get(w, 0.0), w))
                said = swapped(p.question, held[0], other)
                rows.append(
                    {**row, "question": said, "passage": p.passage, "label": 0, "negative": "swap"}
                )
                break
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--rst",
        action="append",
        metavar="NAME=DIR",
        help=f"a reST documentation tree (repeat; default: python={SOURCES})",
    )
    parser.add_argument("--pod", type=Path, default=PERL, help="the Perl manual's POD folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--siblings", type=int, default=2)
    parser.add_argument(
        "--entries", type=float, default=0.3, help="share of the 'What does NAME do?' kept"
    )
    args = parser.parse_args()
    trees = [tuple(spec.split("=", 1)) for spec in args.rst or [f"python={SOURCES}"]]
    read: list[Passage] = []
    for name, folder in trees:
        if not Path(folder).is_dir():
            raise SystemExit(f"{folder} is not a folder (python: apt-get install python3.11-doc)")
        read.extend(read_rst(Path(folder), name))
    if not args.pod.is_dir():
        raise SystemExit(f"{args.pod} is not a folder: apt-get install perl-doc, or pass --pod")
    rng = random.Random(args.seed)
    read = [p for p in read if p.kind != "entry" or rng.random() < args.entries]
    passages = unique(read + read_pod(args.pod))
    rows = pairs(passages, args.seed, args.siblings)
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
