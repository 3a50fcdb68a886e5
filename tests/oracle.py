"""Reference model of the trust layer (SPEC §2.3, §2.4, §5), written for clarity, not speed.

`judge_oracle` returns what `recall._core.judge` returns, taking the policy's fields one by one;
the tests compare the two on random corpora.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

Doc = tuple[str, str, "str | None", "str | None", "str | None", "int | None"]
Hit = tuple[int, str, float, "int | None", bool, bool, float]

DAY_US = 86_400_000_000
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_EPOCH = dt.date(1970, 1, 1)


def parse_day_start_us(raw: str) -> int | None:
    """00:00:00 UTC of a strict, zero-padded, real `YYYY-MM-DD` date in µs, else None. §2.2"""
    if _DATE.fullmatch(raw) is None:
        return None
    try:
        day = dt.date(int(raw[0:4]), int(raw[5:7]), int(raw[8:10]))
    except ValueError:
        return None
    return (day - _EPOCH).days * DAY_US


def judge_oracle(
    docs: list[Doc],
    edges: list[tuple[int, str]],
    candidates: list[tuple[int, float]],
    fetchable: dict[int, float],
    now_us: int,
    known_as_of_us: int | None,
    threshold: float,
    scale: float,
    unverified: bool,
) -> list[Hit]:
    k = known_as_of_us

    # §2.4: an edge is dated by its declarer's first indexing; it applies at K unless it is later.
    def applies(declarer: int) -> bool:
        date = docs[declarer][5]
        return k is None or date is None or date <= k

    # §2.3: resolve each applying edge on the exact key.
    ambiguous: set[int] = set()
    claims: dict[int, list[int]] = {}  # target -> claimants
    for declarer, key in edges:
        if not applies(declarer):
            continue
        matches = [i for i, doc in enumerate(docs) if doc[0] == key]
        if len(matches) >= 2:  # ambiguous: every match flagged, the edge never guessed
            ambiguous.update(matches)
        elif len(matches) == 1 and matches[0] != declarer:  # 0: dangling; itself: ignored
            claims.setdefault(matches[0], []).append(declarer)

    # §2.4 fan-in: the latest-dated claim wins (undated = earliest), ties by smallest path.
    def successor(target: int) -> int | None:
        claimants = claims.get(target, [])
        if not claimants:
            return None

        def rank(c: int) -> tuple[float, str]:
            date = docs[c][5]
            return (math.inf if date is None else -date, docs[c][1])

        return min(claimants, key=rank)

    # §2.4 chains: walk to the terminal successor; a cycle stops on the first revisit.
    def terminal(start: int) -> int | None:
        visited, cur = {start}, start
        while True:
            nxt = successor(cur)
            if nxt is None or nxt in visited:
                break
            visited.add(nxt)
            cur = nxt
        return None if cur == start else cur

    # §5.2: verdicts, first match wins.
    def verdict(i: int, score: float) -> str:
        _, _, raw_from, raw_until, error, first = docs[i]
        start = None if raw_from is None else parse_day_start_us(raw_from)
        end = None if raw_until is None else parse_day_start_us(raw_until)
        if (
            error is not None
            or (raw_from is not None and start is None)
            or (raw_until is not None and end is None)
            or (start is not None and end is not None and start > end)
        ):
            return "invalid_metadata"
        if k is not None and first is not None and first > k:
            return "not_yet_known"
        if i in ambiguous:
            return "ambiguous_supersession"
        if terminal(i) is not None:
            return "superseded"
        if end is not None and now_us > end + DAY_US - 1:  # valid_until is inclusive, §2.2
            return "expired"
        if start is not None and now_us < start:
            return "not_yet_valid"
        if score < threshold:
            return "unverified" if unverified else "low_confidence"
        return "unverified" if unverified else "ok"

    # §5.1: confidence is 0.5 exactly at the threshold.
    def confidence(score: float) -> float:
        z = max(-60.0, min(60.0, (score - threshold) / scale))
        return 1.0 / (1.0 + math.exp(-z))

    def make(i: int, score: float, fetched: bool) -> list[Any]:
        # doc, verdict, confidence, successor, promoted, fetched, score, promoted_from
        return [i, verdict(i, score), confidence(score), terminal(i), False, fetched, score, None]

    # Hits: one per document, its first (best) candidate, in retrieval order.
    hits: list[list[Any]] = []
    for i, score in candidates:
        if all(h[0] != i for h in hits):
            hits.append(make(i, score, False))

    # §5.3: a superseded hit that cleared the threshold promotes (or fetches) its successor; an
    # ok successor takes the place and the confidence of the best-ranked stale hit naming it.
    n = 0
    while n < len(hits):
        h = hits[n]
        if h[1] != "superseded" or h[6] < threshold or h[3] is None:
            n += 1
            continue
        t = h[3]
        at = [j for j, g in enumerate(hits) if g[0] == t]
        if at:
            j = at[0]
        elif t in fetchable:
            hits.append(make(t, fetchable[t], True))
            j = len(hits) - 1
        else:
            n += 1
            continue
        succ = hits[j]
        if succ[1] == "low_confidence":
            succ[1], succ[4] = "ok", True
        if succ[1] == "ok" and (j > n or succ[4]) and succ[7] is None:
            succ[7], succ[2] = h[0], max(succ[2], h[2])
        if j > n and succ[1] == "ok":
            hits.insert(n, hits.pop(j))
            n += 1
        elif j > n and succ[5]:
            hits.insert(n + 1, hits.pop(j))
        n += 1

    # §5.3: ok first, each group in retrieval order.
    ordered = [h for h in hits if h[1] == "ok"] + [h for h in hits if h[1] != "ok"]
    return [tuple(h) for h in ordered]
