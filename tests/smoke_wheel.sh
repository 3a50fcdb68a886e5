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
print(f"smoke ok: {stats['documents']} documents, {stats['chunks']} chunks, {stats['embedder']}")
PY
