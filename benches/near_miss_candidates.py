"""Candidate checks against near misses, stacked on the calibrated threshold (SPEC §6, §7, §9).

A near miss is an on-topic note that does not hold what was asked; its similarity is genuinely
high, so no threshold catches it. This measures checks that could run after the judgment, on the
hits it serves `ok`, without building any of them into recall:

  A  lexical salient-term coverage, with the store's own analyser (`_core.lexical_terms`,
     Tantivy's en_stem). Salient terms: the question's words less function and question words,
     each weighted by its IDF over the indexed chunks (title, headings, text); identifiers (as
     `evidence.rs` finds them), numbers, units asked as a measure (after a number, "many" or
     "per"; `ms` and `milliseconds` compare equal) and names (capitalised words after the first;
     acronyms as written) are the specific terms and count fully. Looked up in the hit's title,
     headings and text, and for a successor standing in a superseded hit's place in that hit's
     too. Features: weighted share present (`cov`), one minus the heaviest missing weight
     (`miss`), share of the question's weight the corpus holds at all (`seen`), share of the
     specific terms present (`spec`), of the numbers and identifiers present (`numbers`).
  B  late interaction with minilm-l6's token vectors (ColBERT-style MaxSim, before pooling):
     each salient question word's best cosine over the tokens of the text the index embedded for
     the hit. Features: IDF-weighted mean (`bmean`), minimum (`bmin`), weighted share of words
     at or above a word cut (`bshare`), and `bspec`: `spec` where a missing name, acronym or
     unit may be stood for by a near-synonym (its MaxSim), numbers and identifiers never.
  C  retired best match: a retired note (a declared rejection, deprecation, withdrawal, …, or a
     statement about itself recall could not act on) with no successor, whose dense cosine (or
     fused score) leads the best `ok` hit's: the result abstains.
  D  combinations, and a small logistic head over the features and the calibrated confidence.

The shipped evaluation set is indexed and judged as `recall eval --embedder minilm-l6
--calibration labelled` judges it, through the same functions (`evaluate_shipped`'s fresh store,
`_cross_fitted`'s two folds, `observe_all`'s strict search at the set's instant), and the script
stops if its baseline differs from the report `measures.py` builds. Each judged result is kept.
A check demotes an `ok` hit that fails it (as the judge demotes to `not_entailed`); a result left
with no `ok` hit abstains. Figures follow `measures.py`: near-miss false confidence (any `ok` hit
left), near-answer false abstain (abstained, or the first hit on a relevant note not `ok`), false
abstain over every answerable question (abstained), far-gap false confidence.

Cuts (and the head's weights) are never chosen on the questions they judge: the questions are
split into five folds grouped by the notes they name (twins about one note share a fold), and
each fold is judged with cuts chosen on the other four by one rule: the least near-miss false
confidence plus near-answer false abstain, keeping false abstain over all answerable questions
at or below 10 %, the most lenient cut on ties. The head's cut is chosen the same way on
out-of-fold probabilities inside the four folds. C's "fixed" rule has its cut set beforehand
(lead >= 0), since grouping puts every leading retired match in one fold. The in-sample
frontiers printed beside them are for reading only. Last, each candidate is applied with the
cuts all the shipped questions choose to the sets in `benches/evalsets/` (10 near misses, 55
answerable questions each, no near answers), which nothing here was fitted on.

Added time is measured per answered query around the feature computation for its `ok` hits: B
runs the model on the hits at query time; "stored" reads hit token vectors an index run would
keep; "B spec" runs the model only on hits lacking a specific term. Figures are printed at
`--k` (recall eval's 5) and at `--timing-k` (10), whose times the summaries show.

    PYTHONPATH=python python benches/near_miss_candidates.py [--k 5] [--timing-k 10]
        [--held-out DIR ...]
"""

# ruff: noqa: E402
from __future__ import annotations

import os

# MaxSim's small matrix products must not start BLAS threads that fight onnxruntime's spinning
# ones for the cores: on two cores that tripled both the model's and MaxSim's time. Set before
# numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime as dt
import math
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall import _core
from recall.api import Memory
from recall.embedders import Embedder
from recall.errors import EmbedderError
from recall.evaluation.measures import build_report
from recall.evaluation.observation import RANK_DEPTH, Row
from recall.evaluation.questions import Question, load_questions
from recall.evaluation.shipped import (
    EVALSET_DIR,
    FIT_CATEGORIES,
    _cross_fitted,
    _fresh_store,
    _load_meta,
)
from recall.models import OnnxEmbedder, make_feed
from recall.results import Hit, Result

EMBEDDER = "minilm-l6"
#: Folds for choosing cuts (grouped by the notes the questions name).
FOLDS = 5
#: Largest share of answerable questions a chosen cut may leave abstaining.
ALL_FA_LIMIT = 0.10
#: Cuts tried per feature (quantiles of the training values), alone and in pairs.
GRID_ONE = 60
GRID_TWO = 16
#: Cuts on a word's MaxSim for `bshare`, chosen with the share's own cut.
WORD_CUTS = (0.5, 0.6, 0.7, 0.8)
#: L2 penalty of the logistic head (standardised features).
HEAD_L2 = 1.0


def _words(text: str) -> list[str]:
    return text.split()


#: Function and question words: never salient.
FUNCTION_WORDS = frozenset(
    _words(
        """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could d did do does doing done down during each either
    else ever every few for from further get gets getting got had has have having he her here
    hers him his how i if in into is it its itself just least less let like ll m made make makes
    may me might more most must my near need needs no nor not now of off on once one only onto or
    other our ours out over own per put rather re s same shall she should so some still such t
    than that the their theirs them then there these they this those through thus to too under
    until up upon us use used uses using ve very via was way we were what whatever when whenever
    where whether which while who whom whose why will with within without would yet you your
    yours"""
    )
)
#: Words that are part of the question after "how" (how long, how many, …).
HOW_WORDS = frozenset(_words("long many much often far soon quickly fast big large old"))
#: Units as written (lower-cased) and the one form they are compared in. A unit is specific when
#: the question asks for a measure in it: after a number, "many" or "per" (within two words).
UNITS = {
    written: unit
    for unit, forms in {
        "ms": "ms msec millisecond milliseconds",
        "s": "s sec secs second seconds",
        "min": "min mins minute minutes",
        "h": "h hr hrs hour hours",
        "d": "d day days",
        "week": "wk week weeks",
        "month": "month months",
        "year": "y yr yrs year years",
        "kb": "kb kib kilobyte kilobytes",
        "mb": "mb mib megabyte megabytes",
        "gb": "gb gib gigabyte gigabytes",
        "tb": "tb tib terabyte terabytes",
        "mah": "mah",
        "dpi": "dpi",
        "m": "m metre metres meter meters",
        "km": "km kilometre kilometres",
        "kg": "kg kilo kilos kilogram kilograms",
        "g": "g gram grams",
        "percent": "percent pct",
        "eur": "eur euro euros",
        "gbp": "gbp pound pounds",
        "usd": "usd dollar dollars",
    }.items()
    for written in _words(forms)
}
#: A number with its unit written on (`500ms`, `10s`, `2GB`).
NUMBER_UNIT = re.compile(r"\d+(?:\.\d+)?([a-z]+)")
#: Characters that join the parts of one identifier (as `evidence.rs` reads them).
JOINERS = "-._/"
RAW_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|[\w\-./]+")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


# --- the evaluation as `recall eval` runs it --------------------------------------------------


class RecordingMemory(Memory):
    """A `Memory` that keeps the judged search of each question: the strict one, or the
    development one where strict refused (`observation._Gate`), not the depth-100 one that
    reads each leg's ranks."""

    def __init__(self, path: Path, embedder: str) -> None:
        super().__init__(path, embedder=embedder)
        self.judged: dict[str, Result] = {}

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        now: dt.datetime | None = None,
        known_as_of: dt.datetime | None = None,
        mode: str | None = None,
        entail: bool = False,
    ) -> Result:
        result = super().search(
            query, k, now=now, known_as_of=known_as_of, mode=mode, entail=entail
        )
        if mode == "strict" or k != RANK_DEPTH:
            self.judged[query] = result
        return result


@dataclass(eq=False)
class Case:
    """One question, the row `recall eval` made of it and the result it was judged by."""

    question: Question
    row: Row
    result: Result
    #: Features per `ok` hit (index into `result.hits`), and of the result as a whole.
    hit_features: dict[int, dict[str, float]] = field(default_factory=dict)
    result_features: dict[str, float] = field(default_factory=dict)
    #: Seconds spent computing each feature family for this result's `ok` hits.
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok_hits(self) -> list[int]:
        return [i for i, h in enumerate(self.result.hits) if h.ok]


@dataclass
class Evaluated:
    """The shipped set judged at one k: its cases, the official figures, the corpus."""

    k: int
    cases: list[Case]
    official: dict[str, Any]
    chunks: list[str]
    embedder: Embedder


def evaluate(k: int, root: Path = EVALSET_DIR) -> Evaluated:
    """Index a set laid out like the shipped one (the shipped set by default) into a fresh
    store and judge every question as `recall eval` does (two-fold cross-fitted labelled
    calibration), keeping each judged result."""
    questions = load_questions(root / "questions.jsonl")
    if len({q.query for q in questions}) != len(questions):
        raise SystemExit("the evaluation set repeats a query; results cannot be keyed by it")
    if k == RANK_DEPTH:
        raise SystemExit(f"k = {RANK_DEPTH} is the depth of the rank search; judge at another k")
    now, touched, indexed_at = _load_meta(root / "meta.json")
    with tempfile.TemporaryDirectory(prefix="near-miss-") as scratch:
        mem = RecordingMemory(_fresh_store(Path(scratch), EMBEDDER), EMBEDDER)
        try:
            started = time.perf_counter()
            mem.index(root / "notes", now=indexed_at, calibrate=False)
            rows, fitted, _ = _cross_fitted(
                mem,
                questions,
                now=now,
                touched=touched,
                fitted_at=indexed_at,
                k=k,
                entail=False,
                fit_categories=FIT_CATEGORIES,
            )
            report = build_report(
                mem.embedder.name,
                questions,
                rows,
                now=now,
                k=k,
                calibrations=fitted,
                notes=[],
                started=started,
                cross_fitted=True,
            )
            chunks: list[str] = []
            after = 0
            while page := mem._store.export(after, 256):
                for doc in page:
                    chunks.extend(
                        _core.lexical_body(doc["title"], chunk[6], chunk[1])
                        for chunk in doc["chunks"]
                    )
                after = page[-1]["id"]
            embedder = mem.embedder
            cases = [Case(q, r, mem.judged[q.query]) for q, r in zip(questions, rows)]
        finally:
            mem.close()
    official = {
        "nm_fc": report.metrics["near_miss_false_confidence"].count,
        "na_fa": report.metrics["near_answer_false_abstain"].count,
        "all_fa": report.metrics["false_abstain"].count,
        "far_fc": report.metrics["far_gap_false_confidence"].count,
        "thresholds": [c.get("threshold") for c in fitted],
    }
    return Evaluated(k, cases, official, chunks, embedder)


# --- A: lexical salient-term coverage -------------------------------------------------------


def idf(df: int, n: int) -> float:
    """BM25's IDF, as `evidence.rs` weighs the query's terms."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Term:
    """One salient term of a question: how it is matched, its weight and where it was written."""

    key: str
    kind: str  # "id", "number", "unit", "name", "acronym" or "word"
    weight: float
    span: tuple[int, int]
    df: int

    @property
    def specific(self) -> bool:
        """Identifiers, numbers, measured units and names (capitalised words after the first):
        a hit that answers the question holds them as written."""
        return self.kind != "word"


@dataclass(frozen=True)
class Analysed:
    """A text as the lexical check reads it: en_stem terms, raw tokens, numbers, units."""

    stems: frozenset[str]
    raw: frozenset[str]
    numbers: frozenset[str]
    units: frozenset[str]


def raw_tokens(text: str) -> Iterable[tuple[str, int, int]]:
    """Tokens as identifiers are written (`evidence.rs`), keeping `50,000` whole: (lower-cased
    token, start, end)."""
    for m in RAW_TOKEN.finditer(text):
        token = m.group()
        lead = len(token) - len(token.lstrip(JOINERS))
        token = token.strip(JOINERS)
        if token:
            yield token.lower(), m.start() + lead, m.start() + lead + len(token)


def analyse(text: str) -> Analysed:
    raw = [t for t, _, _ in raw_tokens(text)]
    units = set()
    for previous, token in zip(["", *raw], raw):
        joined = NUMBER_UNIT.fullmatch(token)
        if joined and joined.group(1) in UNITS:
            units.add(UNITS[joined.group(1)])
        # A one- or two-letter unit (s, h, m, kg) only right after a number.
        elif token in UNITS and (len(token) > 2 or NUMBER.fullmatch(previous)):
            units.add(UNITS[token])
    return Analysed(
        stems=frozenset(_core.lexical_terms(text)),
        raw=frozenset(raw),
        numbers=frozenset(t.replace(",", "") for t in raw if NUMBER.fullmatch(t)),
        units=frozenset(units),
    )


class Lexicon:
    """Document frequencies over the indexed chunks (title, headings and text, as the lexical
    leg indexes them)."""

    def __init__(self, chunks: Sequence[str]) -> None:
        self.n = len(chunks)
        self.df: Counter[str] = Counter()
        for body in chunks:
            a = analyse(body)
            self.df.update({f"w:{s}" for s in a.stems})
            self.df.update({f"r:{s}" for s in a.raw})
            self.df.update({f"n:{s}" for s in a.numbers})
            self.df.update({f"u:{s}" for s in a.units})
        self.top = idf(0, self.n)

    def salient(self, query: str) -> list[Term]:
        """The question's salient terms, each once."""
        identifiers = set(_core.identifiers(query))
        tokens = list(raw_tokens(query))
        terms: dict[str, Term] = {}
        for n, (token, start, end) in enumerate(tokens):
            before = [t for t, _, _ in tokens[max(0, n - 2) : n]]
            after_how = bool(before) and before[-1] == "how"
            if token in identifiers:
                df = self.df[f"r:{token}"]
                terms.setdefault(f"r:{token}", Term(token, "id", self.top, (start, end), df))
                continue
            if NUMBER.fullmatch(token):
                number = token.replace(",", "")
                df = self.df[f"n:{number}"]
                terms.setdefault(f"n:{number}", Term(number, "number", self.top, (start, end), df))
                continue
            measured = any(t in ("many", "per") or NUMBER.fullmatch(t) for t in before)
            if token in UNITS and measured:
                unit = UNITS[token]
                df = self.df[f"u:{unit}"]
                terms.setdefault(f"u:{unit}", Term(unit, "unit", self.top, (start, end), df))
                continue
            offset = start
            for part in re.split(f"[{re.escape(JOINERS)}]", token):
                span = (offset, offset + len(part))
                offset += len(part) + 1
                if not part or part in FUNCTION_WORDS or (after_how and part in HOW_WORDS):
                    continue
                written = query[span[0] : span[1]]
                stems = [x for x in _core.lexical_terms(part) if not x.isdigit()]
                weight = max((idf(self.df[f"w:{x}"], self.n) for x in stems), default=self.top)
                if n > 0 and len(part) > 1 and written != written.lower():
                    # A name (capitalised after the first word), matched as written; an acronym
                    # (all capitals) not even in the plural.
                    kind = "acronym" if written.isupper() else "name"
                    df = self.df[f"r:{part}"]
                    terms.setdefault(f"r:{part}", Term(part, kind, weight, span, df))
                    continue
                for stem in stems:
                    df = self.df[f"w:{stem}"]
                    word = Term(stem, "word", idf(df, self.n), span, df)
                    terms.setdefault(f"w:{stem}", word)
        return list(terms.values())


def present(term: Term, text: Analysed) -> bool:
    if term.kind == "id":
        return term.key in text.raw
    if term.kind == "number":
        return term.key in text.numbers
    if term.kind == "unit":
        return term.key in text.units
    if term.kind == "acronym":
        return term.key in text.raw
    if term.kind == "name":
        # As written, singular or plural (ERPs, Zebras): a name's stem may be a common word.
        key = term.key
        return any(k in text.raw for k in (key, key + "s", key[:-1] if key.endswith("s") else ""))
    return term.key in text.stems


def lexical_features(terms: Sequence[Term], text: Analysed, top: float) -> dict[str, float]:
    def held(kinds: Iterable[str]) -> float:
        asked = [t for t in terms if t.kind in kinds]
        return sum(present(t, text) for t in asked) / len(asked) if asked else 1.0

    specific = held(("id", "number", "unit", "name", "acronym"))
    numbers = held(("id", "number"))
    total = sum(t.weight for t in terms)
    if total <= 0:
        return {"cov": 1.0, "miss": 1.0, "spec": specific, "numbers": numbers}
    missing = [t.weight for t in terms if not present(t, text)]
    return {
        "cov": 1.0 - sum(missing) / total,
        "miss": 1.0 - max(missing, default=0.0) / top,
        "spec": specific,
        "numbers": numbers,
    }


# --- B: late interaction with the embedder's token vectors ----------------------------------


class TokenVectors:
    """minilm-l6's output before pooling: one L2-normalised vector per token (special tokens
    left out), with each token's character span in its text."""

    def __init__(self, embedder: Embedder) -> None:
        if not isinstance(embedder, OnnxEmbedder):
            raise SystemExit(f"{embedder.name} is not an ONNX embedder; B needs token vectors")
        self.e = embedder

    def encode(
        self, texts: Sequence[str], prefix: str
    ) -> list[tuple[npt.NDArray[np.float32], list[tuple[int, int]]]]:
        if not texts:
            return []
        e = self.e
        encodings = e._tokenizer.encode_batch([prefix + t for t in texts])
        width = max(len(enc.ids) for enc in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = make_feed(e._inputs, given, e.model_path, "embedder", EmbedderError)
        (out,) = e._session.run([e._output], feed)
        out = np.asarray(out, dtype=np.float32)
        encoded = []
        for row, enc in enumerate(encodings):
            keep = [i for i, special in enumerate(enc.special_tokens_mask) if not special]
            vectors = out[row, keep, :]
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
            spans = [
                (enc.offsets[i][0] - len(prefix), enc.offsets[i][1] - len(prefix)) for i in keep
            ]
            encoded.append((vectors, spans))
        return encoded


def embedded_text(hit: Hit) -> str:
    """The text the index embedded for this hit's chunk (`indexing._embed_text`)."""
    path = hit.provenance.heading_path
    headings = tuple(path.split(" > ")) if path else ()
    context = " / ".join(dict.fromkeys((hit.title, *headings)))
    return f"{context}\n{hit.text}"


def checked_texts(result: Result, i: int) -> list[str]:
    """What a check reads for the hit at `i`: its embedded text, and for a successor standing in
    a superseded hit's place (SPEC §5.3) that hit's too, since the question was asked in the
    old note's words and the declared edge carries it to the successor."""
    hit = result.hits[i]
    texts = [embedded_text(hit)]
    if hit.promoted_from is not None:
        texts += [embedded_text(h) for h in result.hits if h.provenance.file == hit.promoted_from]
    return texts


def word_scores(
    terms: Sequence[Term],
    query: tuple[npt.NDArray[np.float32], list[tuple[int, int]]],
    hit: npt.NDArray[np.float32],
) -> list[float | None]:
    """MaxSim per salient term: the mean over the term's word pieces of each piece's best
    cosine among the hit's tokens (None: the term has no piece, e.g. truncated)."""
    vectors, spans = query
    best = (vectors @ hit.T).max(axis=1) if len(hit) else np.zeros(len(vectors), np.float32)
    scores: list[float | None] = []
    for term in terms:
        pieces = [i for i, (s, e) in enumerate(spans) if s < term.span[1] and e > term.span[0]]
        scores.append(float(best[pieces].mean()) if pieces else None)
    return scores


def maxsim_features(
    terms: Sequence[Term], scores: Sequence[float | None], text: Analysed
) -> dict[str, float]:
    """MaxSim aggregates, and the specific terms' evidence: the least over them of 1 for a
    term the hit holds as written, else its MaxSim where a near-synonym may stand for it
    (`bspec`: names, acronyms and units; `bunit`: units only), else 0 (numbers and identifiers
    are never rescued: the model cannot tell 2024 from 2025)."""
    scored = [(t.weight, s) for t, s in zip(terms, scores) if s is not None]

    def evidence(rescued: tuple[str, ...]) -> float:
        return min(
            (
                1.0 if present(t, text) else (s or 0.0) if t.kind in rescued else 0.0
                for t, s in zip(terms, scores)
                if t.specific
            ),
            default=1.0,
        )

    bspec = evidence(("name", "acronym", "unit"))
    bunit = evidence(("unit",))
    total = sum(w for w, _ in scored)
    if total <= 0:
        return {
            "bmean": 1.0,
            "bmin": 1.0,
            "bspec": bspec,
            "bunit": bunit,
            **{f"bshare{c:.1f}": 1.0 for c in WORD_CUTS},
        }
    features = {
        "bmean": sum(w * s for w, s in scored) / total,
        "bmin": min(s for _, s in scored),
        "bspec": bspec,
        "bunit": bunit,
    }
    for cut in WORD_CUTS:
        features[f"bshare{cut:.1f}"] = sum(w for w, s in scored if s >= cut) / total
    return features


# --- C: retired best match ------------------------------------------------------------------


def retired_like(hit: Hit, with_expired: bool) -> bool:
    """A note that may not be relied on and names nothing to serve instead: a declared
    retirement, a statement about itself recall could not act on, or (with_expired) any note
    past its window."""
    if hit.retrieval is None:
        return False
    v = hit.validity
    if v.superseded_by is not None:
        return False
    return v.retired is not None or bool(v.unread) or (with_expired and hit.verdict == "expired")


def retired_lead(result: Result, with_expired: bool, fused: bool) -> float:
    """How far the best retired match leads the best `ok` hit (dense cosine, or fused score);
    -1 when the result has no retired match (or no `ok` hit)."""

    def value(h: Hit) -> float:
        if not fused:
            return h.score
        return h.retrieval.fused if h.retrieval is not None else 0.0

    retired = [value(h) for h in result.hits if retired_like(h, with_expired)]
    ok = [value(h) for h in result.hits if h.ok]
    if not retired or not ok:
        return -1.0
    return max(retired) - max(ok)


# --- features for every case ----------------------------------------------------------------


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def compute_features(ev: Evaluated, lexicon: Lexicon, tokens: TokenVectors) -> None:
    """Every `ok` hit's features, each family timed per result as a product would run it.
    Query-time work only: the lexicon's frequencies are the store's, and "B stored" reads the
    hits' token vectors as an index run would have kept them. "B spec" runs the model only
    when a hit lacks a specific term, on those hits alone."""
    prefix_q = tokens.e.config.query_prefix
    stored: dict[str, npt.NDArray[np.float32]] = {}

    def hit_vectors(read: Mapping[int, list[str]]) -> dict[int, npt.NDArray[np.float32]]:
        """Each hit's token vectors (over all its texts), the model run once for all."""
        flat = [t for texts in read.values() for t in texts]
        encoded = iter(tokens.encode(flat, tokens.e.config.passage_prefix))
        return {i: np.vstack([next(encoded)[0] for _ in texts]) for i, texts in read.items()}

    for case in ev.cases:
        oks = case.ok_hits
        if not oks:
            continue
        hits = case.result.hits
        query = case.question.query
        read = {i: checked_texts(case.result, i) for i in oks}
        t0 = time.perf_counter()
        terms = lexicon.salient(query)
        texts = {i: analyse("\n".join(read[i])) for i in oks}
        lexical = {i: lexical_features(terms, texts[i], lexicon.top) for i in oks}
        t1 = time.perf_counter()
        q_tokens = tokens.encode([query], prefix_q)[0]
        t_query = time.perf_counter()
        vectors = hit_vectors(read)
        maxsim = {
            i: maxsim_features(terms, word_scores(terms, q_tokens, vectors[i]), texts[i])
            for i in oks
        }
        t2 = time.perf_counter()
        leads = {
            f"lead_{'exp' if x else 'ret'}_{'fused' if f else 'dense'}": retired_lead(
                case.result, x, f
            )
            for x in (False, True)
            for f in (False, True)
        }
        t3 = time.perf_counter()
        for i in oks:
            stored.setdefault("\n".join(read[i]), vectors[i])
        t4 = time.perf_counter()
        for i in oks:
            v = stored["\n".join(read[i])]
            maxsim_features(terms, word_scores(terms, q_tokens, v), texts[i])
        t5 = time.perf_counter()
        lacking = [i for i in oks if lexical[i]["spec"] < 1.0]
        if lacking:
            q_again = tokens.encode([query], prefix_q)[0]
            for i, v in hit_vectors({i: read[i] for i in lacking}).items():
                maxsim_features(terms, word_scores(terms, q_again, v), texts[i])
        t6 = time.perf_counter()
        for i in lacking:
            v = stored["\n".join(read[i])]
            maxsim_features(terms, word_scores(terms, q_tokens, v), texts[i])
        t7 = time.perf_counter()
        total = sum(t.weight for t in terms)
        seen = sum(t.weight for t in terms if t.df > 0) / total if total > 0 else 1.0
        case.result_features = {**leads, "seen": seen}
        for i in oks:
            h = hits[i]
            case.hit_features[i] = {
                "score": h.score,
                "conf": logit(h.confidence),
                "lexical": h.lexical,
                "seen": seen,
                **lexical[i],
                **maxsim[i],
                **leads,
            }
        # The query's token vectors come from the run that embeds it (`embed_query`) when the
        # product keeps them; "+ query run" counts that run again as if it did not.
        query_run = t_query - t1
        case.seconds = {
            "A": t1 - t0,
            "B": t2 - t1,
            "B stored": t5 - t4,
            "B stored + query run": query_run + t5 - t4,
            "B spec": t6 - t5,
            "B spec stored": t7 - t6,
            "B spec stored + query run": (query_run if lacking else 0.0) + t7 - t6,
            "C": t3 - t2,
        }


# --- checks, cuts and figures ----------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """One feature against a cut: fails when below (`low`) or at/above (`high`) it."""

    feature: str
    direction: str  # "low" or "high"
    #: The least cut allowed (C: the retired note must be the best match, lead >= 0).
    floor: float = -math.inf
    #: A cut set beforehand instead of chosen (C's "the retired note is the best match").
    fixed: float | None = None


@dataclass(frozen=True)
class Component:
    """Demotes an `ok` hit when every condition fails (one condition: that one). A `result`
    component demotes every `ok` hit of the result (C: the result abstains)."""

    conditions: tuple[Condition, ...]
    result: bool = False


Params = tuple[float, ...]


def fails(value: float, cut: float, direction: str) -> bool:
    return value < cut if direction == "low" else value >= cut


def demoted_by(case: Case, components: Sequence[Component], params: Params) -> set[int]:
    out: set[int] = set()
    at = 0
    for comp in components:
        cuts = params[at : at + len(comp.conditions)]
        at += len(comp.conditions)
        for i in case.ok_hits:
            f = case.hit_features[i]
            if all(fails(f[c.feature], cut, c.direction) for c, cut in zip(comp.conditions, cuts)):
                if comp.result:
                    return set(case.ok_hits)
                out.add(i)
    return out


@dataclass
class Outcome:
    abstained: bool
    relevant_ok: bool


def outcome(case: Case, demoted: set[int]) -> Outcome:
    hits = case.result.hits
    kept = {i for i in case.ok_hits if i not in demoted}
    first = next(
        (i for i, h in enumerate(hits) if h.provenance.file in case.question.relevant), None
    )
    return Outcome(abstained=not kept, relevant_ok=first is not None and first in kept)


@dataclass
class Figures:
    nm_fc: list[Case]
    nm_n: int
    na_fa: list[Case]
    na_n: int
    all_fa: list[Case]
    all_n: int
    far_fc: list[Case]
    far_n: int
    by_kind: dict[str, tuple[int, int]]
    demotions: int

    def objective(self) -> tuple[float, int]:
        """The rule cuts are chosen by: least near-miss false confidence plus near-answer false
        abstain with false abstain over all answerable questions ≤ ALL_FA_LIMIT; ties go to
        the cut that demotes fewest hits."""
        nm = len(self.nm_fc) / max(self.nm_n, 1)
        na = len(self.na_fa) / max(self.na_n, 1)
        fa = len(self.all_fa) / max(self.all_n, 1)
        penalty = 0.0 if fa <= ALL_FA_LIMIT + 1e-12 else 10.0 + fa
        return (nm + na + penalty, self.demotions)


def figures(cases: Sequence[Case], demoted: Mapping[int, set[int]]) -> Figures:
    """`measures.py`'s figures for the cases with `demoted[id(case)]` taken from `ok`."""
    nm, na, fa, far = [], [], [], []
    kinds: dict[str, list[int]] = {}
    n = Counter(c.question.category for c in cases)
    for case in cases:
        d = demoted.get(id(case), set())
        o = outcome(case, d)
        cat = case.question.category
        if cat == "near_miss":
            kind = kinds.setdefault(case.question.kind or "other", [0, 0])
            kind[1] += 1
            if not o.abstained:
                nm.append(case)
                kind[0] += 1
        if cat == "near_answer" and (o.abstained or not o.relevant_ok):
            na.append(case)
        if case.question.answerable and o.abstained:
            fa.append(case)
        if cat == "far_gap" and not o.abstained:
            far.append(case)
    return Figures(
        nm,
        n["near_miss"],
        na,
        n["near_answer"],
        fa,
        sum(c.question.answerable for c in cases),
        far,
        n["far_gap"],
        {k: (v[0], v[1]) for k, v in sorted(kinds.items())},
        sum(len(d) for d in demoted.values()),
    )


def grid(
    values: Sequence[float], size: int, direction: str, floor: float = -math.inf
) -> list[float]:
    """Cuts between the observed values (at most `size`, by quantile; none below `floor`), and
    one that never fails."""
    distinct = sorted(
        {max(v, floor) for v in values} | ({floor} if math.isfinite(floor) else set())
    )
    mids = [(a + b) / 2 for a, b in zip(distinct, distinct[1:])]
    if len(mids) > size:
        mids = [mids[round(i * (len(mids) - 1) / (size - 1))] for i in range(size)]
    never = -math.inf if direction == "low" else math.inf
    return [never, *mids]


class Candidate:
    """A check made of components with one cut per condition, the cuts chosen on training
    questions by `Figures.objective`."""

    def __init__(self, name: str, components: Sequence[Component]) -> None:
        self.name = name
        self.components = tuple(components)

    @property
    def conditions(self) -> list[Condition]:
        return [c for comp in self.components for c in comp.conditions]

    def choose(self, train: Sequence[Case]) -> Params:
        conds = self.conditions
        size = GRID_ONE if sum(c.fixed is None for c in conds) <= 1 else GRID_TWO
        grids = [
            [cond.fixed]
            if cond.fixed is not None
            else grid(
                [c.hit_features[i][cond.feature] for c in train for i in c.ok_hits],
                size,
                cond.direction,
                cond.floor,
            )
            for cond in conds
        ]
        best: tuple[tuple[float, int], Params] | None = None
        for params in _product(grids):
            demoted = {id(c): demoted_by(c, self.components, params) for c in train}
            score = figures(train, demoted).objective()
            if best is None or score < best[0]:
                best = (score, params)
        assert best is not None
        return best[1]

    def demote(self, case: Case, params: Params) -> set[int]:
        return demoted_by(case, self.components, params)

    def describe(self, params: Params) -> str:
        parts = []
        for cond, cut in zip(self.conditions, params):
            op = "<" if cond.direction == "low" else ">="
            parts.append(f"{cond.feature} {op} {cut:.3f}" if math.isfinite(cut) else "off")
        return ", ".join(parts)


def _product(grids: Sequence[Sequence[float]]) -> Iterable[Params]:
    if not grids:
        yield ()
        return
    for head in grids[0]:
        for rest in _product(grids[1:]):
            yield (head, *rest)


class Head(Candidate):
    """A logistic head over per-hit features (standardised, L2), fitted on the training folds'
    `ok` hits: positive an answerable question's relevant note, negative any hit of an
    unanswerable question (an answerable question's other hits are left out). A hit is demoted
    below the cut chosen on out-of-fold probabilities within the training folds."""

    def __init__(self, name: str, features: Sequence[str], folds: Mapping[int, int]) -> None:
        super().__init__(name, [])
        self.features = tuple(features)
        self.folds = folds
        self.fitted: dict[Params, tuple[npt.NDArray[np.float64], ...]] = {}

    def _examples(
        self, train: Sequence[Case]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        xs, ys = [], []
        for c in train:
            for i in c.ok_hits:
                relevant = c.result.hits[i].provenance.file in c.question.relevant
                if c.question.answerable and not relevant:
                    continue
                xs.append([c.hit_features[i][f] for f in self.features])
                ys.append(1.0 if c.question.answerable else 0.0)
        return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)

    def _fit(self, train: Sequence[Case]) -> tuple[npt.NDArray[np.float64], ...]:
        x, y = self._examples(train)
        mean, std = x.mean(axis=0), x.std(axis=0)
        std[std == 0] = 1.0
        z = np.hstack([np.ones((len(x), 1)), (x - mean) / std])
        w = np.zeros(z.shape[1])
        penalty = np.eye(z.shape[1]) * HEAD_L2
        penalty[0, 0] = 0.0
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(z @ w)))
            grad = z.T @ (p - y) + penalty @ w
            hess = z.T @ (z * (p * (1 - p))[:, None]) + penalty
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        return w, mean, std

    def _prob(self, model: tuple[npt.NDArray[np.float64], ...], f: Mapping[str, float]) -> float:
        w, mean, std = model
        x = (np.asarray([f[n] for n in self.features]) - mean) / std
        return float(1.0 / (1.0 + math.exp(-(w[0] + x @ w[1:]))))

    def choose(self, train: Sequence[Case]) -> Params:
        inner = sorted({self.folds[id(c)] for c in train})
        oof: dict[int, dict[int, float]] = {}
        for fold in inner:
            model = self._fit([c for c in train if self.folds[id(c)] != fold])
            for c in train:
                if self.folds[id(c)] == fold:
                    oof[id(c)] = {i: self._prob(model, c.hit_features[i]) for i in c.ok_hits}
        cuts = grid([p for probs in oof.values() for p in probs.values()], GRID_ONE, "low")
        best: tuple[tuple[float, int], float] | None = None
        for cut in cuts:
            demoted = {id(c): {i for i, p in oof[id(c)].items() if p < cut} for c in train}
            score = figures(train, demoted).objective()
            if best is None or score < best[0]:
                best = (score, cut)
        assert best is not None
        params = (best[1], float(len(self.fitted)))
        self.fitted[params] = self._fit(train)
        return params

    def demote(self, case: Case, params: Params) -> set[int]:
        model = self.fitted[params]
        return {i for i in case.ok_hits if self._prob(model, case.hit_features[i]) < params[0]}

    def describe(self, params: Params) -> str:
        w, _, _ = self.fitted[params]
        weights = ", ".join(f"{n} {x:+.2f}" for n, x in zip(self.features, w[1:]))
        return f"p < {params[0]:.3f} ({weights})"


class Choice(Candidate):
    """One of several candidates, the one the training questions score best (with its cuts)."""

    def __init__(self, name: str, options: Sequence[Candidate]) -> None:
        super().__init__(name, [])
        self.options = tuple(options)

    def choose(self, train: Sequence[Case]) -> Params:
        best: tuple[tuple[float, int], Params] | None = None
        for n, option in enumerate(self.options):
            params = option.choose(train)
            demoted = {id(c): option.demote(c, params) for c in train}
            score = figures(train, demoted).objective()
            if best is None or score < best[0]:
                best = (score, (float(n), *params))
        assert best is not None
        return best[1]

    def demote(self, case: Case, params: Params) -> set[int]:
        return self.options[int(params[0])].demote(case, params[1:])

    def describe(self, params: Params) -> str:
        return self.options[int(params[0])].describe(params[1:])


# --- folds ----------------------------------------------------------------------------------


def grouped_folds(cases: Sequence[Case], folds: int) -> dict[int, int]:
    """Questions that name a common note (directly or through others) share a fold; groups go
    largest first to the fold with fewest questions."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    names = [list(c.question.relevant) or [f"#{n}"] for n, c in enumerate(cases)]
    for notes in names:
        for note in notes[1:]:
            parent[find(note)] = find(notes[0])
        find(notes[0])
    groups: dict[str, list[Case]] = {}
    for case, notes in zip(cases, names):
        groups.setdefault(find(notes[0]), []).append(case)
    sizes = [0] * folds
    assigned: dict[int, int] = {}
    for _, members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        fold = sizes.index(min(sizes))
        sizes[fold] += len(members)
        for case in members:
            assigned[id(case)] = fold
    return assigned


@dataclass
class Measured:
    candidate: Candidate
    figures: Figures
    cuts: list[str]
    in_sample: str
    seconds: list[float]
    #: The cuts all the questions choose: what a product would ship, applied to held-out sets.
    params: Params


def cross_fit(
    candidate: Candidate, cases: Sequence[Case], folds: Mapping[int, int], families: Sequence[str]
) -> Measured:
    demoted: dict[int, set[int]] = {}
    cuts = []
    for fold in sorted(set(folds.values())):
        train = [c for c in cases if folds[id(c)] != fold]
        params = candidate.choose(train)
        cuts.append(candidate.describe(params))
        for c in cases:
            if folds[id(c)] == fold:
                demoted[id(c)] = candidate.demote(c, params)
    params = candidate.choose(cases)
    seconds = [sum(c.seconds.get(f, 0.0) for f in families) for c in cases if c.ok_hits]
    return Measured(
        candidate, figures(cases, demoted), cuts, candidate.describe(params), seconds, params
    )


# --- what is measured -----------------------------------------------------------------------


def low(*features: str) -> Component:
    return Component(tuple(Condition(f, "low") for f in features))


def result_high(feature: str) -> Component:
    """A result-level rule: abstain when `feature` (a retired match's lead) is at or above a
    cut of at least 0, the retired note being the best match."""
    return Component((Condition(feature, "high", floor=0.0),), result=True)


RETIRED = result_high("lead_ret_dense")
#: C with its cut set beforehand: the retired note outranks every `ok` hit by dense cosine. The
#: cut cannot be cross-fitted here: the leading retired matches are two near misses about one
#: note (ADR 44), so the folds that choose a cut for them never see one.
RETIRED_FIXED = Component((Condition("lead_ret_dense", "high", fixed=0.0),), result=True)


def candidates(folds: Mapping[int, int]) -> list[tuple[Candidate, tuple[str, ...]]]:
    """Each candidate with the feature families whose time it adds."""
    lex = ("score", "conf", "lexical", "cov", "miss", "spec", "seen")
    late = ("bmean", "bmin", "bshare0.6", "bspec")
    bshare = [Candidate(f"bshare{c:.1f}", [low(f"bshare{c:.1f}")]) for c in WORD_CUTS]
    return [
        (Candidate("A cov", [low("cov")]), ("A",)),
        (Candidate("A miss", [low("miss")]), ("A",)),
        (Candidate("A seen", [low("seen")]), ("A",)),
        (Candidate("A numbers and identifiers held", [low("numbers")]), ("A",)),
        (Candidate("A spec", [low("spec")]), ("A",)),
        (Candidate("A core lexical share", [low("lexical")]), ()),
        (Candidate("B bmean", [low("bmean")]), ("B",)),
        (Candidate("B bmean, stored vectors", [low("bmean")]), ("B stored + query run",)),
        (Candidate("B bmin", [low("bmin")]), ("B",)),
        (Choice("B bshare (word cut chosen)", bshare), ("B",)),
        (Candidate("A spec, B rescues", [low("bspec")]), ("A", "B spec")),
        (Candidate("A spec, B rescues units", [low("bunit")]), ("A", "B spec")),
        (Candidate("C retired lead (dense)", [RETIRED]), ("C",)),
        (Candidate("C retired best match (fixed: lead >= 0)", [RETIRED_FIXED]), ("C",)),
        (Candidate("C retired lead (fused)", [result_high("lead_ret_fused")]), ("C",)),
        (Candidate("C expired lead (dense)", [result_high("lead_exp_dense")]), ("C",)),
        (Candidate("A cov + C", [low("cov"), RETIRED]), ("A", "C")),
        (Candidate("A spec + C", [low("spec"), RETIRED]), ("A", "C")),
        (
            Candidate("A numbers and identifiers + C fixed", [low("numbers"), RETIRED_FIXED]),
            ("A", "C"),
        ),
        (Candidate("A spec + C fixed", [low("spec"), RETIRED_FIXED]), ("A", "C")),
        (
            Candidate("A spec, B rescues + C fixed", [low("bspec"), RETIRED_FIXED]),
            ("A", "B spec", "C"),
        ),
        (
            Candidate("  same, hit vectors stored", [low("bspec"), RETIRED_FIXED]),
            ("A", "B spec stored + query run", "C"),
        ),
        (Candidate("B bmean + C", [low("bmean"), RETIRED]), ("B", "C")),
        (Candidate("A cov and B bmean both low", [low("cov", "bmean")]), ("A", "B")),
        (Candidate("A cov or B bmean low", [low("cov"), low("bmean")]), ("A", "B")),
        (Head("D head: conf + A", ("conf", *lex[2:]), folds), ("A",)),
        (Head("D head: conf + B", ("conf", "score", *late), folds), ("B",)),
        (Head("D head: conf + A + B", (*lex, *late), folds), ("A", "B")),
        (
            Head("D head: conf + A + B + C", (*lex, *late, "lead_ret_dense"), folds),
            ("A", "B", "C"),
        ),
    ]


# --- printing -------------------------------------------------------------------------------


def ms(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return 1000.0 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2f})" if whole else "-"


def print_candidate(m: Measured, base: Figures) -> None:
    f = m.figures
    kinds = ", ".join(f"{k} {a}/{n}" for k, (a, n) in f.by_kind.items())
    print(f"\n## {m.candidate.name}")
    print(f"  cuts per fold: {' | '.join(m.cuts)}")
    print(f"  cut on all questions (what a product would ship): {m.in_sample}")
    print(
        f"  near-miss FC {share(len(f.nm_fc), f.nm_n)} [{kinds}]; near-answer FA "
        f"{share(len(f.na_fa), f.na_n)}; all-answerable FA {share(len(f.all_fa), f.all_n)}; "
        f"far-gap FC {share(len(f.far_fc), f.far_n)}"
    )
    print(
        f"  added ms per answered query: p50 {ms(m.seconds, 0.5):.2f}, "
        f"p95 {ms(m.seconds, 0.95):.2f}"
    )
    lost = [c for c in f.na_fa if c not in base.na_fa]
    other = [c for c in f.all_fa if c not in base.all_fa and c.question.category != "near_answer"]
    caught = [c for c in base.nm_fc if c not in f.nm_fc]
    for label, group in (
        ("near answers it loses", lost),
        ("other answerable questions it makes abstain", other),
        ("near misses it catches", caught),
        ("near misses it lets through", f.nm_fc),
    ):
        if group:
            print(f"  {label} ({len(group)}):")
            for c in group:
                kind = f" [{c.question.kind}]" if c.question.kind else ""
                print(f"    - {c.question.query}{kind}")


def print_distributions(cases: Sequence[Case]) -> None:
    """Each feature on the relevant `ok` hit of near answers against near misses' best `ok`
    hit (quartiles), for reading."""
    names = (
        "conf",
        "lexical",
        "cov",
        "miss",
        "spec",
        "seen",
        "bmean",
        "bmin",
        "bshare0.6",
        "bspec",
        "bunit",
    )
    print("\nfeature quartiles (25/50/75): near answers' relevant ok hit | near misses' ok hits")
    for name in names:
        na = [
            c.hit_features[i][name]
            for c in cases
            if c.question.category == "near_answer"
            for i in c.ok_hits
            if c.result.hits[i].provenance.file in c.question.relevant
        ]
        nm = [
            c.hit_features[i][name]
            for c in cases
            if c.question.category == "near_miss"
            for i in c.ok_hits
        ]
        print(f"  {name:10s} {_quartiles(na)} | {_quartiles(nm)}")
    print("\nretired lead (best retired minus best ok dense cosine), where a retired note is hit:")
    for cat in ("near_miss", "near_answer", "paraphrase", "real_wording", "far_gap"):
        leads = sorted(
            round(c.result_features["lead_ret_dense"], 3)
            for c in cases
            if c.question.category == cat and c.result_features.get("lead_ret_dense", -1) > -1
        )
        print(f"  {cat:12s} {leads}")


def _quartiles(values: Sequence[float]) -> str:
    if len(values) < 2:
        return "-"
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:6.3f} {q[1]:6.3f} {q[2]:6.3f} (n={len(values)})"


def frontier(cases: Sequence[Case], feature: str, base: Figures) -> str:
    """In-sample, for reading only: the fewest near misses a cut on `feature` leaves, for each
    number of near answers it may lose (0–3), with all-answerable false abstain at that cut."""
    cand = Candidate(feature, [low(feature)])
    values = [c.hit_features[i][feature] for c in cases for i in c.ok_hits]
    best: dict[int, tuple[int, int]] = {}
    for cut in grid(values, 400, "low"):
        f = figures(cases, {id(c): cand.demote(c, (cut,)) for c in cases})
        lost = len(f.na_fa) - len(base.na_fa)
        if 0 <= lost <= 3:
            here = (len(f.nm_fc), len(f.all_fa))
            best[lost] = min(best.get(lost, here), here)
    return ", ".join(f"lose {n}: NM FC {best[n][0]} (all FA {best[n][1]})" for n in sorted(best))


def judged(k: int, root: Path = EVALSET_DIR) -> tuple[Evaluated, Figures]:
    """A set judged at k with every feature computed, and its baseline figures, which must be
    the ones `recall eval` reports."""
    ev = evaluate(k, root)
    compute_features(ev, Lexicon(ev.chunks), TokenVectors(ev.embedder))
    base = figures(ev.cases, {})
    off = ev.official
    mine = (len(base.nm_fc), len(base.na_fa), len(base.all_fa), len(base.far_fc))
    theirs = (off["nm_fc"], off["na_fa"], off["all_fa"], off["far_fc"])
    if mine != theirs:
        raise SystemExit(
            f"{root}: the recomputed baseline {mine} differs from recall eval's {theirs}"
        )
    return ev, base


def held_out(root: Path, k: int, measured: Sequence[Measured]) -> None:
    """Each candidate with the cuts the shipped set chose on all its questions, on another set
    (its own store, IDF and cross-fitted calibration): nothing here was fitted on it."""
    ev, base = judged(k, root)
    modes = Counter(c.row.mode for c in ev.cases)
    print(f"\n# held out: {root.name}, k = {k}, cuts as chosen on the shipped set ({dict(modes)})")
    head = f"{'candidate':42s} | {'near-miss FC':13s} | {'all-answer FA':13s} | far-gap FC"
    print(head)
    print("-" * len(head))

    def line(name: str, f: Figures) -> None:
        print(
            f"{name:42s} | {share(len(f.nm_fc), f.nm_n):13s} | "
            f"{share(len(f.all_fa), f.all_n):13s} | {share(len(f.far_fc), f.far_n)}"
        )

    line("threshold only (recall eval)", base)
    for m in measured:
        f = figures(ev.cases, {id(c): m.candidate.demote(c, m.params) for c in ev.cases})
        line(m.candidate.name, f)
        lost = [c for c in f.all_fa if c not in base.all_fa]
        for c in lost:
            print(f"    loses: {c.question.query}")


def run(k: int) -> tuple[list[Measured], Figures]:
    ev, base = judged(k)
    off = ev.official
    mine = (len(base.nm_fc), len(base.na_fa), len(base.all_fa), len(base.far_fc))
    theirs = (off["nm_fc"], off["na_fa"], off["all_fa"], off["far_fc"])
    print(
        f"\n# k = {k}: {len(ev.cases)} questions, {len(ev.chunks)} chunks, thresholds "
        f"{off['thresholds']}"
    )
    print(
        f"baseline (recall eval's figures / recomputed here): near-miss FC {theirs[0]}/{mine[0]}, "
        f"near-answer FA {theirs[1]}/{mine[1]}, all-answerable FA {theirs[2]}/{mine[2]}, "
        f"far-gap FC {theirs[3]}/{mine[3]}"
    )
    answered = [c for c in ev.cases if c.ok_hits]
    oks = sorted(len(c.ok_hits) for c in answered)
    print(
        f"answered queries {len(answered)}, ok hits per answered query: median "
        f"{statistics.median(oks)}, max {oks[-1]}; time per family (ms, p50 / p95):"
    )
    for family in answered[0].seconds:
        seconds = [c.seconds[family] for c in answered]
        print(f"  {family:26s} {ms(seconds, 0.5):7.2f} / {ms(seconds, 0.95):7.2f}")
    lacking = sum(any(c.hit_features[i]["spec"] < 1 for i in c.ok_hits) for c in answered)
    print(f'  ("B spec" runs the model on {lacking} of them: an ok hit lacks a specific term)')
    tokenizer = TokenVectors(ev.embedder).e._tokenizer
    tokens = sum(len(enc.ids) for enc in tokenizer.encode_batch(ev.chunks))
    print(
        f"token vectors an index would store for B: {tokens} tokens in {len(ev.chunks)} chunks, "
        f"{tokens * 384 * 2 / len(ev.chunks) / 1024:.0f} KiB per chunk at float16 "
        f"(the dense vector: 1.5 KiB)"
    )
    folds = grouped_folds(ev.cases, FOLDS)
    sizes = Counter(folds.values())
    print(f"folds (questions): {[sizes[f] for f in range(FOLDS)]}")
    print_distributions(ev.cases)
    print("\nin-sample frontier per feature (for reading, not a result):")
    for name in ("cov", "miss", "spec", "lexical", "bmean", "bmin", "bshare0.6", "bspec", "bunit"):
        print(f"  {name:10s} {frontier(ev.cases, name, base)}")
    measured = []
    for cand, families in candidates(folds):
        m = cross_fit(cand, ev.cases, folds, families)
        measured.append(m)
        print_candidate(m, base)
    return measured, base


def print_table(
    k: int, measured: Sequence[Measured], base: Figures, timing: Mapping[str, Measured]
) -> None:
    print(f"\n# summary, k = {k} (added ms at the timing k, over the queries answered there)")
    head = f"{'candidate':42s} | {'near-miss FC':13s} | {'near-answer FA':14s} | "
    head += f"{'all-answer FA':13s} | {'far-gap FC':11s} | added ms p50 / p95"
    print(head)
    print("-" * len(head))

    def line(name: str, f: Figures, added: str) -> None:
        print(
            f"{name:42s} | {share(len(f.nm_fc), f.nm_n):13s} | {share(len(f.na_fa), f.na_n):14s} | "
            f"{share(len(f.all_fa), f.all_n):13s} | {share(len(f.far_fc), f.far_n):11s} | {added}"
        )

    line("threshold only (recall eval)", base, "0")
    for m in measured:
        t = timing.get(m.candidate.name)
        added = f"{ms(t.seconds, 0.5):.2f} / {ms(t.seconds, 0.95):.2f}" if t else "-"
        line(m.candidate.name, m.figures, added)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--k", type=int, default=5, help="judged k (recall eval's default: 5)")
    parser.add_argument("--timing-k", type=int, default=10, help="k the added time is read at")
    parser.add_argument(
        "--held-out",
        type=Path,
        action="append",
        help="a set laid out like the shipped one to apply the chosen cuts to (repeatable; "
        "default: benches/evalsets/*)",
    )
    args = parser.parse_args()
    measured, base = run(args.k)
    timing = {m.candidate.name: m for m in measured}
    if args.timing_k != args.k:
        at_timing, base_t = run(args.timing_k)
        timing = {m.candidate.name: m for m in at_timing}
        print_table(args.timing_k, at_timing, base_t, timing)
    print_table(args.k, measured, base, timing)
    default = sorted(p for p in (Path(__file__).parent / "evalsets").iterdir() if p.is_dir())
    for root in args.held_out or default:
        held_out(root, args.k, measured)


if __name__ == "__main__":
    main()
