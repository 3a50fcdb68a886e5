"""The trust layer (SPEC §2.3, §2.4, §5): verdicts, the supersession graph, promotion, ordering.

`recall._core.judge` (and `_core.Corpus.judge`, the entry point of a PostgreSQL store) is checked
against the reference model in `oracle.py` on random corpora,
against invariants on its own output, and on one worked example per rule.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from recall import _core

from .oracle import DAY_US, judge_oracle, parse_day_start_us

Doc = tuple[str, str, "str | None", "str | None", "str | None", "int | None"]
Judge = Callable[..., list[tuple[Any, ...]]]


def us(stamp: str) -> int:
    """Microseconds since the Unix epoch of an ISO-8601 UTC instant ("2026-03-31T23:59:59")."""
    when = dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.timezone.utc)
    return (when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


def doc(
    path: str,
    valid_from: str | None = None,
    valid_until: str | None = None,
    error: str | None = None,
    first: int | None = None,
) -> Doc:
    return (_core.resolution_key(path), path, valid_from, valid_until, error, first)


def edge(declarer: int, reference: str) -> tuple[int, str]:
    return (declarer, _core.resolution_key(reference))


# Scores in the examples are exact in binary32: dense cosines are float32 (SPEC §4).
NOW = us("2026-03-15T12:00:00")
T, SCALE = 0.5, 0.05


def call(
    fn: Judge,
    docs: list[Doc],
    edges: Sequence[tuple[int, str]] = (),
    candidates: list[tuple[int, float]] | None = None,
    fetchable: dict[int, float] | None = None,
    now: int = NOW,
    known_as_of: int | None = None,
    threshold: float = T,
    scale: float = SCALE,
    unverified: bool = False,
) -> list[tuple[Any, ...]]:
    """Judge with every document retrieved at 0.875 unless candidates are given."""
    if candidates is None:
        candidates = [(i, 0.875) for i in range(len(docs))]
    return fn(
        docs,
        list(edges),
        candidates,
        fetchable or {},
        now,
        known_as_of,
        threshold,
        scale,
        unverified,
    )


def _instant(first_us: int | None) -> str | None:
    if first_us is None:
        return None
    when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=first_us)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _unit(score: float) -> bytes:
    """A 2-d vector whose cosine with the query (1, 0) is exactly `score` in float32."""
    return struct.pack("<2f", score, math.sqrt(max(0.0, 1.0 - score * score)))


def policy_of(
    now_us: int, known_as_of_us: int | None, threshold: float, scale: float, unverified: bool
) -> _core.Policy:
    """The policy from its fields given one by one, as the oracle takes them."""
    return _core.Policy(
        now_us=now_us,
        known_as_of_us=known_as_of_us,
        threshold=threshold,
        scale=scale,
        unverified=unverified,
    )


def judge_rust(
    docs: list[Doc],
    edges: list[tuple[int, str]],
    candidates: list[tuple[int, float]],
    fetchable: dict[int, float],
    *policy: Any,
) -> list[tuple[Any, ...]]:
    """`_core.judge` called as the oracle is: the policy's fields one by one."""
    return _core.judge(docs, edges, candidates, fetchable, policy_of(*policy))


def corpus_judge(
    corpus: _core.Corpus,
    candidates: list[tuple[int, float]],
    fetchable: dict[int, float],
    policy: _core.Policy,
) -> dict[str, Any]:
    """`Corpus.judge` of candidates (document, cosine) in the order given: they become chunks
    of unit vectors whose cosines are the given scores."""
    chunks = {n: (d, _unit(score), "") for n, (d, score) in enumerate(candidates)}
    fetched = {d: [(10_000 + d, _unit(score), "")] for d, score in fetchable.items()}
    return corpus.judge(
        struct.pack("<2f", 1.0, 0.0),
        text="",
        # The lexical leg keeps the order it is given (the dense one is re-sorted by cosine),
        # so the candidates reach the trust layer in the order the case lists them.
        dense=[],
        lexical=list(chunks),
        chunks=chunks,
        term_dfs=[],
        chunk_count=len(chunks),
        fetch=lambda d: fetched.get(d, []),
        k=len(candidates),
        candidates=len(candidates),
        policy=policy,
    )


def judge_via_corpus(
    docs: list[Doc],
    edges: list[tuple[int, str]],
    candidates: list[tuple[int, float]],
    fetchable: dict[int, float],
    *policy: Any,
) -> list[tuple[Any, ...]]:
    """The same judgment through `_core.Corpus`, the entry point a PostgreSQL store uses."""
    corpus = _core.Corpus(
        [
            (i, "/notes", path, key, _instant(first), vf, vu, err is not None, None, None)
            for i, (key, path, vf, vu, err, first) in enumerate(docs)
        ],
        [(d, (key, key, False, "frontmatter", None, "", False, None)) for d, key in edges],
    )
    out = corpus_judge(corpus, candidates, fetchable, policy_of(*policy))
    index = {path: i for i, (_, path, *_) in enumerate(docs)}
    return [
        (
            h["doc_id"],
            h["verdict"],
            h["confidence"],
            None if h["superseded_by"] is None else index[h["superseded_by"]],
            h["promoted"],
            h["fetched"],
            h["score"],
            None if h["promoted_from"] is None else index[h["promoted_from"]],
        )
        for h in out["hits"]
    ]


@pytest.fixture(params=["rust", "corpus", "oracle"])
def judge(request: pytest.FixtureRequest) -> Judge:
    """Examples run against the extension (the store's entry point and the one a PostgreSQL
    store judges through) and, as a check on the model, against the oracle."""
    return {"rust": judge_rust, "corpus": judge_via_corpus, "oracle": judge_oracle}[request.param]


def verdicts(hits: list[tuple[Any, ...]]) -> dict[int, str]:
    return {h[0]: h[1] for h in hits}


def by_doc(hits: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    return {h[0]: h for h in hits}


# --- the date parser of the model (SPEC §2.2)


@pytest.mark.parametrize(
    "raw",
    ["2026-2-3", "2026-02-30", "", "yesterday", " 2026-02-03", "2026-02-03T00:00", "0000-01-01"],
)
def test_oracle_rejects_malformed_dates(raw: str) -> None:
    assert parse_day_start_us(raw) is None


@pytest.mark.parametrize(
    "raw",
    [
        "0000-01-01",
        "0001-01-01",
        "9999-12-31",
        "1969-12-31",
        "2000-02-29",
        "2100-02-29",
        "\uff11\uff19\uff17\uff10-01-01",  # fullwidth digits
        "2026-03-01\n",
        "+026-01-01",
        "-001-01-01",
    ],
)
def test_odd_dates_match_the_oracle(raw: str) -> None:
    for docs in ([doc("a.md", raw)], [doc("a.md", None, raw)]):
        for now in (0, NOW):
            got, want = call(judge_rust, docs, now=now), call(judge_oracle, docs, now=now)
            assert [h[1] for h in got] == [h[1] for h in want]


def test_oracle_day_start() -> None:
    assert parse_day_start_us("1970-01-02") == DAY_US
    assert parse_day_start_us("2024-02-29") == us("2024-02-29T00:00:00")


# --- verdicts, one example each (SPEC §5.2)


@pytest.mark.parametrize(
    ("valid_from", "valid_until", "error"),
    [
        ("2026-2-3", None, None),
        (None, "2026-02-30", None),
        ("", None, None),
        (None, "yesterday", None),
        ("2026-03-02", "2026-03-01", None),  # empty window
        (None, None, "valid_from: not a YYYY-MM-DD date: '2026-2-3'"),
    ],
)
def test_invalid_metadata(
    judge: Judge, valid_from: str | None, valid_until: str | None, error: str | None
) -> None:
    hits = call(judge, [doc("a.md", valid_from, valid_until, error)])
    assert [h[1] for h in hits] == ["invalid_metadata"]


def test_invalid_metadata_wins_over_everything(judge: Judge) -> None:
    docs = [doc("a.md", "2026-2-3", first=10), doc("b.md", first=1)]
    hits = call(judge, docs, [edge(1, "a")], known_as_of=5)
    # superseded_by is reported whatever verdict won
    assert by_doc(hits)[0][1:4:2] == ("invalid_metadata", 1)


def test_one_day_window_is_valid(judge: Judge) -> None:
    hits = call(judge, [doc("a.md", "2026-03-15", "2026-03-15")])
    assert [h[1] for h in hits] == ["ok"]


def test_not_yet_known(judge: Judge) -> None:
    docs = [doc("later.md", first=101), doc("same.md", first=100), doc("undated.md")]
    assert verdicts(call(judge, docs, known_as_of=100)) == {
        0: "not_yet_known",
        1: "ok",
        2: "ok",  # an undated document stays visible
    }
    assert set(verdicts(call(judge, docs)).values()) == {"ok"}


def test_ambiguous_supersession_on_shared_basenames(judge: Judge) -> None:
    docs = [doc("a/x.md"), doc("b/x.md"), doc("c/new.md")]
    for reference in ["x", "x.md", "[[x]]", "[x.md]", "a/x.md"]:
        hits = call(judge, docs, [edge(2, reference)])
        assert verdicts(hits) == {0: "ambiguous_supersession", 1: "ambiguous_supersession", 2: "ok"}
        assert all(h[3] is None for h in hits)  # the edge is never guessed


def test_ambiguous_even_when_the_declarer_is_a_match(judge: Judge) -> None:
    hits = call(judge, [doc("a/x.md"), doc("b/x.md")], [edge(0, "x")])
    assert set(verdicts(hits).values()) == {"ambiguous_supersession"}


def test_shared_key_without_an_edge_is_not_ambiguous(judge: Judge) -> None:
    assert set(verdicts(call(judge, [doc("a/x.md"), doc("b/x.md")])).values()) == {"ok"}


def test_superseded_chain_reports_the_terminal_successor(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md")]
    hits = by_doc(call(judge, docs, [edge(1, "a.md"), edge(2, "[[b]]")]))
    assert hits[0][1:4:2] == ("superseded", 2)
    assert hits[1][1:4:2] == ("superseded", 2)
    assert hits[2][1:4:2] == ("ok", None)


def test_expired_at_the_exact_day_boundary(judge: Judge) -> None:
    docs = [doc("a.md", valid_until="2026-03-31")]
    last = us("2026-03-31T23:59:59.999999")
    assert [h[1] for h in call(judge, docs, now=last)] == ["ok"]
    assert [h[1] for h in call(judge, docs, now=last + 1)] == ["expired"]


def test_not_yet_valid_at_the_exact_day_boundary(judge: Judge) -> None:
    docs = [doc("a.md", valid_from="2026-04-01")]
    first = us("2026-04-01T00:00:00")
    assert [h[1] for h in call(judge, docs, now=first)] == ["ok"]
    assert [h[1] for h in call(judge, docs, now=first - 1)] == ["not_yet_valid"]


def test_superseded_wins_over_expired(judge: Judge) -> None:
    docs = [doc("a.md", valid_until="2020-01-01"), doc("b.md")]
    assert verdicts(call(judge, docs, [edge(1, "a")]))[0] == "superseded"


def test_low_confidence_and_ok_around_the_threshold(judge: Judge) -> None:
    hits = by_doc(call(judge, [doc("a.md"), doc("b.md")], candidates=[(0, 0.5), (1, 0.4375)]))
    assert hits[0][1] == "ok" and hits[0][2] == 0.5
    assert hits[1][1] == "low_confidence"
    assert hits[1][2] == pytest.approx(1 / (1 + math.exp(0.0625 / SCALE)), abs=1e-12)


def test_unverified_replaces_ok_and_low_confidence_only(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md", valid_until="2020-01-01")]
    hits = call(judge, docs, candidates=[(0, 0.875), (1, 0.125), (2, 0.875)], unverified=True)
    assert verdicts(hits) == {0: "unverified", 1: "unverified", 2: "expired"}


def test_unverified_never_promotes(judge: Judge) -> None:
    docs = [doc("old.md"), doc("new.md")]
    hits = call(judge, docs, [edge(1, "old")], [(0, 0.875), (1, 0.125)], unverified=True)
    assert [h[:2] + (h[4],) for h in hits] == [(0, "superseded", False), (1, "unverified", False)]


def test_duplicate_candidates_keep_the_first(judge: Judge) -> None:
    hits = call(judge, [doc("a.md")], candidates=[(0, 0.6875), (0, 0.9375)])
    assert [(h[0], h[6]) for h in hits] == [(0, 0.6875)]


def test_no_candidates_no_hits(judge: Judge) -> None:
    assert call(judge, [doc("a.md")], candidates=[]) == []


# --- promotion, fetch and ordering (SPEC §5.3)


def test_stale_memo_promotes_its_low_confidence_successor(judge: Judge) -> None:
    docs = [doc("old.md"), doc("new.md")]
    hits = call(judge, docs, [edge(1, "old.md")], [(0, 0.75), (1, 0.3125)])
    assert [h[0] for h in hits] == [1, 0]  # the successor outranks what it replaced
    new, old = hits
    assert new[1:2] + new[3:] == ("ok", None, True, False, 0.3125, 0)
    assert old[1:2] + old[3:] == ("superseded", 1, False, False, 0.75, None)
    # §5.3: the successor carries the confidence of the stale hit whose place it took.
    assert new[2] == old[2] == pytest.approx(1 / (1 + math.exp(-0.25 / SCALE)), abs=1e-12)


def test_successor_takes_the_place_of_the_stale_hit(judge: Judge) -> None:
    docs = [doc("old.md"), doc("other.md"), doc("new.md")]
    hits = call(judge, docs, [edge(2, "old.md")], [(0, 0.875), (1, 0.75), (2, 0.3125)])
    assert [(h[0], h[1], h[7]) for h in hits] == [
        (2, "ok", 0),  # ahead of the unrelated ok hit its predecessor outranked
        (1, "ok", None),
        (0, "superseded", None),
    ]
    assert hits[0][2] == hits[2][2] > hits[1][2]


def test_promotion_happens_exactly_at_the_threshold(judge: Judge) -> None:
    # SPEC §5.3: "a promotion happens at score >= threshold" (T = 0.5 is exact in binary32).
    docs = [doc("old.md"), doc("new.md")]
    at = call(judge, docs, [edge(1, "old.md")], [(0, T), (1, 0.3125)])
    assert [(h[0], h[1], h[4]) for h in at] == [(1, "ok", True), (0, "superseded", False)]
    below = call(judge, docs, [edge(1, "old.md")], [(0, 0.4999999), (1, 0.3125)])
    assert not any(h[4] for h in below)


def test_stale_memo_below_threshold_promotes_nothing(judge: Judge) -> None:
    docs = [doc("old.md"), doc("new.md")]
    hits = call(judge, docs, [edge(1, "old.md")], [(0, 0.4375), (1, 0.3125)], {1: 0.3125})
    assert [(h[0], h[1], h[4]) for h in hits] == [
        (0, "superseded", False),
        (1, "low_confidence", False),
    ]


def test_promotion_leaves_other_verdicts_alone(judge: Judge) -> None:
    docs = [doc("old.md"), doc("new.md", valid_from="2027-01-01")]
    hits = call(judge, docs, [edge(1, "old.md")], [(0, 0.75), (1, 0.3125)])
    assert verdicts(hits) == {0: "superseded", 1: "not_yet_valid"}
    assert not any(h[4] for h in hits)


def test_unretrieved_successor_is_fetched(judge: Judge) -> None:
    docs = [doc("old.md"), doc("other.md"), doc("new.md")]
    hits = call(
        judge, docs, [edge(2, "old")], [(0, 0.75), (1, 0.625)], {0: 0.75, 1: 0.625, 2: 0.25}
    )
    assert [(h[0], h[1], h[4], h[5], h[6]) for h in hits] == [
        (2, "ok", True, True, 0.25),
        (1, "ok", False, False, 0.625),
        (0, "superseded", False, False, 0.75),
    ]


def test_fetched_successor_sits_after_the_hit_that_fetched_it(judge: Judge) -> None:
    docs = [doc("old.md"), doc("other.md"), doc("new.md", valid_until="2020-01-01")]
    hits = call(judge, docs, [edge(2, "old")], [(0, 0.75), (1, 0.125)], {2: 0.875})
    assert [(h[0], h[1], h[5]) for h in hits] == [
        (0, "superseded", False),
        (2, "expired", True),  # judged by the same rules, not promoted
        (1, "low_confidence", False),
    ]


def test_unfetchable_successor_is_left_out(judge: Judge) -> None:
    docs = [doc("old.md"), doc("new.md")]
    hits = call(judge, docs, [edge(1, "old")], [(0, 0.75)], {})
    assert [(h[0], h[1], h[3]) for h in hits] == [(0, "superseded", 1)]


def test_fetched_once_for_two_stale_hits(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md")]
    hits = call(judge, docs, [edge(1, "a"), edge(2, "b")], [(0, 0.875), (1, 0.75)], {2: 0.875})
    assert [(h[0], h[1], h[5]) for h in hits] == [
        (2, "ok", True),
        (0, "superseded", False),
        (1, "superseded", False),
    ]


def test_fetched_successor_is_examined_in_turn(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md")]
    # b supersedes a, c supersedes b, b supersedes c: a -> c, c -> b, b -> c
    edges = [edge(1, "a"), edge(2, "b"), edge(1, "c")]
    hits = call(judge, docs, edges, [(0, 0.875)], {1: 0.25, 2: 0.75})
    assert [(h[0], h[1], h[3], h[5]) for h in hits] == [
        (0, "superseded", 2, False),
        (2, "superseded", 1, True),  # fetched above the threshold: fetches its own successor
        (1, "superseded", 2, True),
    ]


# --- the graph and time (SPEC §2.3, §2.4)


def test_edges_are_filtered_per_step_of_a_chain(judge: Judge) -> None:
    docs = [doc("a.md", first=1), doc("b.md", first=2), doc("c.md", first=5)]
    edges = [edge(1, "a"), edge(2, "b")]
    hits = by_doc(call(judge, docs, edges, known_as_of=3))
    assert hits[0][1:4:2] == ("superseded", 1)
    assert hits[1][1:4:2] == ("ok", None) and hits[2][1] == "not_yet_known"
    assert by_doc(call(judge, docs, edges))[0][1:4:2] == ("superseded", 2)


def test_undated_edge_always_applies(judge: Judge) -> None:
    docs = [doc("a.md", first=0), doc("b.md")]
    assert by_doc(call(judge, docs, [edge(1, "a")], known_as_of=0))[0][1:4:2] == ("superseded", 1)


def test_edge_dated_after_the_instant_does_not_make_ambiguity(judge: Judge) -> None:
    docs = [doc("a/x.md", first=1), doc("b/x.md", first=1), doc("n.md", first=9)]
    assert verdicts(call(judge, docs, [edge(2, "x")], known_as_of=5)) == {
        0: "ok",
        1: "ok",
        2: "not_yet_known",
    }


def test_two_cycle(judge: Judge) -> None:
    hits = by_doc(call(judge, [doc("a.md"), doc("b.md")], [edge(0, "b"), edge(1, "a")]))
    assert hits[0][1:4:2] == ("superseded", 1)
    assert hits[1][1:4:2] == ("superseded", 0)


def test_three_cycle_returns_the_successor_before_the_revisit(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md")]
    # b supersedes a, c supersedes b, a supersedes c
    hits = by_doc(call(judge, docs, [edge(1, "a"), edge(2, "b"), edge(0, "c")]))
    assert {i: h[3] for i, h in hits.items()} == {0: 2, 1: 0, 2: 1}


def test_chain_into_a_cycle(judge: Judge) -> None:
    docs = [doc("a.md"), doc("b.md"), doc("c.md")]
    # b supersedes a, c supersedes b, b supersedes c
    hits = by_doc(call(judge, docs, [edge(1, "a"), edge(2, "b"), edge(1, "c")]))
    assert {i: h[3] for i, h in hits.items()} == {0: 2, 1: 2, 2: 1}


def test_self_reference_is_ignored(judge: Judge) -> None:
    hits = call(judge, [doc("notes/a.md")], [edge(0, "[[a]]")])
    assert [h[1:4:2] for h in hits] == [("ok", None)]


def test_dangling_reference_is_inert(judge: Judge) -> None:
    hits = call(judge, [doc("a.md")], [edge(0, "ghost.md")])
    assert [h[1:4:2] for h in hits] == [("ok", None)]


@pytest.mark.parametrize(
    ("first_p", "first_q", "winner"),
    [
        (2, 1, 1),  # the claim recorded last wins
        (1, 2, 2),
        (3, 3, 1),  # equal dates: the smaller path
        (None, 1, 2),  # undated counts as the earliest
        (None, None, 1),
    ],
)
def test_fan_in(judge: Judge, first_p: int | None, first_q: int | None, winner: int) -> None:
    docs = [doc("t.md"), doc("p.md", first=first_p), doc("q.md", first=first_q)]
    hits = by_doc(call(judge, docs, [edge(2, "t"), edge(1, "t")]))
    assert hits[0][1:4:2] == ("superseded", winner)


def test_fan_in_winner_follows_the_instant(judge: Judge) -> None:
    docs = [doc("t.md", first=0), doc("p.md", first=1), doc("q.md", first=2)]
    edges = [edge(1, "t"), edge(2, "t")]
    assert by_doc(call(judge, docs, edges))[0][3] == 2
    assert by_doc(call(judge, docs, edges, known_as_of=1))[0][3] == 1


# --- random corpora: the extension against the model, and invariants on its own output

FOLDERS = ["", "a/", "b/"]
BASES = ["x", "y", "z"]
PATHS = [f"{folder}{base}.md" for folder in FOLDERS for base in BASES]
DISTINCT = ["p", "q", "r", "s", "t", "u", "v", "w"]
DAYS = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"]
MALFORMED = ["2026-2-3", "2026-02-30", "", "yesterday", "2026-03-02 ", "2026-03-02T00:00"]
# Mostly absent or well-formed, so that verdicts after invalid_metadata are reached often.
RAW = st.one_of(st.none(), st.none(), st.sampled_from(DAYS), st.sampled_from(MALFORMED))
INSTANT = st.one_of(
    st.sampled_from([us(f"{day}T00:00:00") + d for day in DAYS for d in (-1, 0, 1)]),
    st.integers(us("2026-02-28T00:00:00"), us("2026-03-06T00:00:00")),
)
FIRST = st.one_of(st.none(), st.integers(0, 4))
THRESHOLDS = [0.3, 0.5, 0.7]
# Dense cosines are float32 (SPEC §4): scores are drawn exact in binary32, and include the
# thresholds as float32 rounds them (0.3 rounds up, 0.7 down, 0.5 is exact).
SCORE = st.one_of(
    st.sampled_from([float(np.float32(t)) for t in THRESHOLDS]), st.floats(-1.0, 1.0, width=32)
)


def _reference(draw: st.DrawFn, target: str) -> str:
    """One of the written forms of a reference to target, or a dangling name. SPEC §2.3"""
    base = target.rsplit("/", 1)[-1][: -len(".md")]
    forms = [base, f"{base}.md", f"[[{base}]]", f"[{base}.md]", target, "ghost.md"]
    return draw(st.sampled_from(forms))


@st.composite
def cases(draw: st.DrawFn, cyclic: bool = False) -> dict[str, Any]:
    """A corpus with edges, a retrieval and the judging parameters.

    Plain corpora draw paths whose basenames collide across folders (ambiguity); cyclic ones
    have distinct keys, a cycle through a random order of the documents and extra edges.
    """
    if cyclic:
        bases = draw(st.lists(st.sampled_from(DISTINCT), min_size=1, max_size=8, unique=True))
        paths = [draw(st.sampled_from(FOLDERS)) + f"{base}.md" for base in bases]
    else:
        paths = draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=8, unique=True))
    n = len(paths)
    index = st.integers(0, n - 1)
    error = st.sampled_from(
        [None, None, None, "valid_until: not a real calendar date: '2026-02-30'"]
    )
    docs = [doc(p, draw(RAW), draw(RAW), draw(error), draw(FIRST)) for p in paths]
    if draw(st.booleans()):  # clean metadata half of the time, so that later verdicts are reached
        docs = [(key, p, None, None, None, first) for key, p, _, _, _, first in docs]

    pairs = draw(st.lists(st.tuples(index, st.sampled_from(paths)), max_size=10))
    if cyclic:
        order = draw(st.permutations(range(n)))
        pairs += [(order[j], paths[order[j - 1]]) for j in range(n)]
    edges = [edge(d, _reference(draw, p)) for d, p in draw(st.permutations(pairs))]
    candidates = draw(st.lists(st.tuples(index, SCORE), max_size=10))
    if draw(st.booleans()):  # every document retrieved: all verdicts are seen, nothing fetched
        candidates += [(i, draw(SCORE)) for i in draw(st.permutations(range(n)))]
    return {
        "docs": docs,
        "edges": edges,
        "candidates": candidates,
        "fetchable": {i: draw(SCORE) for i in range(n)},
        "now_us": draw(INSTANT),
        "known_as_of_us": draw(st.one_of(st.none(), st.integers(0, 4))),
        "threshold": draw(st.sampled_from(THRESHOLDS)),
        "scale": draw(st.sampled_from([0.01, 0.05, 0.2])),
        "unverified": draw(st.booleans()),
    }


def run(fn: Judge, case: dict[str, Any]) -> list[tuple[Any, ...]]:
    c = case
    return fn(
        c["docs"],
        c["edges"],
        c["candidates"],
        c["fetchable"],
        c["now_us"],
        c["known_as_of_us"],
        c["threshold"],
        c["scale"],
        c["unverified"],
    )


def without_confidence(hits: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [h[:2] + h[3:] for h in hits]


def assert_matches_the_oracle(case: dict[str, Any]) -> None:
    want = run(judge_oracle, case)
    for fn in (judge_rust, judge_via_corpus):
        got = run(fn, case)
        assert without_confidence(got) == without_confidence(want)
        assert [h[2] for h in got] == pytest.approx([h[2] for h in want], abs=1e-9)


@given(cases())
def test_matches_the_oracle(case: dict[str, Any]) -> None:
    assert_matches_the_oracle(case)


@given(cases(cyclic=True))
def test_matches_the_oracle_on_cyclic_graphs(case: dict[str, Any]) -> None:
    assert_matches_the_oracle(case)


@given(
    st.one_of(st.none(), st.sampled_from(DAYS)),
    st.one_of(st.none(), st.sampled_from(DAYS)),
    st.sampled_from([us(f"{day}T00:00:00") + d for day in DAYS for d in (-1, 0)]),
)
def test_window_boundaries_match_the_oracle(
    valid_from: str | None, valid_until: str | None, now: int
) -> None:
    docs = [doc("a.md", valid_from, valid_until)]
    got, want = call(judge_rust, docs, now=now), call(judge_oracle, docs, now=now)
    assert without_confidence(got) == without_confidence(want)


def _window(d: Doc) -> tuple[int | None, int | None]:
    start = None if d[2] is None else parse_day_start_us(d[2])
    end = None if d[3] is None else parse_day_start_us(d[3])
    return start, end


def _confidence(score: float, threshold: float, scale: float) -> float:
    z = max(-60.0, min(60.0, (score - threshold) / scale))
    return 1.0 / (1.0 + math.exp(-z))


#: Two successors that each took a stale hit's place: the first, retrieved after the second
#: stale hit, stands in the earlier place (SPEC §5.3), ahead of the second.
TWO_PLACES_TAKEN = {
    "docs": [doc(f"{c}.md") for c in "pqrstuv"],
    "edges": [edge(1, "p"), edge(0, "ghost"), edge(3, "ghost"), edge(4, "r"), edge(2, "q")]
    + [edge(5, "s"), edge(6, "u")],
    "candidates": [(i, 0.30000001192092896) for i in range(7)],
    "fetchable": {i: 0.30000001192092896 for i in range(7)},
    "now_us": 1_772_323_199_999_999,
    "known_as_of_us": None,
    "threshold": 0.3,
    "scale": 0.01,
    "unverified": False,
}


#: A successor retrieved before the stale hit that names it keeps its own, earlier place (r,
#: promoted through p), ahead of a fetched successor that took a place between the two (u, in
#: s's place): r stays first.
OWN_PLACE_KEPT = {
    "docs": [doc(f"{c}.md") for c in "pqrstuvw"],
    "edges": [edge(0, "w"), edge(1, "p"), edge(2, "q"), edge(3, "ghost"), edge(4, "s")]
    + [edge(5, "t"), edge(6, "ghost"), edge(7, "v")],
    "candidates": [(2, 0.0), (3, 0.30000001192092896), (0, 0.30000001192092896)],
    "fetchable": {i: 0.30000001192092896 for i in range(8)},
    "now_us": 1_772_323_199_999_999,
    "known_as_of_us": None,
    "threshold": 0.3,
    "scale": 0.01,
    "unverified": False,
}


@given(st.one_of(cases(), cases(cyclic=True)))
@example(TWO_PLACES_TAKEN)
@example(OWN_PLACE_KEPT)
def test_invariants(case: dict[str, Any]) -> None:
    hits = run(judge_rust, case)
    docs, threshold, now = case["docs"], case["threshold"], case["now_us"]
    k = case["known_as_of_us"]
    applying_keys = {
        key for d, key in case["edges"] if k is None or docs[d][5] is None or docs[d][5] <= k
    }

    def shared(key: str) -> bool:
        return sum(d[0] == key for d in docs) >= 2

    retrieved: dict[int, float] = {}
    for i, score in case["candidates"]:
        retrieved.setdefault(i, score)

    # one hit per document: every retrieved one, plus fetched successors
    assert len({h[0] for h in hits}) == len(hits)
    assert {h[0] for h in hits if not h[5]} == set(retrieved)
    own = {h[0]: _confidence(h[6], threshold, case["scale"]) for h in hits}
    for i, verdict, conf, succ, promoted, fetched, score, promoted_from in hits:
        assert score == (case["fetchable"][i] if fetched else retrieved[i])
        assert 0.0 < conf <= 1.0
        if promoted_from is None:
            assert conf == pytest.approx(own[i], abs=1e-12)
        else:  # §5.3: a successor carries the confidence of the stale hit whose place it took
            assert verdict == "ok" and conf == pytest.approx(max(own[i], own[promoted_from]))
            assert by_doc(hits)[promoted_from][3] == i
        if promoted:
            assert promoted_from is not None
        if promoted:
            assert verdict == "ok" and score < threshold
        if verdict == "ok":
            start, end = _window(docs[i])
            assert docs[i][4] is None
            assert k is None or docs[i][5] is None or docs[i][5] <= k
            assert not (shared(docs[i][0]) and docs[i][0] in applying_keys)
            assert (start is None or start <= now) and (end is None or now < end + DAY_US)
            assert succ is None
            assert score >= threshold or promoted
        if verdict == "superseded":
            assert succ is not None and succ != i
        if case["unverified"]:
            assert verdict not in ("ok", "low_confidence") and not promoted

    # ok first (the result abstains exactly when the first hit, if any, is not ok)
    ok = [h[1] == "ok" for h in hits]
    assert ok == sorted(ok, reverse=True)
    assert any(ok) == (bool(hits) and hits[0][1] == "ok")

    # confidence is monotone in score (a successor's is inherited, SPEC §5.3)
    pairs = sorted((h[6], h[2]) for h in hits if h[7] is None)
    assert all(a[1] <= b[1] for a, b in zip(pairs, pairs[1:]))

    # §5.3: a successor that took a stale hit's place precedes every ok hit whose place is
    # after that stale hit's (its own retrieval, or the earlier place it took in turn).
    order = [i for i, _ in case["candidates"]]
    first = {i: order.index(i) for i in retrieved}

    def place(g: tuple[Any, ...]) -> int:
        # A retrieved successor stands in its stale hit's place or keeps its own, the earlier.
        return min(first[g[0]], first[g[7]]) if g[7] is not None else first[g[0]]

    for pos, h in enumerate(hits):
        if h[7] is not None:
            later_ok = [
                g
                for g in hits
                if g[1] == "ok" and not g[5] and g[0] != h[0] and place(g) > first[h[7]]
            ]
            assert all(hits.index(g) > pos for g in later_ok)


@given(
    st.lists(st.floats(-1.0, 1.0, width=32), min_size=1, max_size=10), st.sampled_from(THRESHOLDS)
)
def test_confidence_is_monotone_and_calibrated(scores: list[float], threshold: float) -> None:
    docs = [doc(f"d{i}.md") for i in range(len(scores))]
    hits = call(judge_rust, docs, candidates=list(enumerate(scores)), threshold=threshold)
    pairs = sorted((h[6], h[2]) for h in hits)
    assert all(a[1] <= b[1] for a, b in zip(pairs, pairs[1:]))
    assert all(0.0 < conf <= 1.0 for _, conf in pairs)
    assert all(h[2] == 0.5 for h in hits if h[6] == threshold)


def test_cycle_heavy_graph_terminates() -> None:
    n = 60
    docs = [doc(f"n{i}.md", first=i % 7) for i in range(n)]
    edges = [edge(d, f"n{t}") for d in range(n) for t in range(n)]
    hits = call(judge_rust, docs, edges, known_as_of=5)
    assert len(hits) == n
    assert all(h[3] != h[0] for h in hits)


def test_long_chain_resolves_to_its_end() -> None:
    n = 500
    docs = [doc(f"n{i}.md") for i in range(n)]
    edges = [edge(i + 1, f"n{i}") for i in range(n - 1)]
    hits = by_doc(call(judge_rust, docs, edges))
    assert all(hits[i][1:4:2] == ("superseded", n - 1) for i in range(n - 1))
    assert hits[n - 1][1:4:2] == ("ok", None)


def test_a_retired_best_match_leading_by_a_clear_margin_is_the_answer_not_its_neighbours() -> None:
    # SPEC §6 through the entry point a PostgreSQL store judges by: "rejected" (0) leads the
    # on-topic "neighbour" (1) by more than the margin, so the question is about it; "later" (2)
    # was rejected too, but only from a date still to come.
    def judged(retired_score: float) -> list[tuple[str, str]]:
        rejected = ("rejected", None, "madr", False)
        later = ("rejected", "2027-01-01", "madr", False)
        docs = [("rejected.md", rejected), ("neighbour.md", None), ("later.md", later)]
        corpus = _core.Corpus(
            [
                (i, "/notes", path, _core.resolution_key(path), None, None, None, False, None, r)
                for i, (path, r) in enumerate(docs)
            ],
            [],
        )
        scores = [(1, 0.75), (0, retired_score), (2, 0.7)]
        out = corpus_judge(corpus, scores, {}, policy_of(NOW, None, T, SCALE, False))
        return [(docs[h["doc_id"]][0], h["verdict"]) for h in out["hits"]]

    assert judged(0.875) == [
        ("rejected.md", "expired"),  # first: the best match the result names
        ("neighbour.md", "not_entailed"),
        ("later.md", "not_entailed"),
    ]
    # Within the margin (0.10) the neighbours answer, ok first, as before.
    assert judged(0.8125) == [
        ("neighbour.md", "ok"),
        ("later.md", "ok"),
        ("rejected.md", "expired"),
    ]
