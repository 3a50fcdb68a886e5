"""Trusted search end to end on a real store (SPEC §4–§5): verdicts on the example corpus,
refusal codes, development mode, defensive calibration loading, hand-corrupted metadata, and
the dense leg against sqlite-vec's own KNN."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import recall
from recall import _core
from recall.cli import app
from recall.instants import format_instant, parse_stored

from .conftest import EXAMPLES, write_corpus

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
RATE_Q = "how many requests per second does the public API allow?"


def certified(mem: recall.Memory, threshold: float = 0.3, **extra: Any) -> None:
    mem.import_calibration(
        {
            "id": "test",
            "embedder": mem.embedder.name,
            "fingerprint": mem.embedder.fingerprint,
            "threshold": threshold,
            "scale": 0.05,
            "certified": True,
            **extra,
        }
    )


@pytest.fixture
def examples(backend: Callable[[str], str]) -> Iterator[recall.Memory]:
    """The example corpus indexed on 2026-03-01, on each backend."""
    with recall.open(backend("m.db")) as mem:
        mem.index(EXAMPLES, now=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
        yield mem


@pytest.fixture
def examples_file(tmp_path: Path) -> Iterator[recall.Memory]:
    """The example corpus in a store file (for what only the file has: sqlite-vec)."""
    with recall.open(tmp_path / "m.db") as mem:
        mem.index(EXAMPLES, now=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
        yield mem


def by_file(result: recall.Result) -> dict[str, recall.Hit]:
    return {h.provenance.file: h for h in result.hits}


def test_successor_served_first_and_stale_memo_marked(examples: recall.Memory) -> None:
    certified(examples)
    res = examples.search(RATE_Q, now=NOW)
    assert not res.abstained and res.trust_state == "trusted" and res.calibrated
    assert res.hits[0].provenance.file == "rate-limits-v2.md" and res.hits[0].verdict == "ok"
    stale = by_file(res)["rate-limits-v1.md"]
    assert stale.verdict == "superseded"
    assert stale.validity.superseded_by == "rate-limits-v2.md"
    assert stale.score > res.hits[0].score, "the stale memo is the nearer match"
    assert 0.0 < stale.confidence < 1.0 and res.generation == 1


def test_promotion_when_successor_is_below_threshold(examples: recall.Memory) -> None:
    # v1 (cosine ~0.38) clears 0.36, v2 (~0.33) does not: the declared edge transfers relevance.
    certified(examples, threshold=0.36)
    res = examples.search(RATE_Q, now=NOW)
    top = res.hits[0]
    assert (top.provenance.file, top.verdict, top.promoted) == ("rate-limits-v2.md", "ok", True)
    stale = by_file(res)["rate-limits-v1.md"]
    # SPEC §5.3: the successor takes the stale memo's place and carries its confidence.
    assert top.promoted_from == "rate-limits-v1.md"
    assert top.confidence == stale.confidence > 0.5 and top.score < 0.36


def test_the_successor_answers_for_the_version_its_predecessor_held(
    backend: Callable[[str], str], corpus: Path
) -> None:
    """SPEC §5.3, §7: a question naming `v1.0`, which only the superseded note holds, is served
    its declared successor, `promoted_from` naming the note it replaced; a note reached by no
    edge that lacks the version stays under the identifier rule."""
    write_corpus(
        corpus,
        {
            "wsgi-v1.md": "# Python web server gateway interface v1.0\n\nThe gateway interface "
            "v1.0 passes the request environ and a start_response callable to the app.\n",
            "wsgi-v2.md": "---\nsupersedes: wsgi-v1.md\n---\n# Python web server gateway "
            "interface for Python 3\n\nThe gateway interface passes the request environ and a "
            "start_response callable; headers are native strings.\n",
            "asgi.md": "# Asynchronous server gateway interface\n\nThe asynchronous gateway "
            "interface passes a scope, receive and send to the app.\n",
        },
    )
    with recall.open(backend("m.db"), embedder="hashing-512") as mem:
        mem.index(corpus, now=NOW, calibrate=False)
        certified(mem, threshold=0.3)
        res = mem.search("python web server gateway interface v1.0 start_response", now=NOW)
        top = res.hits[0]
        assert (top.provenance.file, top.verdict) == ("wsgi-v2.md", "ok")
        assert top.promoted_from == "wsgi-v1.md"
        assert by_file(res)["wsgi-v1.md"].verdict == "superseded"
        assert by_file(res).get("asgi.md") is None or by_file(res)["asgi.md"].verdict != "ok"


@pytest.mark.parametrize(
    ("query", "now", "file", "verdict", "reason"),
    [
        (
            "who is on call, weekly rotation escalation",
            NOW,
            "oncall-rotation-2025.md",
            "expired",
            "expired",
        ),
        (
            "production deploy freeze over new year",
            NOW,
            "deploy-freeze-2026.md",
            "not_yet_valid",
            "not valid yet",
        ),
        (
            "restart the gateway healthz",
            NOW,
            "teams/platform/runbook.md",
            "ambiguous_supersession",
            "",  # not the best match for this query: only its verdict is checked
        ),
    ],
)
def test_window_and_ambiguity_verdicts(
    examples: recall.Memory, query: str, now: dt.datetime, file: str, verdict: str, reason: str
) -> None:
    certified(examples, threshold=0.2)
    res = examples.search(query, now=now)
    assert by_file(res)[file].verdict == verdict
    if reason:
        assert res.hits[0].provenance.file == file
        assert res.abstained and reason in res.reason


def test_low_confidence_abstains_with_gap(examples: recall.Memory) -> None:
    certified(examples, threshold=0.6)
    res = examples.search("quantum chromodynamics lattice gauge", now=NOW)
    assert res.abstained and res.gap_warning
    assert all(
        h.verdict
        in {"low_confidence", "superseded", "ambiguous_supersession", "expired", "not_yet_valid"}
        for h in res.hits
    )
    assert "calibrated threshold" in res.reason or "best match" in res.reason


def test_known_as_of_hides_later_documents(backend: Callable[[str], str], corpus: Path) -> None:
    t0, t1 = (dt.datetime(2026, m, 1, tzinfo=dt.timezone.utc) for m in (1, 2))
    write_corpus(corpus, {"v1.md": "# Quota\n\nThe storage quota is 10 GB per tenant.\n"})
    with recall.open(backend("m.db")) as mem:
        mem.index(corpus, now=t0)
        write_corpus(
            corpus,
            {
                "v2.md": "---\nsupersedes: v1\n---\n# Quota\n\nThe storage "
                "quota is 50 GB per tenant.\n"
            },
        )
        mem.index(corpus, now=t1)
        certified(mem, threshold=0.1)
        now = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
        latest = by_file(mem.search("storage quota per tenant", now=now))
        assert latest["v1.md"].verdict == "superseded" and latest["v2.md"].verdict == "ok"
        then = by_file(
            mem.search("storage quota per tenant", now=now, known_as_of=dt.datetime(2026, 1, 15))
        )
        assert then["v1.md"].verdict == "ok" and then["v1.md"].validity.superseded_by is None
        assert then["v2.md"].verdict == "not_yet_known"


def test_hand_corrupted_metadata_fails_closed(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with recall.open(db) as mem:
        mem.index(EXAMPLES)
        certified(mem, threshold=0.2)
    con = sqlite3.connect(db)
    con.execute(
        "UPDATE documents SET valid_from_raw = 'last tuesday' WHERE path = 'rate-limits-v2.md'"
    )
    con.execute("UPDATE documents SET first_indexed_at = 'garbage' WHERE path = 'onboarding.md'")
    con.commit()
    con.close()
    with recall.open(db) as mem:
        res = mem.search(RATE_Q, now=NOW)
    assert by_file(res)["rate-limits-v2.md"].verdict == "invalid_metadata"
    assert by_file(res)["rate-limits-v1.md"].verdict == "superseded"


def test_strict_refusals(backend: Callable[[str], str]) -> None:
    with recall.open(backend("empty.db")) as mem, pytest.raises(recall.TrustRefusal) as err:
        mem.search("anything")
    assert err.value.code == "INDEX_NOT_READY" and "recall index" in str(err.value)
    with recall.open(backend("m.db")) as mem:
        mem.index(EXAMPLES)
        with pytest.raises(recall.TrustRefusal) as err:
            mem.search(RATE_Q)
        assert err.value.code == "CALIBRATION_MISSING" and "recall calibrate" in str(err.value)
        certified(mem, certified=False)
        with pytest.raises(recall.TrustRefusal) as err:
            mem.search(RATE_Q)
        assert err.value.code == "CALIBRATION_UNCERTIFIED"
    with recall.open(backend("m.db"), embedder="hashing-64") as mem:
        with pytest.raises(recall.TrustRefusal) as err:
            mem.search(RATE_Q, mode="development")
        assert err.value.code == "LINEAGE_MISMATCH" and "hashing-512" in str(err.value)


@pytest.mark.parametrize("said", [None, "yes", 1, "true"], ids=["null", "yes", "one", "true-text"])
def test_a_record_that_cannot_say_it_is_certified_is_refused_in_strict_mode(
    examples: recall.Memory, said: object
) -> None:
    """SPEC §7: `certified` is null for an imported record that cannot say; strict search
    refuses anything but `true`, on every backend, and the record reads back as null."""
    record = examples.import_calibration(
        {
            "id": "unsure",
            "embedder": examples.embedder.name,
            "fingerprint": examples.embedder.fingerprint,
            "threshold": 0.3,
            "scale": 0.05,
            "certified": said,
        }
    )
    assert record.certified is None
    with pytest.raises(recall.TrustRefusal) as err:
        examples.search(RATE_Q, now=NOW)
    assert err.value.code == "CALIBRATION_UNCERTIFIED"
    # Development mode answers with it, marked as not trusted.
    assert examples.search(RATE_Q, now=NOW, mode="development").trust_state == "degraded"


def test_development_mode_is_degraded_and_unverified(
    examples: recall.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_TRUST_MODE", "development")
    res = examples.search(RATE_Q, now=NOW)
    assert res.trust_state == "degraded" and not res.calibrated and res.abstained
    assert {h.verdict for h in res.hits} >= {"unverified", "superseded"}
    assert "recall calibrate" in res.reason
    with pytest.raises(recall.UsageError, match="unknown mode"):
        examples.search(RATE_Q, mode="lenient")


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        ({"threshold": float("nan")}, "non-finite"),
        ({"threshold": 1.5}, "outside"),
        ({"scale": 0.0}, "not positive"),
        ({"fingerprint": "someone-else"}, "another embedder"),
        ({"threshold": "0.3"}, "not a number"),
    ],
)
def test_bad_calibration_records_are_never_applied(
    examples: recall.Memory, patch: dict[str, Any], why: str
) -> None:
    record = {
        "id": "x",
        "embedder": "hashing-512",
        "fingerprint": examples.embedder.fingerprint,
        "threshold": 0.3,
        "scale": 0.05,
        "certified": True,
        **patch,
    }
    with pytest.raises(recall.UsageError, match=why):
        examples.import_calibration(record)
    # Written behind the API's back, the record is ignored, flagged and never crashes a search.
    examples._store.set_meta(f"calibration:{examples.embedder.fingerprint}", json.dumps(record))
    assert examples.calibration()[0] is None
    res = examples.search(RATE_Q, now=NOW, mode="development")
    assert not res.calibrated and res.calibration is None
    examples._store.set_meta(f"calibration:{examples.embedder.fingerprint}", "{not json")
    assert "not valid JSON" in examples.calibration()[1]


def test_staleness_and_timings(examples: recall.Memory) -> None:
    certified(examples)
    res = examples.search(RATE_Q, now=NOW)
    assert res.staleness.stale and res.staleness.age_seconds is not None
    fresh = examples.search(RATE_Q, now=dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc))
    assert not fresh.staleness.stale
    assert set(res.timings_ms) >= {"embed", "dense", "trust", "total"}
    data = res.to_dict()
    assert json.loads(json.dumps(data))["hits"][0]["provenance"]["file"] == "rate-limits-v2.md"


def test_a_hit_is_what_its_dataclasses_make_of_its_fields(examples: recall.Memory) -> None:
    certified(examples)
    hits = examples.search(RATE_Q, now=NOW).hits
    assert hits and any(h.retrieval is not None for h in hits)
    for hit in hits:
        parts = [hit, hit.provenance, hit.validity, *([hit.retrieval] if hit.retrieval else [])]
        for part in parts:
            # Every field held, and no other: equal to what the constructor makes of them.
            assert set(vars(part)) == {f.name for f in dataclasses.fields(part)}
            assert dataclasses.replace(part) == part and hash(dataclasses.replace(part)) == hash(
                part
            )
            with pytest.raises(dataclasses.FrozenInstanceError):
                part.__setattr__(dataclasses.fields(part)[0].name, None)


def _dense_and_vec0(mem: recall.Memory, con: Any, query: bytes) -> tuple[list[Any], list[Any]]:
    """The store's dense top-10 (chunk id, cosine) and sqlite-vec's KNN (chunk id, distance)."""
    raw = mem._store.search(
        query,
        text="",
        k=5,
        candidates=10,
        policy=_core.Policy(now_us=0, threshold=0.5, scale=0.05),
    )
    knn = con.execute(
        "SELECT chunk_id, distance FROM vec_chunks WHERE embedding MATCH ? AND k = 10 "
        "ORDER BY distance",
        (query,),
    ).fetchall()
    return raw["dense"], knn


def test_dense_leg_equals_sqlite_vec_knn(examples_file: recall.Memory) -> None:
    apsw = pytest.importorskip("apsw")
    sqlite_vec = pytest.importorskip("sqlite_vec")
    con = apsw.Connection(examples_file.path, flags=apsw.SQLITE_OPEN_READONLY)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    for query in (RATE_Q, "backups and restores", "gateway load balancers", "onboarding access"):
        vector = examples_file.embedder.embed([query])[0].astype("<f4")
        ours, knn = _dense_and_vec0(examples_file, con, vector.tobytes())
        assert [c for c, _ in ours] == [c for c, _ in knn] or sorted(
            round(s, 5) for _, s in ours
        ) == sorted(round(1 - d, 5) for _, d in knn)
        for (_, score), (_, distance) in zip(ours, knn):
            assert score == pytest.approx(1.0 - distance, abs=1e-5)


def test_cli_search_json_and_refusal_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    assert runner.invoke(app, ["index", str(EXAMPLES), "--db", db]).exit_code == 0
    refused = runner.invoke(app, ["search", RATE_Q, "--db", db, "--json"])
    assert refused.exit_code == 3
    assert json.loads(refused.stdout)["code"] == "CALIBRATION_MISSING"
    human = runner.invoke(app, ["search", RATE_Q, "--db", db])
    assert human.exit_code == 3 and "CALIBRATION_MISSING" in human.stderr
    dev = runner.invoke(
        app,
        ["search", RATE_Q, "--db", db, "--json", "--mode", "development", "--as-of", "2026-11-30"],
    )
    assert dev.exit_code == 0
    data = json.loads(dev.stdout)
    assert data["trust_state"] == "degraded" and data["hits"][0]["verdict"] in {
        "superseded",
        "unverified",
    }
    bad = runner.invoke(app, ["search", RATE_Q, "--db", db, "--as-of", "soon"])
    assert bad.exit_code == 2 and "--as-of" in bad.stderr


def test_explain_shows_claims_chain_window_and_threshold(examples: recall.Memory) -> None:
    certified(examples)
    e = examples.explain(RATE_Q, "rate-limits-v1.md", now=NOW)
    assert (e["verdict"], e["superseded_by"], e["key"]) == (
        "superseded",
        "rate-limits-v2.md",
        "rate-limits-v1",
    )
    assert e["chain"] == ["rate-limits-v1.md", "rate-limits-v2.md"]
    (claim,) = e["claims_in"]
    assert claim["declarer"] == "rate-limits-v2.md" and claim["resolution"] == "resolved"
    assert claim["reference"] == "rate-limits-v1.md" and claim["applies"]
    assert e["threshold"] == 0.3 and e["calibrated"] and e["best_chunk"]["score"] > 0.3
    amb = examples.explain("restart", "teams/search/runbook.md", now=NOW)
    assert amb["verdict"] == "ambiguous_supersession" and amb["ambiguous"]
    assert amb["claims_in"][0]["targets"] == [
        "teams/platform/runbook.md",
        "teams/search/runbook.md",
    ]
    dangling = examples.explain("onboarding", str(EXAMPLES / "onboarding.md"), now=NOW)
    assert [c["resolution"] for c in dangling["claims_out"]] == ["dangling"]
    before = examples.explain(
        RATE_Q, "rate-limits-v1.md", now=NOW, known_as_of=dt.datetime(2026, 2, 1)
    )
    assert before["claims_in"][0]["applies"] is False and before["superseded_by"] is None
    with pytest.raises(recall.UsageError, match="not an indexed document"):
        examples.explain(RATE_Q, "nope.md")


def test_cli_explain_json(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "m.db")
    assert runner.invoke(app, ["index", str(EXAMPLES), "--db", db]).exit_code == 0
    res = runner.invoke(app, ["explain", RATE_Q, "rate-limits-v1.md", "--db", db, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["verdict"] == "superseded"
    human = runner.invoke(app, ["explain", RATE_Q, "rate-limits-v1.md", "--db", db])
    assert human.exit_code == 0 and "chain: rate-limits-v1.md → rate-limits-v2.md" in human.stdout
    missing = runner.invoke(app, ["explain", RATE_Q, "nope.md", "--db", db])
    assert missing.exit_code == 2 and "not an indexed document" in missing.stderr


class _RandomEmbedder:
    """Seeded random unit vectors: a store large enough for the quantised first pass."""

    name = "test-random-96"
    dim = 96
    fingerprint = "test-random-96-v1"

    def __init__(self, seed: int) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.slow
def test_quantised_dense_leg_equals_sqlite_vec_knn(tmp_path: Path, corpus: Path) -> None:
    """Above the quantisation cut-over (4,096 rows) the int8 first pass plus exact rescore must
    still return sqlite-vec's exact top-10: same chunk ids, cosines within 1e-5."""
    import numpy as np

    apsw = pytest.importorskip("apsw")
    sqlite_vec = pytest.importorskip("sqlite_vec")
    write_corpus(corpus, {f"d{i // 500}/n{i}.md": f"note {i}\n" for i in range(6000)})
    db = tmp_path / "m.db"
    with recall.open(db, embedder=_RandomEmbedder(3)) as mem:
        mem.index(corpus)
        con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        con.enable_load_extension(True)
        con.load_extension(sqlite_vec.loadable_path())
        rng = np.random.default_rng(5)
        for _ in range(25):
            q = rng.standard_normal(96).astype("<f4")
            q /= np.linalg.norm(q)
            ours, knn = _dense_and_vec0(mem, con, q.tobytes())
            assert [c for c, _ in ours] == [c for c, _ in knn]
            for (_, score), (_, distance) in zip(ours, knn):
                assert score == pytest.approx(1.0 - distance, abs=1e-5)


def _hit(verdict: str, score: float = 0.35, **validity: Any) -> recall.Hit:
    """A hit as the core judges it at threshold 0.3 with no lexical weight: proven when its
    cosine reaches the threshold."""
    v = {"valid_from": None, "valid_until": None, "superseded_by": None, **validity}
    return recall.Hit(
        verdict=verdict,
        confidence=0.4,
        score=score,
        proven=score >= 0.3,
        title="t",
        text="x",
        provenance=recall.Provenance("notes", "a.md", 0, (1, 1), "", "", ""),
        validity=recall.Validity(**v),
    )


@pytest.mark.parametrize(
    ("hit", "needle"),
    [
        (_hit("superseded", superseded_by="b.md"), "a.md is superseded by b.md"),
        (_hit("expired", valid_until="2025-12-31"), "expired: valid until 2025-12-31"),
        (_hit("not_yet_valid", valid_from="2027-01-01"), "not valid yet: valid from 2027-01-01"),
        (_hit("invalid_metadata"), "malformed or empty validity metadata"),
        (_hit("ambiguous_supersession"), "disambiguate the corpus"),
        (_hit("not_yet_known"), "after the knowledge instant 2026-01-01"),
        (_hit("low_confidence", 0.25), "threshold 0.300 (best cosine 0.250): probable corpus gap"),
        (_hit("unverified"), "no calibration"),
        (_hit("not_entailed"), "near miss"),
        # A stale or expired note that is not even close proves nothing: the cause is the gap.
        (_hit("superseded", 0.2, superseded_by="b.md"), "(best cosine 0.200): probable corpus"),
        (_hit("expired", 0.1, valid_until="2025-12-31"), "probable corpus gap"),
    ],
)
def test_every_abstention_reason_is_specific(hit: recall.Hit, needle: str) -> None:
    from recall.results import abstention_reason

    assert needle in abstention_reason([hit], threshold=0.3, known_as_of="2026-01-01")


def test_abstention_names_the_best_proven_hit_not_the_first() -> None:
    from recall.results import abstention_reason

    hits = [
        _hit("superseded", 0.2, superseded_by="b.md"),
        _hit("expired", 0.5, valid_until="2025-12-31"),
    ]
    reason = abstention_reason(hits, threshold=0.3, known_as_of=None)
    assert reason == "the best match a.md expired: valid until 2025-12-31"
    assert abstention_reason([], threshold=0.3, known_as_of=None) == "no passage matched the query"


def test_a_question_about_a_retired_note_abstains_naming_it(
    backend: Callable[[str], str], tmp_path: Path
) -> None:
    # SPEC §6: the rejected proposal is the best match by far; its on-topic neighbour clears
    # the threshold but does not answer a question about the proposal.
    notes = write_corpus(
        tmp_path / "adr",
        {
            "0007-graphql-gateway.md": "---\nstatus: rejected\n---\n# GraphQL gateway\n\n"
            "We proposed a GraphQL gateway in front of the order and stock services, "
            "with schema stitching and persisted queries.\n",
            "0008-rest-api.md": "# REST API\n\nThe order and stock services keep their REST "
            "endpoints behind the existing load balancer.\n",
        },
    )
    with recall.open(backend("m.db")) as mem:
        mem.index(notes, now=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
        certified(mem, threshold=0.2)
        query = "GraphQL gateway with schema stitching and persisted queries for order services"
        result = mem.search(query, now=dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc))
        verdicts = {h.provenance.file: h.verdict for h in result.hits}
        assert verdicts == {
            "0007-graphql-gateway.md": "expired",
            "0008-rest-api.md": "not_entailed",
        }
        assert result.abstained and result.hits[0].provenance.file == "0007-graphql-gateway.md"
        assert "0007-graphql-gateway.md is rejected" in (result.reason or "")
        assert result.hits[1].displaced_by == "0007-graphql-gateway.md"
        # explain: the neighbour is ok on its own, not_entailed in the search, and says why.
        why = mem.explain(
            query, "0008-rest-api.md", now=dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)
        )
        assert why["verdict"] == "ok"
        assert why["in_search"] == {
            "k": 5,
            "verdict": "not_entailed",
            "displaced_by": "0007-graphql-gateway.md",
            "lacks": None,
        }
        # The neighbour answers its own question.
        own = mem.search(
            "REST endpoints behind the load balancer",
            now=dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc),
        )
        assert own.hits[0].provenance.file == "0008-rest-api.md" and own.hits[0].verdict == "ok"


def test_a_passage_without_the_asked_value_is_a_near_miss(
    backend: Callable[[str], str], tmp_path: Path
) -> None:
    # SPEC §6: on topic and above the threshold, but the question asks what onboarding costs
    # and the runbook names no amount of money; or it names 2024 and the note holds no 2024.
    notes = write_corpus(
        tmp_path / "notes",
        {
            "edi-onboarding.md": "# Onboarding an EDI trading partner\n\nTo onboard a new EDI "
            "trading partner, exchange AS2 identifiers and certificates with the partner, then "
            "test their 940 and 945 documents in the EDI console.\n",
            "support-hours.md": "# Support hours at weekends\n\nSince April 2026 the help desk "
            "answers customer support calls at weekends from 06:00 to 22:00.\n",
            "retries.md": "# Carrier retries\n\nWe do not retry on 4xx responses from a "
            "carrier; we retry 503 responses three times.\n",
        },
    )
    now = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
    with recall.open(backend("m.db")) as mem:
        mem.index(notes, now=dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc))
        certified(mem, threshold=0.2)
        query = "How much do we charge to onboard a new EDI trading partner?"
        result = mem.search(query, now=now)
        top = result.hits[0]
        assert top.provenance.file == "edi-onboarding.md" and top.verdict == "not_entailed"
        assert top.lacks == "an amount of money" and top.proven
        assert result.abstained
        assert result.reason == (
            "the best match edi-onboarding.md does not hold an amount of money, which the "
            "question asks for (near miss)"
        )
        why = mem.explain(query, "edi-onboarding.md", now=now)
        assert why["asks_for"] == ["an amount of money"]
        assert why["lacks"] == "an amount of money" and why["verdict"] == "not_entailed"
        assert why["in_search"] is not None and why["in_search"]["lacks"] == "an amount of money"
        # A number the question names and the note does not hold.
        weekend = mem.search("What were the customer support hours at weekends in 2024?", now=now)
        hit = by_file(weekend)["support-hours.md"]
        assert (hit.verdict, hit.lacks) == ("not_entailed", "2024")
        plain = mem.search("What are the customer support hours at weekends?", now=now)
        assert plain.hits[0].verdict == "ok" and plain.hits[0].lacks is None
        # A negation answers a yes/no question: nothing beyond the topic is asked for.
        no = mem.search("Do we retry on 4xx responses from a carrier?", now=now)
        assert no.hits[0].provenance.file == "retries.md"
        assert no.hits[0].verdict == "ok" and no.hits[0].lacks is None
        # The same cost question about a version of the runbook that names a price is answered.
        (notes / "edi-onboarding.md").write_text(
            "# Onboarding an EDI trading partner\n\nTo onboard a new EDI trading partner we "
            "charge €1,500, then exchange AS2 identifiers and certificates with the partner.\n"
        )
        mem.index(notes, now=dt.datetime(2026, 5, 2, tzinfo=dt.timezone.utc))
        certified(mem, threshold=0.2)
        answered = mem.search(query, now=now)
        assert answered.hits[0].verdict == "ok" and answered.hits[0].lacks is None


def test_the_asked_value_may_sit_in_another_section_of_the_note(
    backend: Callable[[str], str], tmp_path: Path
) -> None:
    # SPEC §6: the onboarding steps are the best passage; the price is in a later section of
    # the same note. The note holds what the question asks for, so its hit stays ok.
    steps = " ".join(
        f"Step {i}: to onboard a new EDI trading partner, the account manager in charge "
        "exchanges AS2 identifiers and certificates with the partner."
        for i in range(1, 9)
    )
    notes = write_corpus(
        tmp_path / "notes",
        {
            "edi-onboarding.md": "# Onboarding a new EDI trading partner\n\n"
            f"## Steps\n\n{steps}\n\n"
            "## Fees\n\n" + "Invoices follow the monthly billing run. " * 12 + "\n\nA new "
            "connection is billed €1,500.\n",
        },
    )
    now = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
    with recall.open(backend("m.db")) as mem:
        mem.index(notes, now=dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc))
        assert mem.stats().chunks >= 2
        certified(mem, threshold=0.1)
        query = "How much do we charge to onboard a new EDI trading partner?"
        result = mem.search(query, now=now)
        hit = result.hits[0]
        assert "€" not in hit.text, "the best passage is the steps, which name no price"
        assert hit.verdict == "ok" and hit.lacks is None and not result.abstained
        why = mem.explain(query, "edi-onboarding.md", now=now)
        assert why["asks_for"] == ["an amount of money"] and why["lacks"] is None


def test_a_stored_instant_reads_back_and_anything_else_is_none() -> None:
    instant = dt.datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=dt.timezone.utc)
    assert parse_stored(format_instant(instant)) == instant
    assert parse_stored("2026-03-04T05:06:07.000000Z") == instant.replace(microsecond=0)
    for bad in (
        None,
        "",
        "2026-03-04",
        "2026-03-04 05:06:07.890123Z",
        "2026-13-04T05:06:07.890123Z",
        "2026-03-04T05:06:07.89012xZ",
        "2026-03-04T05:06:07.890123+",
    ):
        assert parse_stored(bad) is None, bad
