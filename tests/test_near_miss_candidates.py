"""The candidate checks of `benches/near_miss_candidates.py` on hand-made cases: A's salient
terms and their coverage by a passage (numbers, identifiers, units, and a negation that coverage
cannot see), B's MaxSim over minilm-l6's token vectors, C's lead of a retired best match, and
D's cuts, demotions, figures and folds as the script counts them. No evaluation set is indexed."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import recall
from recall.evaluation.observation import Row
from recall.evaluation.questions import Question
from recall.models import OnnxEmbedder
from recall.results import Staleness

BENCH = Path(__file__).parents[1] / "benches" / "near_miss_candidates.py"

#: Short chunk texts for the lexicon: "orders" is in every one, "refunds" in one.
ORDERS = [
    "Orders ship from the warehouse.",
    "Orders are billed monthly.",
    "Orders can be cancelled within a day.",
    "Refunds for orders take a week.",
    "Orders over 100 kg ship by freight.",
]


@pytest.fixture(scope="module")
def nm() -> Iterator[ModuleType]:
    """The bench script as a module (it imports only recall and numpy, not its siblings)."""
    spec = importlib.util.spec_from_file_location("near_miss_candidates", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as mp:
        # Its dataclasses look the module up in sys.modules while they are defined; it sets
        # OPENBLAS_NUM_THREADS when it loads. Both are undone after this file's tests.
        mp.setitem(sys.modules, spec.name, module)
        mp.setenv("OPENBLAS_NUM_THREADS", "1")
        spec.loader.exec_module(module)
        yield module


@pytest.fixture(scope="module")
def orders(nm: ModuleType) -> Any:
    return nm.Lexicon(ORDERS)


# --- A: lexical salient-term coverage ---------------------------------------------------------


def test_salient_terms_drop_function_and_question_words(nm: ModuleType, orders: Any) -> None:
    terms = orders.salient("When do refunds for orders arrive?")
    assert [(t.key, t.kind, t.df) for t in terms] == [
        ("refund", "word", 1),
        ("order", "word", 5),
        ("arriv", "word", 0),
    ]
    refund, order, arrive = (t.weight for t in terms)
    # BM25's IDF over the five chunks: a word no chunk holds weighs the most.
    assert arrive == pytest.approx(orders.top) == pytest.approx(math.log(1 + 5.5 / 0.5))
    assert arrive > refund > order > 0
    # "How long": `long` belongs to the question word.
    keys = [t.key for t in orders.salient("How long does planning take for 50,000 orders?")]
    assert keys == ["plan", "take", "50000", "order"]


def test_a_passage_holding_the_rare_term_covers_more(nm: ModuleType, orders: Any) -> None:
    terms = orders.salient("When do refunds for orders arrive?")
    rare = nm.lexical_features(terms, nm.analyse("Refunds are paid within a week."), orders.top)
    common = nm.lexical_features(terms, nm.analyse("Orders are paid within a week."), orders.top)
    total = sum(t.weight for t in terms)
    assert rare["cov"] == pytest.approx(terms[0].weight / total)
    assert common["cov"] == pytest.approx(terms[1].weight / total)
    assert rare["cov"] > 10 * common["cov"]
    # Each misses `arrive`, which no chunk holds: the heaviest weight there is.
    assert rare["miss"] == common["miss"] == pytest.approx(0.0)
    # Nothing specific was asked: both hold all of it.
    assert rare["spec"] == common["spec"] == rare["numbers"] == common["numbers"] == 1.0


def test_a_number_the_question_names_must_be_held(nm: ModuleType, orders: Any) -> None:
    terms = orders.salient("How long does planning take for 50,000 orders?")
    assert [t.key for t in terms if t.kind == "number"] == ["50000"]

    def features(text: str) -> dict[str, float]:
        return dict(nm.lexical_features(terms, nm.analyse(text), orders.top))

    other = features("Planning 10,000 orders took four minutes.")
    assert (other["numbers"], other["spec"]) == (0.0, 0.0)
    # The thousands separator is dropped on both sides: 50,000 and 50000 are one number.
    assert nm.analyse("Planning 50,000 orders took an hour.").numbers == {"50000"}
    for written in ("50000", "50,000"):
        held = features(f"Planning {written} orders took an hour.")
        assert (held["numbers"], held["spec"]) == (1.0, 1.0)
        assert held["cov"] > other["cov"]


def test_an_identifier_asked_is_matched_as_written(nm: ModuleType, orders: Any) -> None:
    terms = orders.salient("What timeout does api.v2/orders use?")
    assert [(t.key, t.kind) for t in terms] == [("timeout", "word"), ("api.v2/orders", "id")]
    held = nm.lexical_features(
        terms, nm.analyse("The api.v2/orders endpoint times out after 30 s."), orders.top
    )
    other = nm.lexical_features(
        terms, nm.analyse("The api.v1/orders endpoint times out after 30 s."), orders.top
    )
    assert (held["spec"], held["numbers"]) == (1.0, 1.0)
    assert (other["spec"], other["numbers"]) == (0.0, 0.0)


def test_a_unit_asked_as_a_measure_is_specific(nm: ModuleType, orders: Any) -> None:
    terms = orders.salient("How many ms between Kafka offset commits?")
    assert [(t.key, t.kind) for t in terms if t.specific] == [("ms", "unit"), ("kafka", "name")]
    # Written on the number, spelled out or apart: one unit. Another unit is not it.
    for text in ("every 500ms", "every 500 milliseconds", "every 500 ms"):
        f = nm.lexical_features(
            terms, nm.analyse(f"Kafka consumers commit offsets {text}."), orders.top
        )
        assert (f["spec"], f["cov"]) == (1.0, 1.0), text
    f = nm.lexical_features(
        terms, nm.analyse("Kafka consumers commit offsets every 2 seconds."), orders.top
    )
    assert f["spec"] == 0.5  # the name held, the unit not
    assert f["numbers"] == 1.0  # a unit is not a number
    # A one- or two-letter unit counts only right after a number; a word that is not asked as
    # a measure is an ordinary word.
    assert nm.analyse("5 m of cable").units == {"m"}
    assert nm.analyse("m of cable").units == set()
    assert [t.kind for t in orders.salient("Which minutes are billed?")] == ["word", "word"]


def test_a_negated_passage_is_covered(nm: ModuleType) -> None:
    """Coverage reads terms, not what is said of them: "not" is a function word, so a passage
    that denies the asked behaviour holds every salient term."""
    lexicon = nm.Lexicon(
        [
            "We do not retry on 4xx responses.",
            "Retries use exponential backoff with jitter.",
            "The planner schedules orders for the warehouse.",
        ]
    )
    terms = lexicon.salient("Do we retry on 4xx?")
    assert [(t.key, t.kind) for t in terms] == [("retri", "word"), ("4xx", "id")]
    text = nm.analyse("We do not retry on 4xx responses.")
    assert all(nm.present(t, text) for t in terms)
    assert nm.lexical_features(terms, text, lexicon.top) == {
        "cov": 1.0,
        "miss": 1.0,
        "spec": 1.0,
        "numbers": 1.0,
    }


# --- B: late interaction with minilm-l6's token vectors -----------------------------------------

PASSAGES = [
    "Deployments are rolled back automatically when the canary fails.",
    "Our office cafeteria serves lunch at noon.",
    "The canary catches failed deployments.",
]
QUESTION = "How are deployments rolled back?"


@pytest.fixture(scope="module")
def maxsim(nm: ModuleType) -> dict[str, Any]:
    """One model run for the question and one for the passages, with their salient terms."""
    embedder = recall.get_embedder("minilm-l6")
    assert isinstance(embedder, OnnxEmbedder)
    tokens = nm.TokenVectors(embedder)
    lexicon = nm.Lexicon(PASSAGES)
    terms = lexicon.salient(QUESTION)
    query = tokens.encode([QUESTION], embedder.config.query_prefix)[0]
    passages = tokens.encode(PASSAGES, embedder.config.passage_prefix)
    scores = [nm.word_scores(terms, query, vectors) for vectors, _ in passages]
    features = [nm.maxsim_features(terms, s, nm.analyse(text)) for s, text in zip(scores, PASSAGES)]
    return {"terms": terms, "query": query, "passages": passages, "scores": scores, "f": features}


def test_token_vectors_are_unit_length_with_their_spans(
    nm: ModuleType, maxsim: dict[str, Any]
) -> None:
    vectors, spans = maxsim["query"]
    assert vectors.shape == (len(spans), 384)
    # Word pieces, each with its span in the question as written.
    assert [QUESTION[s:e] for s, e in spans][:4] == ["How", "are", "deployment", "s"]
    assert all(abs(float((v * v).sum()) - 1.0) < 1e-4 for v in vectors)
    with pytest.raises(SystemExit, match="not an ONNX embedder"):
        nm.TokenVectors(recall.get_embedder("hashing-64"))


def test_maxsim_of_a_held_word_is_high(maxsim: dict[str, Any]) -> None:
    assert [t.key for t in maxsim["terms"]] == ["deploy", "roll", "back"]
    on_topic, off_topic, neighbour = maxsim["scores"]
    # The same word in another sentence: contextual vectors, so near 1 but not 1.
    assert all(s is not None and s >= 0.8 for s in on_topic)
    assert all(s is not None and s < 0.3 for s in off_topic)
    # The neighbour holds "deployments" but neither "rolled" nor "back".
    assert neighbour[0] >= 0.6 and neighbour[1] < 0.4 and neighbour[2] < 0.4


def test_bmean_of_an_on_topic_passage_exceeds_an_off_topic_one(
    nm: ModuleType, maxsim: dict[str, Any]
) -> None:
    on_topic, off_topic, neighbour = maxsim["f"]
    assert on_topic["bmean"] > 0.8 > 0.5 > neighbour["bmean"] > off_topic["bmean"]
    assert off_topic["bmean"] < 0.2
    assert on_topic["bmin"] == min(maxsim["scores"][0])
    assert (on_topic["bshare0.8"], off_topic["bshare0.5"]) == (1.0, 0.0)
    # Nothing specific was asked: there is nothing for B to rescue.
    assert on_topic["bspec"] == off_topic["bspec"] == 1.0


def test_b_rescues_a_missing_name_but_never_a_number(nm: ModuleType) -> None:
    lexicon = nm.Lexicon(ORDERS)
    name = lexicon.salient("How often does Stripe bill orders?")
    stripe = next(t for t in name if t.kind == "name")
    text = nm.analyse("Orders are billed monthly.")
    f = nm.maxsim_features(name, [0.7 if t is stripe else 0.9 for t in name], text)
    # `bunit` rescues units only: the missing name is not one.
    assert f["bspec"] == pytest.approx(0.7) and f["bunit"] == 0.0
    number = lexicon.salient("Which orders over 200 kg ship by freight?")
    f = nm.maxsim_features(number, [0.95] * len(number), nm.analyse(ORDERS[4]))
    assert f["bspec"] == 0.0  # 200 is not 100, whatever the model says


# --- C: retired best match ----------------------------------------------------------------------


def _hit(
    file: str,
    score: float,
    verdict: str = "ok",
    *,
    fused: float = 0.03,
    retrieved: bool = True,
    **validity: Any,
) -> recall.Hit:
    v = {"valid_from": None, "valid_until": None, "superseded_by": None, **validity}
    return recall.Hit(
        verdict=verdict,
        confidence=0.9 if verdict == "ok" else 0.1,
        score=score,
        proven=True,
        title=file,
        text="x",
        provenance=recall.Provenance("notes", file, 0, (1, 1), "", "", ""),
        validity=recall.Validity(**v),
        retrieval=recall.Retrieval(1, 1, fused / 2, fused / 2, fused) if retrieved else None,
    )


def _result(hits: Sequence[recall.Hit]) -> recall.Result:
    return recall.Result(
        query="q",
        hits=list(hits),
        abstained=not any(h.ok for h in hits),
        reason="",
        gap_warning=False,
        calibrated=True,
        calibration=None,
        generation=1,
        staleness=Staleness(None, None, True),
        trust_state="trusted",
        mode="strict",
    )


REJECTED = recall.Retired("rejected", None, "status", 2, "status: rejected")


def test_a_retired_note_leading_the_best_ok_hit(nm: ModuleType) -> None:
    retired = _hit("adr-44.md", 0.80, "expired", fused=0.032, retired=REJECTED)
    ok = _hit("adr-45.md", 0.67, fused=0.031)
    result = _result([ok, retired, _hit("other.md", 0.60)])
    assert nm.retired_like(retired, False) and not nm.retired_like(ok, True)
    assert nm.retired_lead(result, False, False) == pytest.approx(0.13)
    assert nm.retired_lead(result, True, False) == pytest.approx(0.13)
    assert nm.retired_lead(result, False, True) == pytest.approx(0.001)
    # Behind the ok hit: a negative lead.
    behind = _result([ok, _hit("adr-44.md", 0.60, "expired", retired=REJECTED)])
    assert nm.retired_lead(behind, False, False) == pytest.approx(-0.07)


def test_no_retired_match_has_a_lead_of_minus_one(nm: ModuleType) -> None:
    ok = _hit("a.md", 0.67)
    assert nm.retired_lead(_result([ok, _hit("b.md", 0.5)]), True, False) == -1.0
    retired = _hit("adr-44.md", 0.80, "expired", retired=REJECTED)
    # A retired match but no ok hit: -1 as well.
    assert nm.retired_lead(_result([retired]), False, False) == -1.0
    # Not retired-like: a retired note with a successor, a fetched successor, an ended window
    # (unless expired notes are asked for).
    superseded = _hit("c.md", 0.9, "expired", retired=REJECTED, superseded_by="d.md")
    fetched = _hit("e.md", 0.9, "expired", retired=REJECTED, retrieved=False)
    ended = _hit("f.md", 0.9, "expired", valid_until="2025-01-01")
    assert not any(nm.retired_like(h, True) for h in (superseded, fetched))
    assert not nm.retired_like(ended, False) and nm.retired_like(ended, True)
    result = _result([ok, superseded, fetched, ended])
    assert nm.retired_lead(result, False, False) == -1.0
    assert nm.retired_lead(result, True, False) == pytest.approx(0.9 - 0.67)
    # A statement recall could not act on makes a note retired-like too.
    unread = _hit("g.md", 0.7, "ok", unread=(recall.Unread("status", 2, "status: parked"),))
    assert nm.retired_like(unread, False)


# --- D: cuts, demotions and figures -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "cut", "direction", "failed"),
    [
        (0.49, 0.5, "low", True),
        (0.5, 0.5, "low", False),
        (0.51, 0.5, "low", False),
        (0.49, 0.5, "high", False),
        (0.5, 0.5, "high", True),
        (0.51, 0.5, "high", True),
        (0.0, -math.inf, "low", False),
        (0.0, math.inf, "high", False),
    ],
)
def test_fails_below_a_low_cut_and_at_or_above_a_high_one(
    nm: ModuleType, value: float, cut: float, direction: str, failed: bool
) -> None:
    assert nm.fails(value, cut, direction) is failed


def _case(
    nm: ModuleType,
    category: str,
    hits: Sequence[recall.Hit],
    features: Sequence[dict[str, float]] = (),
    *,
    relevant: tuple[str, ...] = ("a.md",),
    kind: str | None = None,
) -> Any:
    """A judged question: `features[n]` belongs to the n-th `ok` hit."""
    answerable = category not in ("near_miss", "far_gap")
    query = f"{category} {len(hits)} {relevant}"
    question = Question(query, answerable, category, relevant if answerable else (), kind=kind)
    result = _result(hits)
    row = Row(
        query=query,
        category=category,
        answerable=answerable,
        mode="strict",
        abstained=result.abstained,
        reason="",
        first_ok=next((h.provenance.file for h in hits if h.ok), None),
        ok_files=tuple(h.provenance.file for h in hits if h.ok),
        threshold=0.5,
        dense_rank=None,
        lexical_rank=None,
        hybrid_rank=None,
        plain_top=None,
        recency_pick=None,
        superseded_seen=(),
        top_score=None,
        second_score=None,
    )
    case = nm.Case(question, row, result)
    case.hit_features = dict(zip(case.ok_hits, features))
    return case


def test_a_component_demotes_exactly_the_hits_below_its_cut(nm: ModuleType) -> None:
    hits = [_hit("a.md", 0.8), _hit("b.md", 0.7, "expired"), _hit("c.md", 0.6), _hit("d.md", 0.5)]
    case = _case(nm, "near_answer", hits, [{"cov": 0.9}, {"cov": 0.4}, {"cov": 0.5}])
    assert case.ok_hits == [0, 2, 3]
    cov = nm.low("cov")
    assert nm.demoted_by(case, [cov], (0.5,)) == {2}
    assert nm.demoted_by(case, [cov], (0.95,)) == {0, 2, 3}
    assert nm.demoted_by(case, [cov], (-math.inf,)) == set()
    # Two conditions in one component: demoted only when both fail.
    for i, bmean in zip(case.ok_hits, (0.9, 0.2, 0.9)):
        case.hit_features[i]["bmean"] = bmean
    assert nm.demoted_by(case, [nm.low("cov", "bmean")], (0.6, 0.5)) == {2}
    assert nm.demoted_by(case, [nm.low("cov"), nm.low("bmean")], (0.6, 0.5)) == {2, 3}
    # A result component: one failing hit takes every ok hit with it.
    for i in case.ok_hits:
        case.hit_features[i]["lead_ret_dense"] = 0.02
    assert nm.demoted_by(case, [nm.RETIRED_FIXED], (0.0,)) == {0, 2, 3}
    assert nm.demoted_by(case, [nm.RETIRED_FIXED], (0.05,)) == set()


def test_figures_count_near_miss_false_confidence_and_near_answer_false_abstain(
    nm: ModuleType,
) -> None:
    near_miss = _case(nm, "near_miss", [_hit("a.md", 0.8)], [{"cov": 0.3}], kind="number")
    # The relevant note is hit second: ok, but a neighbour on top is ok too.
    near_answer = _case(
        nm,
        "near_answer",
        [_hit("b.md", 0.8), _hit("a.md", 0.7)],
        [{"cov": 0.5}, {"cov": 0.9}],
    )
    far_gap = _case(nm, "far_gap", [_hit("c.md", 0.7)], [{"cov": 0.1}])
    cases = [near_miss, near_answer, far_gap]

    base = nm.figures(cases, {})
    assert (base.nm_fc, base.na_fa, base.all_fa, base.far_fc) == ([near_miss], [], [], [far_gap])
    assert (base.nm_n, base.na_n, base.all_n, base.far_n) == (1, 1, 1, 1)
    assert base.by_kind == {"number": (1, 1)} and base.demotions == 0

    at = {id(c): nm.demoted_by(c, [nm.low("cov")], (0.4,)) for c in cases}
    cut = nm.figures(cases, at)
    assert (cut.nm_fc, cut.na_fa, cut.all_fa, cut.far_fc) == ([], [], [], [])
    assert cut.by_kind == {"number": (0, 1)} and cut.demotions == 2
    assert cut.objective() == (0.0, 2)

    # Demoting the relevant hit while its neighbour stays ok is a near-answer false abstain
    # though the result still answers.
    wrong = nm.figures(cases, {id(near_answer): {1}})
    assert wrong.na_fa == [near_answer] and wrong.all_fa == []
    # Demoting both: abstained, over all answerable questions too, past the 10 % allowed.
    both = nm.figures(cases, {id(near_answer): {0, 1}})
    assert both.na_fa == both.all_fa == [near_answer]
    assert both.objective() == (1.0 + 1.0 + 10.0 + 1.0, 2)


def test_a_candidate_chooses_the_cut_that_catches_the_near_miss(nm: ModuleType) -> None:
    near_miss = _case(nm, "near_miss", [_hit("a.md", 0.8)], [{"cov": 0.3}])
    near_answer = _case(nm, "near_answer", [_hit("a.md", 0.8)], [{"cov": 0.9}])
    candidate = nm.Candidate("A cov", [nm.low("cov")])
    assert candidate.choose([near_miss, near_answer]) == (pytest.approx(0.6),)
    # A cut that would leave the only answerable question abstaining is never worth it.
    leaky = _case(nm, "near_miss", [_hit("a.md", 0.8)], [{"cov": 0.95}])
    assert candidate.choose([leaky, near_answer]) == (-math.inf,)
    # A fixed cut is kept whatever the training questions say.
    fixed = nm.Candidate("C fixed", [nm.RETIRED_FIXED])
    led = _case(nm, "near_answer", [_hit("a.md", 0.8)], [{"lead_ret_dense": 0.2}])
    assert fixed.choose([led]) == (0.0,)
    # Choice: the option the training questions score best, its index first.
    choice = nm.Choice("either", [nm.Candidate("bmean", [nm.low("bmean")]), candidate])
    for case, bmean in ((near_miss, 0.9), (near_answer, 0.9)):
        case.hit_features[0]["bmean"] = bmean
    params = choice.choose([near_miss, near_answer])
    assert params == (1.0, pytest.approx(0.6))
    assert choice.demote(near_miss, params) == {0} and choice.demote(near_answer, params) == set()


def test_the_head_separates_answers_from_near_misses(nm: ModuleType) -> None:
    answers = [
        _case(nm, "near_answer", [_hit(f"a{n}.md", 0.8)], [{"x": x}], relevant=(f"a{n}.md",))
        for n, x in enumerate((0.8, 0.85, 0.9, 0.95, 0.7, 0.75))
    ]
    misses = [
        _case(nm, "near_miss", [_hit(f"m{n}.md", 0.8)], [{"x": x}], relevant=(f"m{n}.md",))
        for n, x in enumerate((0.1, 0.15, 0.2, 0.25, 0.3, 0.35))
    ]
    cases = answers + misses
    folds = {id(c): n % 3 for n, c in enumerate(cases)}
    head = nm.Head("D head", ("x",), folds)
    params = head.choose(cases)
    assert all(head.demote(c, params) == set() for c in answers)
    assert all(head.demote(c, params) == {0} for c in misses)
    w, _, _ = head.fitted[params]
    assert w[1] > 0  # a higher feature, a likelier answer


def test_grouped_folds_keep_questions_about_one_note_together(nm: ModuleType) -> None:
    hit = [_hit("x.md", 0.8)]
    twins = [_case(nm, "near_answer", hit, relevant=("a.md",)) for _ in range(2)]
    bridge = _case(nm, "paraphrase", hit, relevant=("a.md", "b.md"))
    b_only = _case(nm, "paraphrase", hit, relevant=("b.md",))
    single = _case(nm, "paraphrase", hit, relevant=("c.md",))
    unanswerable = [_case(nm, "near_miss", hit) for _ in range(2)]
    cases = [*twins, bridge, b_only, single, *unanswerable]
    folds = nm.grouped_folds(cases, 3)
    # a.md and b.md are one group through the bridge: the largest, first, in fold 0.
    assert {folds[id(c)] for c in (*twins, bridge, b_only)} == {0}
    # The rest, one question each (no note named: a group of its own), go in key order ("#5",
    # "#6", "c.md") to the fold with fewest questions.
    assert [folds[id(c)] for c in (*unanswerable, single)] == [1, 2, 1]
    assert len(folds) == len(cases)
