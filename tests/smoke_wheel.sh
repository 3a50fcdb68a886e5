#!/usr/bin/env bash
# Smoke test of an installed wheel: index the example corpus, read the stats back as JSON.
set -euo pipefail
out=${1:?usage: smoke_wheel.sh WORKDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
recall index "$here/examples/notes" --db "$out/memory.db" --json > "$out/index.json"
recall stats --db "$out/memory.db" --json > "$out/stats.json"
recall quickstart --db "$out/quickstart.db" > "$out/quickstart.txt"
grep -q "certified" "$out/quickstart.txt"
# A new user's first run: index notes on the default model, then a strict search answers with
# the calibration the index run made itself (no labelled questions).
notes=$(python -c 'from recall import evaluation; print(evaluation.EVALSET_DIR / "notes")')
recall index "$notes" --db "$out/first.db" --json > "$out/first.json"
recall search "How many calls a second can we make to a courier's API before we're cut off?" \
  --db "$out/first.db" --json > "$out/answer.json"
# recall's own judge, shipped in the wheel, asked whether each ok hit answers (offline).
recall search "How many calls a second can we make to a courier's API before we're cut off?" \
  --db "$out/first.db" --entail --json > "$out/entailed.json"
python - "$out" <<'PY'
import json, sys
out = sys.argv[1]
report = json.load(open(f"{out}/index.json"))
stats = json.load(open(f"{out}/stats.json"))
assert report["ok"] and len(report["added"]) >= 9, report
assert stats["documents"] == len(report["added"]), stats
assert stats["chunks"] == stats["vectors"] > 0, stats
assert stats["edges_resolved"] == 1 and stats["edges_dangling"] == 1, stats
assert stats["edges_ambiguous"] == 1, stats
first = json.load(open(f"{out}/first.json"))
answer = json.load(open(f"{out}/answer.json"))
assert first["calibrated"]["certified"] and first["calibrated"]["in_use"], first["calibrated"]
assert answer["mode"] == "strict" and answer["trust_state"] == "trusted", answer
assert answer["calibration"]["source"] == "self" and not answer["abstained"], answer
ok = [h["provenance"]["file"] for h in answer["hits"] if h["verdict"] == "ok"]
assert "decisions/carrier-gateway.md" in ok, ok
entailed = json.load(open(f"{out}/entailed.json"))
judged = [h for h in entailed["hits"] if h["verdict"] in ("ok", "not_entailed")]
assert judged and all(h["entailment"] is not None for h in judged), entailed
assert entailed["timings_ms"]["judge"] > 0, entailed["timings_ms"]
print(f"smoke ok: {stats['documents']} documents, {stats['chunks']} chunks, {stats['embedder']}")
print(f"smoke ok: the shipped judge judged {len(judged)} hits in {entailed['timings_ms']['judge']:.0f} ms")
print(f"smoke ok: first run calibrated itself ({first['calibrated']['id']}), strict answer from {ok[0]}")
PY
