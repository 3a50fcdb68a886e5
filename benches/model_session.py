"""What the default model's onnxruntime session costs a cold process, per graph optimisation level.

For each level (`all`; `basic`; `none`), a fresh interpreter creates an `InferenceSession` on
the built-in minilm-l6 file with recall's thread settings and runs one short query, then the
same query 20 times more. `saved` is what recall does: the graph optimised once and saved in
the cache folder (`recall.graphs`, saved before the timed runs into a scratch cache folder),
checked against its seal and opened at the `all` level; its session time includes that check.
Printed per level, medians over `--runs` processes: session creation, the first query, the
median of the next ones, and how far the query's output is from the `all` level's (largest
absolute difference).

Usage: python benches/model_session.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from machine import cpu_model

CHILD = """
import json, sys, time
import numpy as np
import onnxruntime as ort
from recall import graphs, models
level = sys.argv[1]
spec = models.BUILTINS["minilm-l6"]
o = ort.SessionOptions()
o.intra_op_num_threads = models.cores()
o.inter_op_num_threads = 1
o.log_severity_level = 3
o.graph_optimization_level = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "saved": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}[level]
model = models.builtin_model_file(spec)
t = time.perf_counter()
if level == "saved":
    model = graphs.saved_graph(ort, model)
    assert model is not None, "the graph could not be saved"
s = ort.InferenceSession(str(model), sess_options=o, providers=["CPUExecutionProvider"])
session = time.perf_counter() - t
ids = np.array([[101, *range(2000, 2012), 102]], dtype=np.int64)
feed = {
    i.name: ids if i.name == "input_ids" else np.ones_like(ids) if "mask" in i.name
    else np.zeros_like(ids)
    for i in s.get_inputs()
}
t = time.perf_counter()
out = s.run(None, feed)[0]
first = time.perf_counter() - t
rest = []
for _ in range(20):
    t = time.perf_counter()
    s.run(None, feed)
    rest.append(time.perf_counter() - t)
print(json.dumps({"session": session, "first": first, "next": sorted(rest)[10],
                  "output": out.ravel()[:2048].tolist()}))
"""

LEVELS = ("all", "saved", "basic", "none")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    got: dict[str, list[dict[str, object]]] = {level: [] for level in LEVELS}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "RECALL_CACHE_DIR": cache}
        for run in range(args.runs + 1):
            for level in LEVELS:  # in turns, so drift falls on every level alike
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, level],
                    capture_output=True,
                    text=True,
                    check=True,
                    env=env,
                )
                if run > 0:  # the first round saves the graph and digests, untimed
                    got[level].append(json.loads(proc.stdout))
    reference = got["all"][0]["output"]
    assert isinstance(reference, list)
    print(f"machine: {cpu_model()}; {args.runs} fresh processes per level, in turns")
    for level in LEVELS:
        runs = got[level]

        def ms(key: str, runs: list[dict[str, object]] = runs) -> float:
            return statistics.median(float(r[key]) for r in runs) * 1e3  # type: ignore[arg-type]

        output = runs[0]["output"]
        assert isinstance(output, list)
        diff = max(abs(a - b) for a, b in zip(output, reference, strict=True))
        print(
            f"  {level:<6} session {ms('session'):6.0f} ms, first query {ms('first'):5.1f} ms, "
            f"next {ms('next'):5.1f} ms; output vs all: max |diff| {diff:.2e}"
        )


if __name__ == "__main__":
    main()
