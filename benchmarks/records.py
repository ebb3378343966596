"""Record store: write 24,000 episodes (10 turns x 200 tokens each) and compute the task x
harness solve-rate matrix; the same work with plain JSONL + Python loops, in the same run.

Target (issue 2): write + query <= 5 s here, and >= 5x faster than the JSONL baseline.
Issue 16: reads verify every shard (SHA-256, footer, rows) the first time they read it; the
task x harness query on the 24k episodes must stay < 1 s with that on, measured twice in a
fresh store object: cold (no cached verdicts: every shard hashed) and warm (verdicts cached).
Run: .venv/bin/python benchmarks/records.py [--episodes N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from harnessrl.episode import Context, Episode, Turn
from harnessrl.records import RecordStore


def synthetic(n: int, turns: int, tokens: int, seed: int = 0) -> list[Episode]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 32_000, size=(n * turns, tokens), dtype=np.int32)
    lps = -rng.random((n * turns, tokens), dtype=np.float32)
    mask = (rng.random((n * turns, tokens)) < 0.5).astype(np.int8)
    success = rng.random(n) < 0.3
    eps, k = [], 0
    for i in range(n):
        ts = []
        for j in range(turns):
            ts.append(Turn(observation=f"observation {j}", action=f"action {j}", token_ids=ids[k], logprobs=lps[k], loss_mask=mask[k]))
            k += 1
        eps.append(Episode(context=Context(task_id=f"task-{i % 40}", harness_id=f"harness-{i % 6}", seed=i),
                           turns=ts, reward=float(success[i]), success=bool(success[i])))
    return eps


def ours(eps: list[Episode], root: Path, shard: int = 4000) -> tuple[float, dict]:
    t0 = time.perf_counter()
    store = RecordStore(root)
    for i in range(0, len(eps), shard):
        store.append(eps[i : i + shard])
    reopened = RecordStore(root)  # the query verifies every shard's SHA-256 first, as any reader does
    table = reopened.solve_rate()
    elapsed = time.perf_counter() - t0
    return elapsed, {(r["task_id"], r["harness_id"]): r["solve_rate"] for r in table.to_pylist()}


def query_times(root: Path) -> tuple[float, float]:
    """Seconds for open + task x harness query with read verification: cold (nothing cached), then warm."""
    (root / ".verified.json").unlink(missing_ok=True)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        RecordStore(root).solve_rate()
        times.append(time.perf_counter() - t0)
    return times[0], times[1]


def jsonl_baseline(eps: list[Episode], path: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    with open(path, "w") as f:
        for e in eps:
            row = {
                "episode_id": e.episode_id, "task_id": e.context.task_id, "harness_id": e.context.harness_id,
                "seed": e.context.seed, "reward": e.reward, "success": e.success,
                "turns": [{"observation": t.observation, "action": t.action, "token_ids": t.token_ids.tolist(),
                           "logprobs": t.logprobs.tolist(), "loss_mask": t.loss_mask.tolist()} for t in e.turns],
            }
            f.write(json.dumps(row) + "\n")
    counts: dict = defaultdict(lambda: [0, 0])
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            c = counts[(row["task_id"], row["harness_id"])]
            c[0] += 1
            c[1] += row["success"]
    elapsed = time.perf_counter() - t0
    return elapsed, {k: s / n for k, (n, s) in counts.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=24_000)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=200, help="tokens per turn")
    args = ap.parse_args()
    eps = synthetic(args.episodes, args.turns, args.tokens)
    tmp = Path(tempfile.mkdtemp(prefix="harnessrl-bench-"))
    try:
        t_ours, m_ours = ours(eps, tmp / "store")
        q_cold, q_warm = query_times(tmp / "store")
        t_base, m_base = jsonl_baseline(eps, tmp / "episodes.jsonl")
    finally:
        shutil.rmtree(tmp)
    assert m_ours.keys() == m_base.keys() and all(abs(m_ours[k] - m_base[k]) < 1e-12 for k in m_ours)
    print(f"{args.episodes} episodes x {args.turns} turns x {args.tokens} tokens/turn")
    print(f"harnessrl record store (write + verify + DuckDB query): {t_ours:.2f} s")
    print(f"JSONL + Python loops (write + read + aggregate):       {t_base:.2f} s")
    print(f"task x harness query, read verification on: {q_cold:.3f} s cold (every shard hashed), {q_warm:.3f} s warm")
    print(json.dumps({"benchmark": "records_write_query", "ours": round(t_ours, 3), "anchor": round(t_base, 3),
                      "unit": "s", "ratio": round(t_base / t_ours, 2), "query_cold": round(q_cold, 3),
                      "query_warm": round(q_warm, 3), "read_verification": True,
                      "target": "ours <= 5 s and ratio >= 5; query < 1 s"}))


if __name__ == "__main__":
    main()
