"""The legs that find a note's candidate predecessors for `recall check` (SPEC §8.4), each
with the reason it found them: closure phrases in the note's prose that name a note, versioned
file names, equal or near titles, lexical closeness under the store's own BM25 term weights,
and, given a store, semantic closeness.

Owns: each leg, its floor and weight, and the `Reason` it reports. Does not own: the edges a
note already declares, ranking candidates or the gate (`recall.authoring.check`), reading the
corpus or resolving references (`recall.authoring.corpus`), finding closure phrases
(`recall.closures`), or the store's search (`recall.api`).
"""

from __future__ import annotations

import math
import os
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import unquote

from recall import _core
from recall.authoring.corpus import Corpus, Note
from recall.errors import RecallError
from recall.names import FUNCTION_WORDS, fold_title, title_tokens
from recall.names import version as file_version
from recall.vocabularies import Declarations
from recall.walk import shown

__all__ = [
    "LEXICAL_FLOOR",
    "LEXICAL_TOP",
    "SEMANTIC_CHARS",
    "SEMANTIC_DEFAULT_FLOOR",
    "SENTENCE_FLOOR",
    "TITLE_FLOOR",
    "WEIGHTS",
    "Kind",
    "Lexical",
    "Names",
    "Reason",
    "Relation",
    "Semantic",
    "Subject",
    "note_body",
    "closures",
    "same_title",
    "shown_note",
    "note_title",
    "versioned",
]

#: Lexical leg: a corpus note is reported when the cosine between its body's and the checked
#: note's body's BM25 term weights is at least this (0 unrelated … 1 the same words in the same
#: proportions). Measured on the shipped evaluation notes: half of all pairs sit below 0.04 and
#: 99 % below 0.5; a decision and the one that replaced it, rewritten in new words, 0.08-0.25;
#: a copy-edited rewrite of the same note well above 0.5.
LEXICAL_FLOOR = 0.3
#: Lexical leg: at most this many notes are reported per checked file.
LEXICAL_TOP = 5
#: Sentence leg: a note of several sentences is reported when one of its sentences is this
#: close to the checked note (the cosine above, over that sentence's terms): a statement
#: buried in a note about other things, which the whole note's cosine dilutes. Chosen on
#: `benches/check_candidates.py`: 0.25 finds 0.79 of its buried updates in the top 3 (0.58
#: without the leg) for 0.01 more candidates on a note that replaces nothing.
SENTENCE_FLOOR = 0.25
#: Sentence leg: the notes sharing the most weight with the checked note that are read
#: sentence by sentence, and the most it reports.
SENTENCE_READ = 20
SENTENCE_TOP = 2
#: Same-title leg: token Jaccard at or above this counts as the same title.
TITLE_FLOOR = 0.8
#: Semantic leg: characters of the body sent with the title as the query.
SEMANTIC_CHARS = 1000
#: Semantic leg: the floor when the store has no calibration (SPEC §5.6's uncalibrated default).
SEMANTIC_DEFAULT_FLOOR = 0.5

Kind = Literal["closure-phrase", "versioned-name", "same-title", "lexical", "sentence", "semantic"]
Relation = Literal["predecessor", "successor"]

# Ranking: a candidate's rank is the sum over its reasons of weight × (score, or 1). A closure
# phrase or a version number is the author's own word; closeness is evidence only.
WEIGHTS: dict[str, float] = {
    "closure-phrase": 3.0,
    "versioned-name": 2.5,
    "same-title": 2.0,
    "lexical": 1.0,
    "sentence": 1.0,
    "semantic": 1.0,
}
_REFUSED_WEIGHT = 1.0
_REFUSALS = {
    "reported_speech": "reported speech",
    "hedge": "hedged",
    "partial_scope": "partial scope",
    "negated": "negated",
}


@dataclass(frozen=True)
class Reason:
    """Why a note is a candidate: the leg that found it, in words, and its score where the leg
    has one (a cosine for `lexical` and `semantic`, a Jaccard for `same-title`). `relation` is
    the direction the reason points, when it points one (a closure phrase that holds, a version
    number); `weight` is its share of the candidate's rank."""

    kind: Kind
    detail: str
    score: float | None = None
    relation: Relation | None = None
    weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "detail": self.detail}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        return out


class Subject(Protocol):
    """A checked file as the lexical leg needs it: its place in the corpus (None: outside) and
    its note."""

    @property
    def index(self) -> int | None: ...

    @property
    def note(self) -> Note: ...


def shown_note(note: Note) -> str:
    return os.path.normpath(note.shown)


# -- 2. closure phrases -------------------------------------------------------------------------


def _lookup(corpus: Corpus, reference: str) -> list[int]:
    """The notes a reference written in prose names: a link target or file name by its SPEC §2.3
    key, `PEP 8` and `ADR-0005` by the alias their note carries."""
    target = unquote(reference.strip().split("#", 1)[0])
    if not target or "://" in target or target.startswith("mailto:"):
        return []
    return corpus.find(target)


def closures(
    corpus: Corpus, note: Note, text: str, decl: Declarations, messages: list[str]
) -> list[tuple[int, Reason]]:
    from recall.closures import find_closures

    # Lines a header vocabulary declares on are read by it, not as prose; the note's own
    # sentences (`prose`) stay prose here, so the author sees every closure phrase.
    skip = {e.origin.line for e in decl.edges if e.origin.vocabulary != "prose"}
    if decl.retired is not None and decl.retired.origin.vocabulary != "prose":
        skip.add(decl.retired.origin.line)
    if decl.frontmatter is not None and decl.frontmatter.present:
        skip.update(range(1, decl.frontmatter.body_line))
    out: list[tuple[int, Reason]] = []
    for closure in find_closures(text, note.rel, frozenset(skip)):
        relation: Relation | None = None
        if closure.direction == "replaces":
            relation = "predecessor"
        elif closure.direction == "replaced_by":
            relation = "successor"
        label = _REFUSALS.get(closure.refusal or "", closure.refusal)
        for reference in closure.references:
            matches = _lookup(corpus, reference)
            if not matches:
                messages.append(
                    f"line {closure.line}: {closure.phrase!r} names {reference}, "
                    "which is not a note in the corpus"
                )
                continue
            detail = f"line {closure.line}: {_clip(closure.sentence)!r} names {reference}"
            if len(matches) > 1:
                detail += f" (ambiguous: {len(matches)} notes share that name)"
            if label:
                detail += f" [{label}]"
            weight = _REFUSED_WEIGHT if closure.refusal else WEIGHTS["closure-phrase"]
            for index in matches:
                out.append(
                    (
                        index,
                        Reason(
                            "closure-phrase",
                            detail,
                            relation=None if closure.refusal else relation,
                            weight=weight,
                        ),
                    )
                )
    return out


def _clip(sentence: str, width: int = 120) -> str:
    flat = " ".join(sentence.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- 3. versioned names -------------------------------------------------------------------------


def _stem(rel: str) -> str:
    name = rel.replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.splitext(name)[0]


def versioned(corpus: Corpus, names: Names, note: Note) -> list[tuple[int, Reason]]:
    base, version = file_version(_stem(note.rel))
    mine = version or (1,)
    weight = WEIGHTS["versioned-name"]
    out: list[tuple[int, Reason]] = []
    for index in corpus.by_key.get(note.key, ()):
        other = corpus.notes[index]
        if other.path != note.path and other.key == note.key:
            name = os.path.basename(other.rel)
            detail = f"the same file name ({name}): a reference to it would be ambiguous"
            out.append((index, Reason("versioned-name", detail, weight=weight)))
    for index in names.by_base.get(base, ()):
        other = corpus.notes[index]
        other_version = names.versions[index]
        if other.path == note.path or other.key == note.key:
            continue
        if version is None and other_version is None:
            continue
        name = os.path.basename(other.rel)
        theirs = other_version or (1,)
        if theirs < mine:
            detail = f"an earlier version of the same name ({name})"
            relation: Relation = "predecessor"
        elif theirs > mine:
            detail = f"a later version of the same name ({name})"
            relation = "successor"
        else:
            detail = f"the same version, written differently ({name})"
            relation = "predecessor"
        out.append((index, Reason("versioned-name", detail, relation=relation, weight=weight)))
    return out


# -- 4. titles ----------------------------------------------------------------------------------

_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_SETEXT_H1 = re.compile(r" {0,3}=+[ \t]*")
_RST_ADORNMENT = re.compile(r"([=\-~^\"'`#*+:.])\1{2,}[ \t]*")


def note_body(text: str, decl: Declarations) -> str:
    """The prose: without a frontmatter block, and without a PEP preamble (one was read when
    the declarations carry a title but no frontmatter)."""
    fm = decl.frontmatter
    if fm is not None:
        return fm.body if fm.present else text.lstrip("\ufeff")
    text = text.lstrip("\ufeff")
    if decl.title is not None:
        end = re.search(r"\n[ \t\r]*\n", text)
        return text[end.end() :] if end is not None else ""
    return text


def note_title(rel: str, text: str, decl: Declarations | None) -> str | None:
    """Frontmatter `title:` or a PEP `Title:`, else the first level-1 heading of the body."""
    if decl is not None and decl.title:
        return decl.title
    body = note_body(text, decl) if decl is not None else text
    lines = body.split("\n")
    rst = rel.lower().endswith(".rst")
    in_fence = False
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line.strip():
            continue
        nxt = lines[i + 1].rstrip("\r") if i + 1 < len(lines) else ""
        if rst:
            if _RST_ADORNMENT.fullmatch(line):
                continue
            if _RST_ADORNMENT.fullmatch(nxt) and len(nxt.strip()) >= len(line.strip()):
                return line.strip()
            continue
        heading = _ATX_H1.fullmatch(line)
        if heading is not None and heading.group(1).strip():
            return heading.group(1).strip()
        if _SETEXT_H1.fullmatch(nxt) and not line.startswith((" " * 4, "\t")):
            return line.strip()
    return None


def same_title(names: Names, title: str) -> list[tuple[int, Reason]]:
    mine = title_tokens(title)
    folded = fold_title(title)
    out: list[tuple[int, Reason]] = []
    # Jaccard >= TITLE_FLOOR > 0 needs a shared token, so only notes sharing one are compared.
    near = {i for token in mine for i in names.by_token.get(token, ())}
    for index in sorted(near | set(names.by_title.get(folded, ()))):
        theirs_title = names.titles[index]
        assert theirs_title is not None
        if fold_title(theirs_title) == folded:
            detail, score = f"the same title ({theirs_title!r})", 1.0
        else:
            theirs = names.tokens[index]
            score = len(mine & theirs) / len(mine | theirs)
            if score < TITLE_FLOOR:
                continue
            detail = f"a near title ({theirs_title!r})"
        out.append((index, Reason("same-title", detail, score, weight=WEIGHTS["same-title"])))
    return out


class Names:
    """Every note's file-name version and title, read once per run, indexed by version base,
    folded title and title token."""

    def __init__(self, corpus: Corpus) -> None:
        self.versions: list[tuple[int, ...] | None] = []
        self.by_base: dict[str, list[int]] = {}
        self.titles: list[str | None] = []
        self.tokens: list[frozenset[str]] = []
        self.by_title: dict[str, list[int]] = {}
        self.by_token: dict[str, list[int]] = {}
        for index, note in enumerate(corpus.notes):
            base, version = file_version(_stem(note.rel))
            self.versions.append(version)
            self.by_base.setdefault(base, []).append(index)
            title = note_title(note.rel, note.text, note.declarations) if note.text else None
            tokens = title_tokens(title) if title else frozenset()
            self.titles.append(title)
            self.tokens.append(tokens)
            if title:
                self.by_title.setdefault(fold_title(title), []).append(index)
            for token in tokens:
                self.by_token.setdefault(token, []).append(index)


# -- 5. lexical closeness -----------------------------------------------------------------------


#: Where a sentence ends: `.`, `!` or `?` before a blank and a capital, digit or quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(\"'])")


class Lexical:
    """Cosine between the notes' bodies as the store's lexical leg weighs their terms
    (`_core.bm25_vectors`: the index's analyser and English stemming, each term's BM25 weight
    among these notes), so a note is close to another here exactly where a search for its words
    would find the other. Postings are kept only for the checked files' terms, so a query
    touches only the notes that share a term with it. Checked files outside the corpus count as
    documents for the weights only."""

    def __init__(self, corpus: Corpus, subjects: Sequence[Subject]) -> None:
        self.corpus = corpus
        bodies = [
            note_body(n.text, n.declarations) if n.text and n.declarations else ""
            for n in corpus.notes
        ]
        self.notes = len(bodies)
        outside: dict[int, int] = {}
        for i, s in enumerate(subjects):
            if s.index is None and s.note.text is not None and s.note.declarations is not None:
                outside[i] = len(bodies)
                bodies.append(note_body(s.note.text, s.note.declarations))
        vectors = _core.bm25_vectors(bodies)
        self.bodies = bodies
        self.weights: list[dict[str, float]] = [{t: w for t, w, _ in v} for v in vectors]
        self.queries: list[int | None] = [
            s.index if s.index is not None else outside.get(i) for i, s in enumerate(subjects)
        ]
        #: Per checked text, each term's first word as written: what a reason names.
        self.words: dict[int, dict[str, str]] = {
            q: {t: word for t, _, word in vectors[q]} for q in self.queries if q is not None
        }
        wanted = {t for q in self.queries if q is not None for t in self.weights[q]}
        self.postings: dict[str, tuple[array[int], array[float]]] = {
            term: (array("i"), array("d")) for term in wanted
        }
        self.norms = array("d", bytes(8 * self.notes))
        for doc in range(self.notes):
            for term, w in self.weights[doc].items():
                if term in self.postings:
                    ids, weights = self.postings[term]
                    ids.append(doc)
                    weights.append(w)
            self.norms[doc] = math.sqrt(sum(w * w for w in self.weights[doc].values()))

    def nearest(self, query: int, exclude: int | None) -> list[tuple[int, Reason]]:
        text = self.queries[query]
        if text is None:
            return []
        weights = self.weights[text]
        norm = math.sqrt(sum(w * w for w in weights.values()))
        if not norm:
            return []
        scores: dict[int, float] = {}
        for term, qw in weights.items():
            for doc, w in zip(*self.postings[term]):
                scores[doc] = scores.get(doc, 0.0) + qw * w
        ranked = sorted(
            (
                (dot / (norm * self.norms[doc]), doc)
                for doc, dot in scores.items()
                if doc != exclude and self.norms[doc]
            ),
            key=lambda p: (-p[0], p[1]),
        )
        out: list[tuple[int, Reason]] = []
        words = self.words[text]
        for cosine, doc in ranked[:LEXICAL_TOP]:
            if cosine < LEXICAL_FLOOR:
                break
            detail = f"cosine {cosine:.2f}; shared terms: {self._shared(weights, doc, words)}"
            out.append((doc, Reason("lexical", detail, cosine, weight=WEIGHTS["lexical"])))
        reported = {doc for doc, _ in out}
        heaviest = sorted(
            (doc for doc in scores if doc != exclude and doc not in reported),
            key=lambda doc: (-scores[doc], doc),
        )[:SENTENCE_READ]
        out += self._sentences(weights, norm, heaviest)
        return out

    def _sentences(
        self, weights: dict[str, float], norm: float, docs: list[int]
    ) -> list[tuple[int, Reason]]:
        """The notes of several sentences one of which is close to the checked note: the
        cosine over that sentence's terms (each weighed as in its note)."""
        split = {doc: _SENTENCE_END.split(" ".join(self.bodies[doc].split())) for doc in docs}
        split = {doc: parts for doc, parts in split.items() if len(parts) > 1}
        flat = [sentence for parts in split.values() for sentence in parts]
        terms = iter(_core.bm25_vectors(flat)) if flat else iter(())
        found: list[tuple[float, int, str]] = []
        for doc, parts in split.items():
            theirs = self.weights[doc]
            best, said = 0.0, ""
            for sentence in parts:
                used = {t: theirs[t] for t, _, _ in next(terms) if t in theirs}
                length = math.sqrt(sum(w * w for w in used.values()))
                dot = sum(w * used[t] for t, w in weights.items() if t in used)
                if length and dot / (norm * length) > best:
                    best, said = dot / (norm * length), sentence
            if best >= SENTENCE_FLOOR:
                found.append((best, doc, said))
        found.sort(key=lambda f: (-f[0], f[1]))
        return [
            (
                doc,
                Reason(
                    "sentence",
                    f"cosine {cosine:.2f} with one of its sentences: {_clip(said)!r}",
                    cosine,
                    weight=WEIGHTS["sentence"],
                ),
            )
            for cosine, doc, said in found[:SENTENCE_TOP]
        ]

    def _shared(self, weights: dict[str, float], doc: int, words: dict[str, str]) -> str:
        """The terms that weigh most in the cosine, function words left out of the list (a
        small corpus cannot weigh them down)."""
        theirs = self.weights[doc]
        shared = sorted(
            (t for t in weights if t in theirs and words[t].casefold() not in FUNCTION_WORDS),
            key=lambda t: (-weights[t] * theirs[t], t),
        )[:6]
        return ", ".join(words[t].casefold() for t in shared)


# -- 6. semantic closeness ----------------------------------------------------------------------


class Semantic:
    """The store's search in development mode (no calibration needed), read-only. The floor is
    the store's calibrated threshold when it has one, else SEMANTIC_DEFAULT_FLOOR."""

    def __init__(self, db: str, corpus: Corpus, memory: Any = None) -> None:
        """The leg over the store at `db`, opened read-only here, or over `memory`, a store
        the caller holds open (and closes)."""
        self.db = db
        self.memory: Any = None
        self.owned = memory is None
        self.corpus = corpus
        self.by_place = {
            (os.path.basename(n.root.rstrip("/\\")), n.rel): i for i, n in enumerate(corpus.notes)
        }
        if memory is None and not os.path.exists(db):
            # SPEC §11: a read never creates a store.
            self.status = f"skipped: store {shown(db)} does not exist (run 'recall index' first)"
            return
        try:
            if memory is None:
                import recall

                memory = recall.open(db, read_only=True)
            documents = memory.stats().documents if memory.exists else 0
        except (RecallError, OSError) as err:
            self.status = f"skipped: store {shown(db)} could not be read: {err}"
            return
        if not documents:
            if self.owned:
                memory.close()
            self.status = f"skipped: store {shown(db)} holds no documents"
            return
        self.memory = memory
        self.status = f"store {shown(db)} ({documents} documents)"

    def close(self) -> None:
        if self.memory is not None and self.owned:
            self.memory.close()
        self.memory = None

    def nearest(
        self, query: str, note: Note, exclude: int | None, limit: int
    ) -> tuple[list[tuple[int | str, Reason]], str | None]:
        if self.memory is None or not query:
            return [], None
        try:
            result = self.memory.search(query, k=min(100, limit + 5), mode="development")
        except (RecallError, OSError) as err:
            return [], f"semantic search skipped: {err}"
        floor = SEMANTIC_DEFAULT_FLOOR
        if result.calibrated and result.calibration:
            floor = float(result.calibration.get("threshold", floor))
        real = os.path.realpath(note.path)
        out: list[tuple[int | str, Reason]] = []
        seen: set[int | str] = set()
        for hit in result.hits:
            source, file = hit.provenance.source, hit.provenance.file
            target: int | str | None = self.by_place.get((source, file))
            if target is None:
                if real.replace("\\", "/").endswith(f"/{source}/{file}"):
                    continue
                # A document of the store that no --corpus path holds.
                target = f"{source}/{file}"
            if target == exclude or target in seen or hit.score < floor:
                continue
            seen.add(target)
            detail = f"cosine {hit.score:.2f} in {shown(self.db)}"
            if isinstance(target, str):
                detail += " (a document of the store that no --corpus path holds)"
            out.append((target, Reason("semantic", detail, hit.score, weight=WEIGHTS["semantic"])))
        return out, None
