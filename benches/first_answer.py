"""Time to the first trusted answer on notes nobody labelled (issue target: <= 60 s on 2 cores).

A fresh corpus of N notes (default 1,000: decision records, runbooks and reviews of a fictional
platform team, in 30 families of notes written alike, one per service), then what a new user
types, each timed as a subprocess from its start to its exit:

    recall index NOTES --db STORE --json      (indexes, then calibrates itself from the notes)
    recall search "QUESTION" --db STORE --json  (strict mode: the default)

Prints the wall time of each command and their sum (the time to the first trusted answer), the
calibration the index run made (threshold, certified, seconds), and each question's first hit,
verdict and confidence. No labelled question is written. The corpus is generated with a fixed
seed, so every run asks the same questions of the same notes.

Then an agent's memory from its first note: `recall serve --db NEW --corpus EMPTY` (the MCP
server over stdio, driven by the SDK's own client, strict mode), five notes written through its
`remember` tool, and strict `search`es for two things they hold, one in their domain they do
not hold and one far from it: each answer and whether it came from the right note, or the
abstention or refusal, and what the last `remember` reported of the store's calibration.

Usage: python benches/first_answer.py [--notes 1000] [--embedder minilm-l6] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# benches/ is on sys.path when this runs as a script.
from machine import cpu_model

SERVICES = [
    "ledger", "billing", "checkout", "catalog", "search", "identity", "payments", "invoicing",
    "shipping", "inventory", "pricing", "reviews", "notifications", "messaging", "reporting",
    "analytics", "ingest", "exports", "scheduler", "webhooks", "gateway", "profiles", "media",
    "thumbnails", "geocoder", "fraud", "ratings", "coupons", "loyalty", "wishlist", "returns",
    "tax", "currency", "audit", "archive", "mailer", "sms", "push", "feeds", "recommendations",
    "sessions", "carts", "orders", "refunds", "subscriptions", "documents", "uploads", "previews",
    "translations", "glossary", "forums", "comments", "moderation", "badges", "leaderboard",
    "quotas", "licensing", "partners", "onboarding", "surveys", "helpdesk", "chat", "calendar",
    "booking", "routing", "telemetry", "metrics", "tracing", "secrets-broker", "dns",
]  # fmt: skip

# (family, title, body sentences); {s} the service, {a}..{c} numbers, {v} a vendor or tool.
FAMILIES = [
    ("retention", "Log retention for {s}",
     "The {s} service keeps its request logs for {a} days in hot storage and {b} months in the "
     "archive bucket. Access logs older than that are deleted by the nightly lifecycle rule. "
     "Personal data in logs is masked at write time by the logging sidecar."),
    ("oncall", "On-call rota for {s}",
     "The {s} team runs a weekly on-call rota of {a} engineers, handing over on Mondays at 10:00. "
     "Pages go to the primary first and escalate to the secondary after {b} minutes. The rota "
     "lives in {v} and swaps are agreed in the team channel."),
    ("database", "Database choice for {s}",
     "We chose {v} as the primary database of {s} because its workload is mostly point reads "
     "and small transactions. The cluster has {a} nodes with synchronous replication to one "
     "standby. Backups run every {b} hours and are restored monthly in a drill."),
    ("ratelimit", "Rate limits of the {s} API",
     "Clients of the {s} API may send {a} requests per second per key, with bursts up to {b}. "
     "Above that the API answers 429 with a Retry-After header. Internal callers get a separate "
     "quota negotiated with the platform team."),
    ("deploy", "Deployment windows for {s}",
     "{s} is deployed between 09:00 and 16:00 on weekdays only, never on Fridays after 14:00. "
     "A deploy rolls out to {a} percent of pods first and waits {b} minutes for error budgets "
     "before going wide. Rollbacks use the previous image tag."),
    ("cache", "Caching in front of {s}",
     "Responses of {s} are cached in {v} for {a} seconds, keyed by tenant and request path. "
     "Writes invalidate the keys of the touched tenant. The cache holds at most {b} gigabytes "
     "and evicts the least recently used entries."),
    ("queue", "Message queue for {s} events",
     "{s} publishes its domain events to {v}. Consumers read with at-least-once delivery and must "
     "be idempotent. Events are kept for {a} days; a dead-letter topic catches messages that "
     "failed {b} times."),
    ("slo", "Service level objectives of {s}",
     "The {s} service promises {a}.9 percent availability per month and a p99 latency under {b} "
     "milliseconds for reads. Burning half of the monthly error budget in a week freezes "
     "feature work until the cause is fixed."),
    ("secrets", "Secrets handling in {s}",
     "{s} reads its credentials from {v} at start-up and every {a} minutes after that. No secret "
     "is stored in the repository or in environment files. Keys are rotated every {b} days by "
     "the security pipeline."),
    ("tls", "TLS certificates of {s}",
     "Certificates for the {s} endpoints are issued by {v} and renewed {a} days before expiry. "
     "Only TLS 1.2 and 1.3 are accepted. An alert fires when any certificate has fewer than {b} "
     "days left."),
    ("capacity", "Capacity review {y} for {s}",
     "The {s} review of {y} found peak traffic of {a} thousand requests per minute, up {b} "
     "percent on the year. CPU headroom at peak is thin, so the node pool grows by two nodes "
     "before the holiday season."),
    ("backup", "Backup and restore for {s}",
     "{s} data is backed up every {a} hours to a second region with {v}. A restore of the full "
     "dataset takes about {b} minutes and is rehearsed each quarter. Point-in-time recovery "
     "covers the last seven days."),
    ("flags", "Feature flags in {s}",
     "New behaviour in {s} ships behind flags served by {v}. A flag older than {a} weeks is "
     "reviewed and removed. At most {b} flags may be active per service at once."),
    ("incident", "Postmortem of the {s} outage",
     "On a Tuesday in {y} the {s} service was down for {a} minutes after a configuration push "
     "removed its database credentials. Detection took {b} minutes. The fix added a schema "
     "check for configuration changes and a canary stage."),
    ("vendor", "Vendor evaluation for {s} monitoring",
     "For monitoring {s} we compared three products and picked {v} for its price per host and "
     "its query language. The contract covers {a} hosts for {b} months and can be cancelled "
     "with one month's notice."),
    ("runbook", "Runbook: {s} is slow",
     "When {s} latency alerts fire, first check the connection pool saturation dashboard. If "
     "more than {a} percent of connections are busy, scale the deployment by {b} replicas and "
     "look for slow queries in the last hour."),
    ("access", "Access control for {s}",
     "Only members of the {s} group may change its production configuration; reads are open to "
     "all engineers. Break-glass access lasts {a} hours and is reviewed within {b} days."),
    ("costs", "Cloud costs of {s}",
     "The {s} service costs about {a} thousand euros a month, {b} percent of it compute. "
     "Reserved instances cover the baseline and spot nodes take the batch jobs."),
    ("testing", "Testing strategy for {s}",
     "{s} runs unit tests on every push and contract tests against its consumers before each "
     "release. Load tests replay {a} minutes of production traffic at {b} times the peak."),
    ("migration", "Migrating {s} to Kubernetes",
     "{s} moves from virtual machines to the shared Kubernetes cluster in {a} phases. Each phase "
     "shifts {b} percent of traffic and can be reverted within five minutes."),
]  # fmt: skip
VENDORS = ["PostgreSQL", "Kafka", "Redis", "Vault", "Grafana", "Datadog", "PagerDuty", "NATS"]
YEARS = ["2023", "2024", "2025"]

# (family of the note that answers, the question in other words than the note); no family: a
# question no note answers, which must abstain.
QUESTIONS = [
    ("retention", "How many days are {s} request logs kept before they go to the archive?"),
    ("ratelimit", "How many calls a second may one key make to {s}?"),
    ("backup", "How often is {s} data copied to the other region?"),
    (None, "How many weeks of paid leave does a new parent get?"),
    (None, "Which law firm drafted our terms of service?"),
]


def _note(family: tuple[str, str, str], service: str, rng: random.Random) -> tuple[str, str]:
    name, title, body = family
    slots = {
        "s": service,
        "a": rng.randint(2, 90),
        "b": rng.randint(2, 60),
        "c": rng.randint(2, 9),
        "v": rng.choice(VENDORS),
        "y": rng.choice(YEARS),
    }
    heading = title.format(**slots)
    text = body.format(**slots)
    text = text[0].upper() + text[1:]
    return f"{name}/{name}-{service}.md", f"# {heading[0].upper() + heading[1:]}\n\n{text}\n"


def corpus(folder: Path, notes: int, seed: int = 7) -> list[str]:
    """Write `notes` notes (families × services, in a seeded order); returns their paths."""
    rng = random.Random(seed)
    pairs = [(f, s) for f in FAMILIES for s in SERVICES]
    rng.shuffle(pairs)
    if notes > len(pairs):
        raise SystemExit(f"first_answer: at most {len(pairs)} notes")
    written = []
    for family, service in pairs[:notes]:
        rel, text = _note(family, service, rng)
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
        written.append(rel)
    return written


#: (title, text) of the notes an agent writes into an empty memory, one `remember` each.
REMEMBERED = [
    ("User prefers metric units", "The user wants distances in kilometres and weights in kg."),
    ("Dashboard API latency", "The dashboard API answers in 250 ms at the 95th percentile."),
    ("Deploy freeze", "No production deploys between 15 December and 5 January."),
    ("Staging database", "Staging runs PostgreSQL 16 on a single node with daily backups."),
    ("On-call handover", "On-call hands over on Mondays at 10:00 in the team channel."),
]
#: (question, the file that answers it or None: the memory does not hold the answer), asked in
#: strict mode once the five are written: two it holds, one in its own domain and one far off.
REMEMBERED_QUESTIONS = [
    ("When are production deploys not allowed over the holidays?", "deploy-freeze.md"),
    ("What database version does the staging environment run?", "staging-database.md"),
    ("Which message broker carries the billing service's events?", None),
    ("How many weeks of paid leave does a new parent get?", None),
]


async def _remembered(db: Path, notes: Path, embedder: str) -> list[str]:
    """Five `remember` calls into an empty memory, then strict `search`es, over MCP."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "recall.cli", "serve", "--db", str(db), "--corpus", str(notes)],
        env={**env, "RECALL_EMBEDDER": embedder},
        cwd=str(db.parent),
    )
    lines = []
    started = time.perf_counter()
    with open(db.parent / "serve.log", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            reply: Any = None
            for title, text in REMEMBERED:
                reply = await session.call_tool("remember", {"title": title, "text": text})
                if reply.is_error:
                    raise SystemExit(f"remember failed: {reply.content[0].text}")
            wrote = time.perf_counter() - started
            lines.append(f"  5 notes remembered in {wrote:.1f} s (server start included)")
            last = reply.structured_content or {} if reply is not None else {}
            trust = (last.get("index") or {}).get("trust") or last.get("trust")
            if trust:
                lines.append(f"  trust after the fifth: {trust.get('line')}")
            for question, answers in REMEMBERED_QUESTIONS:
                res = await session.call_tool("search", {"query": question, "k": 5})
                if res.is_error:
                    lines.append(f"  {question!r}: refused: {res.content[0].text}")
                    continue
                out = res.structured_content or {}
                ok = [h for h in out.get("hits", []) if h["verdict"] == "ok"]
                where = ok[0]["provenance"]["file"] if ok else None
                right = "the right note" if where == answers else f"expected {answers}"
                lines.append(
                    f"  {question!r}: "
                    + (
                        f"ok from {where} ({right}), confidence {ok[0]['confidence']:.2f}, "
                        f"mode {out['mode']}, calibration {out['calibration']['source']}"
                        if ok
                        else f"abstained ({out.get('reason')})"
                        + ("" if answers is None else f", expected {answers}")
                    )
                )
    return lines


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--embedder", default="minilm-l6")
    parser.add_argument("--keep", type=Path, help="write the corpus and store here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="recall-first-"))
    notes_dir, db = work / "notes", work / "first.db"
    shutil.rmtree(notes_dir, ignore_errors=True)
    for stale in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        stale.unlink(missing_ok=True)
    notes_dir.mkdir(parents=True)
    written = corpus(notes_dir, args.notes)
    env = {**os.environ, "RECALL_EMBEDDER": args.embedder}
    env.pop("RECALL_TRUST_MODE", None)
    # The `recall` command installed beside this Python, as a user runs it.
    recall_cli = [str(Path(sys.executable).with_name("recall"))]

    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"corpus: {len(written)} notes in {len(FAMILIES)} families; embedder {args.embedder}")
    index_s, ran = _timed([*recall_cli, "index", str(notes_dir), "--db", str(db), "--json"], env)
    if ran.returncode != 0:
        raise SystemExit(f"recall index failed ({ran.returncode}): {ran.stderr or ran.stdout}")
    report = json.loads(ran.stdout)
    fitted = report.get("calibrated") or {}
    print(
        f"recall index: {index_s:.1f} s wall ({report['chunks']} chunks, embedded "
        f"{report['embedded']}); calibrated itself in {fitted.get('seconds', 0):.1f} s: "
        f"threshold {fitted.get('threshold')}, certified {fitted.get('certified')} "
        f"({fitted.get('certified_reason')})"
    )
    present = {rel.split("/")[1][: -len(".md")] for rel in written}
    first: float | None = None
    for family, template in QUESTIONS:
        service = next((s for s in SERVICES if f"{family}-{s}" in present), "")
        question = template.format(s=service)
        search_s, ran = _timed([*recall_cli, "search", question, "--db", str(db), "--json"], env)
        if ran.returncode not in (0, 3):
            raise SystemExit(f"recall search failed ({ran.returncode}): {ran.stderr}")
        out = json.loads(ran.stdout)
        if ran.returncode == 3:
            print(f"  {question!r}: refused {out['code']}: {out['message']}")
            continue
        ok = [h for h in out["hits"] if h["verdict"] == "ok"]
        if family is None:
            outcome = (
                f"abstained ({out['reason']})"
                if out["abstained"]
                else f"ANSWERED from {ok[0]['provenance']['file']} (no note answers it)"
            )
            print(f"  {question!r}: {search_s:.2f} s, {outcome}")
            continue
        top = ok[0] if ok else None
        right = top is not None and top["provenance"]["file"].endswith(f"{family}-{service}.md")
        where = top["provenance"]["file"] if top else "-"
        print(
            f"  {question!r}: {search_s:.2f} s, "
            + (
                f"answer ok from {where} ({'the right note' if right else 'NOT the note asked'}"
                f"), confidence {top['confidence']:.2f}"
                if top
                else f"abstained ({out['reason']})"
            )
            + f", mode {out['mode']}, trust {out['trust_state']}"
        )
        if first is None and right:
            first = index_s + search_s
    if first is None:
        print("first trusted answer: none (no question was answered ok from its note)")
    else:
        print(f"first trusted answer: {first:.1f} s after the first command (target <= 60 s)")
    memory = work / "memory"
    shutil.rmtree(memory, ignore_errors=True)
    (memory / "notes").mkdir(parents=True)
    print("an agent's memory from empty, through MCP remember:")
    import anyio

    for line in anyio.run(_remembered, memory / "memory.db", memory / "notes", args.embedder):
        print(line)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
